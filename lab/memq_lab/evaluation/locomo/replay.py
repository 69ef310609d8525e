"""Push LoCoMo conversations through the real producer to real Celery workers and wait
until every turn is in an episode. Speaker A is sent as ``user``, speaker B as
``assistant``, each with its name in ``metadata.name`` (memq shows names, not roles);
message ids are ``<sample>-<dia id>`` so a repeated replay adds nothing."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from memq_lab.evaluation.locomo.data import LocomoConversation, Turn


@dataclass
class ReplayTimes:
    enqueue_s: float
    process_s: float  # segmentation and episode creation, until every conversation is idle


def as_message(t: Turn, role: str = "user") -> dict:
    """One turn as the producer takes it (the speaker's name in ``metadata.name``)."""
    return {
        "role": role,
        "content": t.text,
        "timestamp": t.at.isoformat(),
        "metadata": {"name": t.speaker, "dia_id": t.dia_id},
    }


def messages_of(conv: LocomoConversation) -> list[dict]:
    a, _ = conv.speakers
    return [
        {
            "conversation_id": conv.sample_id,
            **as_message(t, "user" if t.speaker == a else "assistant"),
            "message_id": f"{conv.sample_id}-{t.dia_id}",
        }
        for t in conv.turns
    ]


def replay(
    producer,
    tenant: str,
    conversations: list[LocomoConversation],
    on_progress: Callable[[str, int, int], None],
    timeout: float = 1800.0,
) -> ReplayTimes:
    started = time.monotonic()
    for conv in conversations:
        batch = messages_of(conv)
        for i in range(0, len(batch), 100):
            producer.add_messages(batch[i : i + 100], tenant=tenant)
        producer.flush(conv.sample_id, tenant=tenant)
    enqueued = time.monotonic()
    for conv in conversations:
        total = len(conv.turns)

        def show(status, conv=conv, total=total):
            on_progress(conv.sample_id, max(0, total - status.inbox - status.buffer - status.segments), total)

        producer.wait_idle(conv.sample_id, tenant=tenant, timeout=timeout, on_progress=show)
        on_progress(conv.sample_id, total, total)
    return ReplayTimes(enqueued - started, time.monotonic() - enqueued)
