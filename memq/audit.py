"""``memq audit``: prove memq's invariants from what PostgreSQL and Redis hold.

Gathering (``gather``) reads each conversation's facts; checking (``check``) is a pure
function of those facts, so every rule is unit-tested without servers.

The invariants, per conversation:

- ``duplicate``: no message id is stored twice, no two episodes share a message, and
  every episode's message count matches the messages stored under it.
- ``order``: stored messages' timestamps never go back as sequence numbers go up, and
  episodes cover disjoint, increasing sequence ranges.
- ``lost``: every sequence number handed out is accounted for exactly: stored in an
  episode, recorded as a gap (with its reason), still in the open event, in a closed
  segment waiting for its episode, or in a quarantined segment.
- ``accepted``: every message Redis counted as accepted is numbered, still in the inbox
  or quarantined.
- ``stuck``: work that nothing will pick up: inbox, open event or flush with neither a
  queued drain nor an inactivity collapse ahead; a drain or segment without a
  heartbeat for three stalled periods; a waiting segment missing from the pending index.
- ``quarantine``: every quarantined item is visible in its shard's quarantine index.
- ``flushed`` (with ``--flushed``): inbox, open event and waiting segments are empty.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from memq.shared.mailbox.codec import decode_buffer_item
from memq.shared.mailbox.keys import all_shards, conversation_keys, split_member
from memq.shared.mailbox.segment import Segment
from memq.shared.mailbox.status import QuarantineEntry, parse_quarantine


@dataclass(frozen=True)
class Finding:
    conversation: str
    check: str
    detail: str


@dataclass
class Facts:
    tenant: str
    conversation_id: str
    # PostgreSQL
    stored: list[tuple[int, str, str, datetime]] = field(default_factory=list)  # (seq, message id, episode id, ts)
    episodes: list[tuple[str, int, int, int]] = field(default_factory=list)  # (id, first_seq, last_seq, message_count)
    gaps: list[tuple[int, int, str]] = field(default_factory=list)  # (first, last, reason)
    pg_last_seq: int = 0
    # Redis
    state_exists: bool = False
    accepted: int = 0
    numbered: int = 0
    inbox: int = 0
    buffer_seqs: list[int] = field(default_factory=list)
    segments: dict[str, list[int]] = field(default_factory=dict)
    quarantine: list[QuarantineEntry] = field(default_factory=list)
    drain_flag: bool = False
    flush: bool = False
    drain_age: float | None = None  # seconds since the drains index entry's score
    active: bool = False
    pending_ages: dict[str, float] = field(default_factory=dict)
    in_quarantine_index: bool = False

    @property
    def name(self) -> str:
        return f"{self.tenant}/{self.conversation_id}"


@dataclass(frozen=True)
class Summary:
    conversation: str
    stored: int
    episodes: int
    gaps: int
    open: int
    waiting: int
    inbox: int
    quarantined: int
    accepted: int


def summarize(f: Facts) -> Summary:
    return Summary(
        f.name,
        len(f.stored),
        len(f.episodes),
        sum(b - a + 1 for a, b, _ in f.gaps),
        len(f.buffer_seqs),
        sum(len(s) for s in f.segments.values()),
        f.inbox,
        len(f.quarantine),
        f.accepted,
    )


def _show(numbers: list[int], limit: int = 10) -> str:
    head = ", ".join(map(str, numbers[:limit]))
    return head + (f", ... ({len(numbers)} in all)" if len(numbers) > limit else "")


def check(f: Facts, *, stalled_after: float, expect_flushed: bool = False) -> list[Finding]:
    out: list[Finding] = []

    def add(name: str, detail: str) -> None:
        out.append(Finding(f.name, name, detail))

    # duplicate
    ids = Counter(mid for _, mid, _, _ in f.stored)
    twice = sorted(mid for mid, n in ids.items() if n > 1)
    if twice:
        add("duplicate", f"message ids stored more than once: {', '.join(twice[:10])}")
    per_episode = Counter(eid for _, _, eid, _ in f.stored)
    for eid, _first, _last, count in f.episodes:
        if per_episode.get(eid, 0) != count:
            add("duplicate", f"episode {eid} says {count} messages, {per_episode.get(eid, 0)} are stored under it")

    # order
    previous = None
    for seq, _, _, ts in f.stored:
        if previous is not None and ts < previous[1]:
            add("order", f"seq {seq} ({ts.isoformat()}) is older than seq {previous[0]} ({previous[1].isoformat()})")
            break
        previous = (seq, ts)
    by_seq = {seq: eid for seq, _, eid, _ in f.stored}
    ranges = sorted((first, last, eid) for eid, first, last, _ in f.episodes)
    for (a1, b1, e1), (a2, b2, e2) in itertools.pairwise(ranges):
        if a2 <= b1:
            add("order", f"episodes {e1} ({a1}-{b1}) and {e2} ({a2}-{b2}) overlap")
    for eid, first, last, _ in f.episodes:
        outside = [s for s, e in by_seq.items() if e == eid and not first <= s <= last]
        if outside:
            add("order", f"episode {eid} ({first}-{last}) holds seqs outside its range: {_show(sorted(outside))}")

    # lost: every number handed out is accounted for
    stored = set(by_seq)
    gap_numbers = {n for a, b, _ in f.gaps for n in range(a, b + 1)}
    waiting = {s for seqs in f.segments.values() for s in seqs}
    quarantined = {s for q in f.quarantine for s in q.seqs}
    handed_out = max([f.numbered, f.pg_last_seq, *stored, *gap_numbers, *waiting, *f.buffer_seqs, 0])
    accounted = stored | gap_numbers | waiting | quarantined | set(f.buffer_seqs)
    missing = sorted(set(range(1, handed_out + 1)) - accounted)
    if missing:
        add(
            "lost",
            f"sequence numbers neither stored, recorded as gaps, open, waiting nor quarantined: {_show(missing)}",
        )
    both = sorted(stored & gap_numbers)
    if both:
        add("duplicate", f"sequence numbers both stored and recorded as gaps: {_show(both)}")

    # accepted
    if f.state_exists:
        rewind_gaps = sum(b - a + 1 for a, b, reason in f.gaps if reason == "rewind")
        quarantined_messages = sum(1 for q in f.quarantine if q.kind == "message")
        reachable = f.numbered - rewind_gaps + f.inbox + quarantined_messages
        if f.accepted > reachable:
            add(
                "accepted",
                f"{f.accepted} accepted but only {reachable} numbered, in the inbox or quarantined "
                f"(numbered {f.numbered}, rewind gaps {rewind_gaps}, inbox {f.inbox}, "
                f"quarantined {quarantined_messages})",
            )

    # stuck
    has_work = f.inbox > 0 or f.flush or bool(f.buffer_seqs)
    queued = f.drain_flag and f.drain_age is not None
    if has_work and not queued and not f.active:
        add("stuck", "has an inbox, open event or flush but no queued drain and no pending inactivity collapse")
    if f.drain_flag and f.drain_age is None:
        add("stuck", "marked 'drain queued' but missing from its shard's drains index (the sweeper cannot see it)")
    if f.drain_age is not None and f.drain_age > 3 * stalled_after:
        add(
            "stuck",
            f"drain queued {f.drain_age:.0f} s ago with no heartbeat (3 x stalled_after = {3 * stalled_after:.0f} s)",
        )
    for eid in f.segments:
        age = f.pending_ages.get(eid)
        if age is None:
            add("stuck", f"segment {eid} waits for its episode but is missing from the pending index")
        elif age > 3 * stalled_after:
            add("stuck", f"segment {eid} has waited {age:.0f} s for its episode")

    # quarantine
    if f.quarantine and not f.in_quarantine_index:
        add("quarantine", f"{len(f.quarantine)} quarantined item(s) missing from the shard's quarantine index")

    if expect_flushed and (f.inbox or f.buffer_seqs or f.segments or f.flush):
        add(
            "flushed",
            f"not empty after a flush: inbox {f.inbox}, open event {len(f.buffer_seqs)}, "
            f"waiting segments {len(f.segments)}" + (", flush pending" if f.flush else ""),
        )
    return out


# -- gathering ---------------------------------------------------------------------


def conversations_in_scope(client, conn, settings, tenant: str | None) -> list[tuple[str, str]]:
    """Every conversation PostgreSQL or Redis knows of (of one tenant, or all)."""
    found: set[tuple[str, str]] = set()
    sql = "SELECT tenant_id, conversation_id FROM conversation"
    params: tuple = ()
    if tenant:
        sql += " WHERE tenant_id = %s"
        params = (tenant,)
    found.update((t, c) for t, c in conn.execute(sql, params).fetchall())
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        pipe = client.pipeline(transaction=False)
        for key in (shard.active, shard.drains, shard.quarantined):
            pipe.zrange(key, 0, -1)
        pipe.zrange(shard.pending, 0, -1)
        active, drains, quarantined, pending = pipe.execute()
        members = set(active) | set(drains) | set(quarantined) | {p.rpartition("/")[0] for p in pending}
        found.update(split_member(m) for m in members)
    for key in client.scan_iter(match=f"{settings.key_prefix}:{{s*}}:*:state", count=1000):
        member = key.split("}:", 1)[1].rsplit(":", 1)[0]
        found.add(split_member(member))
    return sorted(c for c in found if tenant is None or c[0] == tenant)


def gather(client, conn, settings, tenant: str, conversation_id: str) -> Facts:
    f = Facts(tenant, conversation_id)
    args = (tenant, conversation_id)
    f.stored = [
        (r[0], r[1], str(r[2]), r[3])
        for r in conn.execute(
            "SELECT seq, message_id, episode_id, ts FROM episode_message WHERE tenant_id = %s AND conversation_id = %s "
            "ORDER BY seq",
            args,
        )
    ]
    f.episodes = [
        (str(r[0]), r[1], r[2], r[3])
        for r in conn.execute(
            "SELECT id, first_seq, last_seq, message_count FROM episodic_memory "
            "WHERE tenant_id = %s AND conversation_id = %s",
            args,
        )
    ]
    f.gaps = [
        (r[0], r[1], r[2])
        for r in conn.execute(
            "SELECT first_seq, last_seq, reason FROM seq_gap WHERE tenant_id = %s AND conversation_id = %s "
            "ORDER BY first_seq",
            args,
        )
    ]
    row = conn.execute(
        "SELECT last_seq FROM conversation WHERE tenant_id = %s AND conversation_id = %s", args
    ).fetchone()
    f.pg_last_seq = row[0] if row else 0

    keys = conversation_keys(settings, tenant, conversation_id)
    shard = keys.shard
    pipe = client.pipeline(transaction=False)
    pipe.exists(keys.state)
    pipe.hmget(keys.state, ["accepted", "seq", "drain", "flush"])
    pipe.llen(keys.inbox)
    pipe.lrange(keys.buffer, 0, -1)
    pipe.hgetall(keys.segments)
    pipe.hgetall(keys.quarantine)
    pipe.zscore(shard.drains, keys.member)
    pipe.zscore(shard.active, keys.member)
    pipe.zscore(shard.quarantined, keys.member)
    pipe.execute_command("EVAL", "return redis.call('TIME')", 1, keys.state)  # the clock of the conversation's node
    (
        exists,
        (accepted, seq, drain, flush),
        inbox,
        buffer,
        segments,
        quarantine,
        drain_at,
        active,
        quarantined_at,
        now,
    ) = pipe.execute()
    now_s = int(now[0]) + int(now[1]) / 1e6
    f.state_exists = bool(exists)
    f.accepted, f.numbered = int(accepted or 0), int(seq or 0)
    f.drain_flag, f.flush = drain is not None, flush is not None
    f.inbox = inbox
    f.buffer_seqs = cast(list[int], [decode_buffer_item(item).seq for item in buffer])  # numbered when buffered
    f.segments = {eid: [m["seq"] for m in Segment.decode(raw).messages] for eid, raw in segments.items()}
    f.quarantine = parse_quarantine(quarantine)
    f.drain_age = None if drain_at is None else now_s - float(drain_at)
    f.active = active is not None
    f.in_quarantine_index = quarantined_at is not None
    if f.segments:
        scores = [client.zscore(shard.pending, f"{keys.member}/{eid}") for eid in f.segments]
        f.pending_ages = {eid: now_s - float(s) for eid, s in zip(f.segments, scores) if s is not None}
    return f


@dataclass
class AuditReport:
    summaries: list[Summary]
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return not self.findings


def audit(client, conn, settings, conversations: list[tuple[str, str]], *, expect_flushed: bool = False) -> AuditReport:
    summaries, findings = [], []
    for tenant, conversation_id in conversations:
        facts = gather(client, conn, settings, tenant, conversation_id)
        summaries.append(summarize(facts))
        findings += check(facts, stalled_after=settings.stalled_after_seconds, expect_flushed=expect_flushed)
    return AuditReport(summaries, findings)
