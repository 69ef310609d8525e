"""What a conversation holds in Redis that is not yet in an episode, read in one
transaction: closed segments waiting for their episode (oldest first), the open event,
and the inbox (accepted, not yet segmented). Quarantined items are not among them.

Used by the session context and the manifest (the segment marked Active); read-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memq.shared.mailbox.codec import QueuedMessage, decode_buffer_item, decode_inbox_item
from memq.shared.mailbox.keys import ConversationKeys
from memq.shared.mailbox.segment import Segment
from memq.shared.messages import speaker_of

if TYPE_CHECKING:
    from memq.shared.connections import MailboxClient


@dataclass(frozen=True)
class Unstored:
    role: str
    speaker: str | None
    content: str
    timestamp: datetime
    seq: int | None  # None while in the inbox


def _from_record(record: dict[str, Any]) -> Unstored:
    return Unstored(
        record["role"],
        speaker_of(record),
        record["content"],
        datetime.fromisoformat(record["timestamp"]),
        record.get("seq"),
    )


@dataclass(frozen=True)
class UnstoredRead:
    messages: list[Unstored]  # the newest ``limit``, in order
    total: int  # how many there are in all
    first: Unstored | None  # the oldest


def read_unstored(client: MailboxClient, keys: ConversationKeys, limit: int) -> UnstoredRead:
    """Messages not yet in an episode: closed segments (oldest first), the open event,
    the inbox; the inbox read only from its newest ``limit`` (and its first item)."""
    pipe = client.pipeline(transaction=True)
    pipe.hvals(keys.segments)
    pipe.lrange(keys.buffer, 0, -1)
    pipe.llen(keys.inbox)
    pipe.lrange(keys.inbox, -limit, -1)
    pipe.lindex(keys.inbox, 0)
    segments, buffer, inbox_total, inbox, inbox_first = pipe.execute()
    closed = sorted((Segment.decode(raw) for raw in segments), key=lambda s: s.messages[0]["seq"] if s.messages else 0)
    out = [_from_record(m) for s in closed for m in s.messages]
    out += [_from_queued(decode_buffer_item(item)) for item in buffer]
    stored = len(out)
    out += [_from_queued(decode_inbox_item(item)) for item in inbox]
    first = out[0] if stored else (_from_queued(decode_inbox_item(inbox_first)) if inbox_first else None)
    return UnstoredRead(out[-limit:] if limit else [], stored + inbox_total, first)


def _from_queued(m: QueuedMessage) -> Unstored:
    return Unstored(m.role, speaker_of({"role": m.role, "metadata": m.metadata}), m.content, m.timestamp, m.seq)
