"""Redis adapter for one conversation's queue state, as a worker sees it.

A drainer takes the conversation's lock (a token with a lease), reads a ``Snapshot``
(open event, counters, event state, Redis' run id), numbers inbox messages as it
moves them into the open event, and commits its steps with ``commit_steps.lua``, a
batch of them at a time, atomically (all or none), fenced by the lock token, the state
version and the expected inbox front. A crash before a commit leaves the batch's messages
at the inbox front and the state as it was; after a commit, its steps are complete.
Either way any worker can resume, and a commit built on a state that changed underneath
(another drainer, a Redis that restarted with an older state) is refused instead of
applied.

State hash fields:

    accepted      messages accepted (enqueue.lua)       last_ts_us   newest accepted timestamp
    seq           last sequence number assigned          last_eff_us  effective timestamp of seq
    version       commit counter (the fence)             event        the detector's EventState JSON
    rid           Redis run id when last synced          fence        PostgreSQL's fence when last synced
    drain         a drain is queued or running           flush        "<n>:<reason>" a flush is asked for
    fail_*        the inbox front's failure streak       sfail:<id>   a segment's failure count
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
import redis
from redis.commands.core import Script

from memq.shared.mailbox.codec import QueuedMessage, decode_buffer_item
from memq.shared.mailbox.keys import conversation_keys
from memq.shared.mailbox.replies import (
    Adopted,
    FailureRecorded,
    FenceRefusal,
    decode_adopt_segment,
    decode_flag,
    decode_record_failure,
    decode_snapshot,
    decode_sync,
    decode_version,
    fence_refusal,
)
from memq.shared.mailbox.scripts import Scripts
from memq.shared.mailbox.segment import Segment, segment_id_for
from memq.shared.settings import Settings
from memq.shared.vector_codec import decode_vector, encode_vector
from memq.shared.webhooks import events as webhook_events
from memq.worker.segmentation.engine import ClosedSegment
from memq.worker.segmentation.event_state import EventState

# A field of the vectors hash that no message id can be (ids hold no spaces): the sha1 of
# the last inbox item taken by another conversation's drain (front.lua) or embedded by
# this one's (``remember_vectors``).
FRONT_MARK = " front "


def front_mark(raw: str) -> str:
    """The ``FRONT_MARK`` value naming an inbox item: its sha1, as ``redis.sha1hex`` gives it."""
    return hashlib.sha1(raw.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CommitStep:
    """A segmentation step as ``commit_steps.lua`` takes it: its ``STEP_FIELDS`` arguments,
    and the event state it leaves (written only for the last step of a batch)."""

    segment_id: str | None  # of the segment this step closes
    args: list[Any]
    state: EventState


class LockLost(Exception):
    """Another worker took over this conversation (our lease ran out)."""


class StateChanged(Exception):
    """The conversation's state is not the one this drainer read (it was changed by
    someone else, or Redis restarted from an older copy): stop, a fresh drain resumes."""


class InboxMoved(StateChanged):
    """The inbox front is not the message this drainer processed."""


# A segment's id is also the id of the episode made of all its messages (the name the bench uses).
episode_id_for = segment_id_for


def stored_segment(tenant: str, conversation_id: str, closed: ClosedSegment, fence: int) -> Segment:
    """The ``Segment`` a drain stores for a segment the engine closed, cut under ``fence``."""
    first, last = closed.messages[0].seq, closed.messages[-1].seq
    assert first is not None and last is not None  # a closed segment's messages are numbered
    return Segment(
        id=segment_id_for(tenant, conversation_id, first, last),
        tenant=tenant,
        conversation_id=conversation_id,
        messages=[m.to_record() for m in closed.messages],
        overlap=list(closed.overlap),
        reason=closed.reason,
        surprise=closed.surprise,
        detector=closed.detector,
        source=closed.source,
        token_count=closed.token_count,
        fence=fence,
    )


@dataclass
class Snapshot:
    """What a drainer reads when it starts (``snapshot.lua``)."""

    run_id: str
    buffer: list[QueuedMessage]
    rid: str | None
    fence: int
    seq: int
    version: int
    last_eff_us: int | None
    event: EventState
    flush: str | None = None

    @property
    def synced(self) -> bool:
        """Written since the Redis server last started (so nothing of it can have been lost)."""
        return bool(self.rid) and self.rid == self.run_id


@dataclass
class ConversationStore:
    client: Any  # redis.Redis or RedisCluster
    scripts: Scripts
    settings: Settings
    tenant: str
    conversation_id: str
    token: str = ""
    version: int = 0

    def __post_init__(self) -> None:
        self.keys = conversation_keys(self.settings, self.tenant, self.conversation_id)
        self.shard = self.keys.shard

    @property
    def lease_ms(self) -> int:
        return int(self.settings.lock_lease_seconds * 1000)

    @property
    def state_ttl_ms(self) -> int:
        return int(self.settings.idle_state_ttl_days * 86_400_000)

    # -- lock ---------------------------------------------------------------------
    def acquire(self) -> bool:
        token = secrets.token_hex(16)
        if self.client.set(self.keys.lock, token, nx=True, px=self.lease_ms):
            self.token = token
            return True
        return False

    def release(self, lookahead: int = 0) -> bool:
        """Release the lock (if still ours); True when the caller must publish another drain.
        ``lookahead`` inbox messages may wait for later ones without counting as work."""
        requeue = self.scripts.release(
            keys=[
                self.keys.lock,
                self.keys.inbox,
                self.keys.buffer,
                self.keys.state,
                self.keys.segments,
                self.keys.quarantine,
                self.shard.active,
                self.shard.drains,
            ],
            args=[self.token, self.keys.member, self.state_ttl_ms, lookahead],
        )
        self.token = ""
        return decode_flag(requeue)

    def lock_ttl_seconds(self) -> float:
        """How long the current holder's lease still runs (0 when nobody holds it)."""
        return max(0, int(self.client.pttl(self.keys.lock))) / 1000

    def mark_drain_queued(self) -> bool:
        """Mark a drain as queued unless one already is; True when the caller must publish it."""
        return decode_flag(self.scripts.mark_queued(keys=[self.keys.state, self.shard.drains], args=[self.keys.member]))

    # -- reading ------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        reply = decode_snapshot(self.scripts.snapshot(keys=[self.keys.state, self.keys.buffer]))
        self.version = reply.version
        return Snapshot(
            run_id=reply.run_id,
            buffer=[decode_buffer_item(i) for i in reply.buffer],
            rid=reply.rid,
            fence=reply.fence,
            seq=reply.seq,
            version=self.version,
            last_eff_us=reply.last_eff_us,
            event=EventState.from_json(reply.event),
            flush=reply.flush,
        )

    def peek_inbox_raw(self, count: int) -> list[str]:
        return list(self.client.lrange(self.keys.inbox, 0, count - 1))

    def flush_requested(self) -> str | None:
        flush: str | None = self.client.hget(self.keys.state, "flush")
        return flush

    # -- writing ------------------------------------------------------------------
    def _raise_fence_error(self, exc: redis.ResponseError) -> NoReturn:
        refusal = fence_refusal(exc)
        if refusal is FenceRefusal.LOCK:
            raise LockLost(self.keys.member) from exc
        if refusal is FenceRefusal.HEAD:
            raise InboxMoved(self.keys.member) from exc
        if refusal is FenceRefusal.VERSION:
            raise StateChanged(self.keys.member) from exc
        raise exc

    def _fenced(self, script: Script, keys: list[str], args: list[Any]) -> int:
        try:
            self.version = decode_version(script(keys=keys, args=args))
        except redis.ResponseError as exc:
            self._raise_fence_error(exc)
        return self.version

    def step(
        self,
        *,
        head_raw: str | None,
        push: QueuedMessage | None,
        drop: int,
        segment: ClosedSegment | None,
        state: EventState,
        fence: int,
        seq: int | None = None,
        last_eff_us: int | None = None,
        clear_flush: str | None = None,
    ) -> CommitStep:
        """One segmentation step, ready to commit (``commit`` or ``commit_steps``); a
        ``segment`` it closes is stored as a ``Segment`` cut under ``fence``."""
        segment_id, payload = "", ""
        if segment is not None:
            stored = stored_segment(self.tenant, self.conversation_id, segment, fence)
            segment_id, payload = stored.id, stored.encode()
        args = [
            head_raw or "",
            push.raw if push else "",
            drop,
            "" if seq is None else seq,
            "" if last_eff_us is None else last_eff_us,
            segment_id,
            payload,
            clear_flush or "",
        ]
        return CommitStep(segment_id or None, args, state)

    def commit(self, step: CommitStep) -> str | None:
        """Apply one step atomically; return the id of a segment it closes."""
        self.commit_steps([step])
        return step.segment_id

    def commit_steps(self, steps: Sequence[CommitStep]) -> None:
        """Apply steps in order, in one atomic script call (``commit_steps.lua``): all of them
        or, refused, none (``LockLost``, ``StateChanged``, ``InboxMoved``). The event state is
        written once, as the last step leaves it."""
        if not steps:
            return
        args = [self.token, self.lease_ms, self.version, self.keys.member, steps[-1].state.to_json()]
        for step in steps:
            args.extend(step.args)
        self._fenced(self.scripts.commit_steps, self._step_keys(), args)

    def _step_keys(self) -> list[str]:
        return [
            self.keys.inbox,
            self.keys.buffer,
            self.keys.state,
            self.keys.lock,
            self.keys.segments,
            self.shard.pending,
            self.shard.drains,
        ]

    def sync(self, *, run_id: str, fence: int, seq_floor: int, last_eff_floor: int | None) -> int:
        """Apply a sync (``memq.worker.sync``); returns how many waiting segments were re-stamped."""
        try:
            synced = self.scripts.sync(
                keys=[self.keys.state, self.keys.lock, self.keys.segments],
                args=[
                    self.token,
                    self.version,
                    run_id,
                    fence,
                    seq_floor,
                    "" if last_eff_floor is None else last_eff_floor,
                ],
            )
        except redis.ResponseError as exc:
            self._raise_fence_error(exc)
        reply = decode_sync(synced)
        self.version = reply.version
        return reply.restamped

    def adopt_segment(self, segment_id: str) -> Adopted:
        """Re-stamp a waiting segment with the synced state's fence (``ADOPTED``, with the
        fence), unless the state needs a sync first (``NEEDS_SYNC``) or the segment is gone."""
        return decode_adopt_segment(
            self.scripts.adopt_segment(keys=[self.keys.segments, self.keys.state], args=[segment_id])
        )

    def record_failure(self, kind: str, item_id: str, error: str, *, head_raw: str = "") -> FailureRecorded:
        """Count a deterministic failure of the inbox front (kind "message") or of a segment
        (kind "segment"): the failures so far, and whether this one quarantined it."""
        reply = self.scripts.record_failure(
            keys=[
                self.keys.state,
                self.keys.inbox,
                self.keys.segments,
                self.keys.quarantine,
                self.shard.quarantined,
                self.shard.pending,
                self.keys.lock,
            ],
            args=[
                kind,
                head_raw,
                item_id,
                error[:2000],
                self.settings.quarantine_after_failures,
                self.keys.member,
                self.token,
            ],
        )
        recorded = decode_record_failure(reply)
        if recorded.quarantined:
            webhook_events.record_quarantined(
                self.settings,
                self.tenant,
                self.conversation_id,
                kind=kind,
                item=item_id,
                failures=recorded.failures,
                deferred_to=(self.scripts, self.keys),
            )
        return recorded

    # -- closed segments ------------------------------------------------------------
    def segment(self, segment_id: str) -> Segment | None:
        """A waiting segment, with the fence it carries now; None when it is gone."""
        raw = self.client.hget(self.keys.segments, segment_id)
        return Segment.decode(raw) if raw else None

    def invalidate_manifest(self) -> None:
        """A new episode changes the conversation's manifest (memq/memory/context/service.py)."""
        self.client.delete(self.keys.manifest)

    # -- embeddings carried from segmentation to episode creation ------------------------
    def remember_vectors(self, vectors: Mapping[str, np.ndarray], through: str | None = None) -> None:
        """Keep the embeddings segmentation computed (message id -> vector) for episode
        creation, whichever worker runs it, and for later drains (a look-ahead message is
        decided by the next one), so a message is embedded once. ``through``: the last inbox
        item embedded so far, which other conversations' drains start after (``front.lua``).
        A cache: what is missing (expired, lost with Redis, never written) is embedded again."""
        if not (vectors or through) or not self.settings.carry_vectors:
            return
        fields = {k: encode_vector(v) for k, v in vectors.items()}
        if through is not None:
            fields[FRONT_MARK] = front_mark(through)
        pipe = self.client.pipeline(transaction=False)
        pipe.hset(self.keys.vectors, mapping=fields)
        pipe.pexpire(self.keys.vectors, self.state_ttl_ms)
        pipe.execute()

    def vectors(self, message_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The carried embeddings of these messages that are there."""
        return self.vectors_and_front(message_ids)[0]

    def vectors_and_front(self, message_ids: Sequence[str]) -> tuple[dict[str, np.ndarray], str | None]:
        """The carried embeddings of these messages that are there, and the co-embedding
        mark (the sha1 of the last inbox item taken or embedded, ``front.lua``), in one read."""
        if not message_ids or not self.settings.carry_vectors:
            return {}, None
        *found, mark = self.client.hmget(self.keys.vectors, [*message_ids, FRONT_MARK])
        return {k: decode_vector(v) for k, v in zip(message_ids, found, strict=True) if v}, mark

    def forget_vectors(self, message_ids: Sequence[str]) -> None:
        """Their episode is stored: drop their vectors (and the co-embedding mark, a hint
        about messages already taken by then, so an emptied hash goes with them)."""
        if message_ids:
            self.client.hdel(self.keys.vectors, *message_ids, FRONT_MARK)

    def finish_segment(self, segment_id: str) -> None:
        self.scripts.finish_segment(
            keys=[
                self.keys.segments,
                self.shard.pending,
                self.keys.state,
                self.keys.inbox,
                self.keys.buffer,
                self.keys.quarantine,
            ],
            args=[segment_id, f"{self.keys.member}/{segment_id}", self.state_ttl_ms],
        )
