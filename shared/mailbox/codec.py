"""Wire format of a queued message.

The producer serialises a message's payload as JSON; the enqueue script prefixes it
with the sequence number and effective timestamp it assigns atomically:
``"<seq> <effective_us> <json>"``. The same string moves unchanged from the inbox to
the buffer, so the commit script can check the inbox front by plain equality.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

_MICRO = 1_000_000


def to_micros(ts: datetime) -> int:
    return round(ts.timestamp() * _MICRO)


def from_micros(us: int) -> datetime:
    return datetime.fromtimestamp(us / _MICRO, tz=UTC)


@dataclass(frozen=True)
class QueuedMessage:
    """A message as it sits in a conversation's inbox or buffer."""

    seq: int
    id: str
    role: str
    content: str
    timestamp: datetime  # effective: never older than the previous message's
    sent_at: datetime  # as the producer gave it
    received_at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: str = ""  # the exact Redis item, for fenced commits

    @property
    def clamped(self) -> bool:
        return self.sent_at != self.timestamp

    def to_record(self) -> dict[str, Any]:
        """The message as stored on an episode (JSON-ready)."""
        record: dict[str, Any] = {
            "id": self.id,
            "seq": self.seq,
            "role": self.role,
            "content": self.content,
            "timestamp": self.timestamp.isoformat(),
        }
        if self.clamped:
            record["sent_at"] = self.sent_at.isoformat()
        if self.metadata:
            record["metadata"] = self.metadata
        return record


def encode_payload(
    message_id: str,
    role: str,
    content: str,
    sent_us: int,
    received_us: int,
    metadata: dict[str, Any] | None,
) -> str:
    payload: dict[str, Any] = {"id": message_id, "role": role, "content": content, "sent_us": sent_us, "recv_us": received_us}
    if metadata:
        payload["metadata"] = metadata
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def decode_item(item: str | bytes) -> QueuedMessage:
    raw = item.decode() if isinstance(item, bytes) else item
    seq, effective_us, body = raw.split(" ", 2)
    payload = json.loads(body)
    return QueuedMessage(
        seq=int(seq),
        id=payload["id"],
        role=payload["role"],
        content=payload["content"],
        timestamp=from_micros(int(effective_us)),
        sent_at=from_micros(payload["sent_us"]),
        received_at=from_micros(payload["recv_us"]),
        metadata=payload.get("metadata") or {},
        raw=raw,
    )
