"""Taking over a producer's drain tasks in a test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def publish_drains_with(producer: Any, publish: Callable[[str, str], Any]) -> None:
    """Every drain task of ``producer`` goes through ``publish(tenant, conversation_id)``
    (a test that suppresses, counts or breaks publication): its enqueue script no longer
    queues them itself, as where the broker is another Redis than the mailbox."""
    producer._script_queues_drains = False
    producer._publish_drain = publish
