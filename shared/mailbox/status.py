"""Read a conversation's queue state from Redis (no writes): what `memq status`, the
producer's ``wait_idle`` and the audit see."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memq.shared.mailbox.keys import ConversationKeys
from memq.shared.mailbox.segment import Segment

if TYPE_CHECKING:
    from memq.shared.connections import MailboxClient
    from memq.shared.mailbox.scripts import Scripts
    from memq.shared.settings import Settings


@dataclass(frozen=True)
class QuarantineEntry:
    field: str  # "m:<message id>" or "s:<episode id>"
    kind: str  # "message" | "segment"
    id: str
    error: str
    failures: int
    at_us: int
    item: str  # the raw inbox item, or the segment as stored ("<fence> <json>")

    @property
    def seqs(self) -> list[int]:
        """Sequence numbers the item holds (a quarantined segment's messages)."""
        if self.kind != "segment":
            return []
        return [m["seq"] for m in json.loads(self.item.partition(" ")[2])["messages"]]


@dataclass(frozen=True)
class ConversationStatus:
    inbox: int  # accepted, not yet segmented
    buffer: int  # in the open event
    segments: int  # closed, waiting for episode creation
    drain_queued: bool
    flush_requested: bool
    accepted: int  # messages accepted since the state was created
    numbered: int  # sequence numbers assigned so far
    quarantined: list[QuarantineEntry] = field(default_factory=list)
    failing: dict[str, Any] = field(default_factory=dict)  # the inbox front's current failure streak

    @property
    def idle(self) -> bool:
        """Nothing waits: every accepted message is in an episode or in the quarantine."""
        return not (self.inbox or self.buffer or self.segments or self.drain_queued or self.flush_requested)


def parse_quarantine(raw: dict[str, str]) -> list[QuarantineEntry]:
    out = []
    for name, value in sorted(raw.items()):
        entry = json.loads(value)
        out.append(
            QuarantineEntry(
                field=name,
                kind=entry["kind"],
                id=entry["id"],
                error=entry.get("error", ""),
                failures=int(entry.get("failures", 0)),
                at_us=int(entry.get("at_us", 0)),
                item=entry["item"],
            )
        )
    return out


def conversation_status(client: MailboxClient, keys: ConversationKeys) -> ConversationStatus:
    pipe = client.pipeline(transaction=False)
    pipe.llen(keys.inbox)
    pipe.llen(keys.buffer)
    pipe.hlen(keys.segments)
    pipe.hmget(keys.state, ["drain", "flush", "accepted", "seq", "fail_key", "fail_count", "fail_error"])
    pipe.hgetall(keys.quarantine)
    inbox, buffer, segments, fields, quarantine = pipe.execute()
    drain, flush, accepted, seq, fail_key, fail_count, fail_error = fields
    failing = {"message_id": fail_key, "failures": int(fail_count or 0), "error": fail_error} if fail_key else {}
    return ConversationStatus(
        inbox=inbox,
        buffer=buffer,
        segments=segments,
        drain_queued=drain is not None,
        flush_requested=flush is not None,
        accepted=int(accepted or 0),
        numbered=int(seq or 0),
        quarantined=parse_quarantine(quarantine),
        failing=failing,
    )


@dataclass(frozen=True)
class MailboxOverview:
    """The whole mailbox at a glance, summed over the shards (`memq status`)."""

    active: int  # conversations with messages in the last segment timeout or an open event
    drains_queued: int  # conversations with a drain queued or running
    drains_stalled: int  # ... of which no heartbeat for MEMQ_STALLED_AFTER_SECONDS
    segments_waiting: int  # closed segments waiting for their episodes
    segments_stalled: int
    quarantined: int  # conversations with quarantined items


def mailbox_overview(client: MailboxClient, scripts: Scripts, settings: Settings) -> MailboxOverview:
    from memq.shared.mailbox.keys import all_shards

    totals = [0] * 6
    age = settings.stalled_after_seconds
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        pipe = client.pipeline(transaction=False)
        for key in (shard.active, shard.drains, shard.pending, shard.quarantined):
            pipe.zcard(key)
        active, drains, pending, quarantined = pipe.execute()
        stalled_drains = len(scripts.due(keys=[shard.drains], args=[age, 100_000, 0]))
        stalled_segments = len(scripts.due(keys=[shard.pending], args=[age, 100_000, 0]))
        for i, n in enumerate((active, drains, stalled_drains, pending, stalled_segments, quarantined)):
            totals[i] += n
    return MailboxOverview(*totals)


def queued_messages(client: MailboxClient, keys: ConversationKeys) -> int:
    """Messages of the conversation that Redis holds and PostgreSQL does not yet: queued,
    in the open event, in closed segments waiting for their episodes, quarantined."""
    pipe = client.pipeline(transaction=False)
    pipe.llen(keys.inbox)
    pipe.llen(keys.buffer)
    pipe.hvals(keys.segments)
    pipe.hgetall(keys.quarantine)
    inbox, buffer, segments, quarantine = pipe.execute()
    held = sum(len(Segment.decode(raw).messages) for raw in segments)
    held += sum(len(entry.seqs) if entry.kind == "segment" else 1 for entry in parse_quarantine(quarantine))
    return int(inbox) + int(buffer) + held
