"""Wire format of queued messages.

The producer serialises a message as JSON (``id``, ``role``, ``content``, optionally
``sent_us`` and ``metadata``). ``enqueue.lua`` prefixes it with the effective
timestamp and the arrival time it reads from Redis' own clock:

    inbox item   "<effective_us> <arrival_us> <json>"

A drainer numbers messages as it moves them from the inbox into the open event
(sequence numbers are assigned under the conversation lock, never by the producer):

    buffer item  "<seq> <effective_us> <arrival_us> <json>"

and a closed segment waits for its episode as ``"<fence> <json>"``
(``memq.shared.mailbox.segment.Segment``).

A message without ``sent_us`` was sent "now": its timestamp is its arrival time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

_MICRO = 1_000_000


def to_micros(ts: datetime) -> int:
    return round(ts.timestamp() * _MICRO)


def from_micros(us: int) -> datetime:
    return datetime.fromtimestamp(us / _MICRO, tz=UTC)


@dataclass(frozen=True)
class QueuedMessage:
    """A message as it sits in a conversation's inbox (``seq`` None) or open event."""

    seq: int | None
    id: str
    role: str
    content: str
    timestamp: datetime  # effective: never older than the previous message's
    sent_at: datetime  # as the producer gave it (or its arrival time)
    received_at: datetime  # arrival, Redis' clock
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: str = ""  # the exact Redis item, for fenced commits

    @property
    def clamped(self) -> bool:
        return self.sent_at != self.timestamp

    def numbered(self, seq: int, not_before_us: int | None = None) -> QueuedMessage:
        """This inbox message as buffer item number ``seq``, its effective timestamp
        raised to ``not_before_us`` when it is older (order is by arrival)."""
        effective = to_micros(self.timestamp)
        if not_before_us is not None and effective < not_before_us:
            effective = not_before_us
        _, arrival, body = self.raw.split(" ", 2)
        return replace(self, seq=seq, timestamp=from_micros(effective), raw=f"{seq} {effective} {arrival} {body}")

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
    message_id: str, role: str, content: str, sent_us: int | None, metadata: dict[str, Any] | None
) -> str:
    """The JSON object ``{"id", "role", "content"[, "sent_us"][, "metadata"]}``, byte for byte
    what ``_ENCODER`` makes of it, its strings written by json's C string encoder directly
    (the producer's hot path: half the time of encoding the dict)."""
    text = f'{{"id":{_string(message_id)},"role":{_string(role)},"content":{_string(content)}'
    if sent_us is not None:
        text += f',"sent_us":{int(sent_us)}'
    if metadata:
        text += ',"metadata":' + _ENCODER.encode(metadata)
    return text + "}"


def encode_line(message_id: str, role: str, content: str, sent_us: int | None, metadata: dict[str, Any] | None) -> str:
    """A message's line of ``enqueue.lua``'s batch: ``<id> <sent µs or empty> <payload>``
    (``encode_payload``). The common message (a timestamp, no metadata) is written as one
    string: building the payload first and then the line cost 30 µs of a batch of 100."""
    if sent_us is None or metadata:
        return f"{message_id} {'' if sent_us is None else int(sent_us)} " + encode_payload(
            message_id, role, content, sent_us, metadata
        )
    sent = int(sent_us)
    return (
        f'{message_id} {sent} {{"id":{_string(message_id)},"role":{_string(role)},'
        f'"content":{_string(content)},"sent_us":{sent}}}'
    )


# json.dumps with any non-default option builds an encoder per call; one, made once
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_string = json.encoder.encode_basestring  # what _ENCODER writes a str with (ensure_ascii=False), in C


def _decode(raw: str, seq: int | None, effective_us: str, arrival_us: str, body: str) -> QueuedMessage:
    payload = json.loads(body)
    arrival = int(arrival_us)
    return QueuedMessage(
        seq=seq,
        id=payload["id"],
        role=payload["role"],
        content=payload["content"],
        timestamp=from_micros(int(effective_us)),
        sent_at=from_micros(payload.get("sent_us", arrival)),
        received_at=from_micros(arrival),
        metadata=payload.get("metadata") or {},
        raw=raw,
    )


def arrival_micros(item: str | bytes) -> int:
    """When Redis accepted an inbox item (its clock, µs), without decoding the message."""
    raw = item.decode() if isinstance(item, bytes) else item
    return int(raw.split(" ", 2)[1])


def decode_inbox_item(item: str | bytes) -> QueuedMessage:
    raw = item.decode() if isinstance(item, bytes) else item
    effective, arrival, body = raw.split(" ", 2)
    return _decode(raw, None, effective, arrival, body)


def decode_buffer_item(item: str | bytes) -> QueuedMessage:
    raw = item.decode() if isinstance(item, bytes) else item
    seq, effective, arrival, body = raw.split(" ", 3)
    return _decode(raw, int(seq), effective, arrival, body)
