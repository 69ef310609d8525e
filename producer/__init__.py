"""memq's thin producer: push conversation messages onto Redis for the workers.

Usage::

    from memq.producer import add_message
    add_message("conv-42", "user", "Can you book the 9:40 train?")
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

# One path per module: imported through the memq/producer link, the package's modules are
# looked up in its real folder, so tracebacks, coverage and debuggers name producer/...;
# in an installed wheel the two are one folder.
__path__ = [os.path.realpath(p) for p in __path__]  # before the imports below, which it finds

from memq.producer.client import AddResult, Producer, default_producer
from memq.shared.mailbox.status import ConversationStatus

__all__ = ["AddResult", "ConversationStatus", "Producer", "add_message", "add_messages", "flush"]


def add_message(
    conversation_id: str,
    role: str,
    content: str,
    timestamp: datetime | str | None = None,
    message_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> AddResult:
    """Queue one message. ``timestamp`` must be timezone-aware (default: now, UTC).
    A ``message_id`` sent again is accepted once (the repeat reports ``duplicate``)."""
    return default_producer().add_message(conversation_id, role, content, timestamp, message_id, metadata)


def add_messages(messages: Iterable[Mapping[str, Any]], *, conversation_id: str | None = None) -> list[AddResult]:
    """Queue a batch in one Redis round trip; validated as a whole before anything is written."""
    return default_producer().add_messages(messages, conversation_id=conversation_id)


def flush(conversation_id: str) -> bool:
    """Close the conversation's open event into an episode once its inbox is drained."""
    return default_producer().flush(conversation_id)
