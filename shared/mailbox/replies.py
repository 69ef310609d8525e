"""What the mailbox's Lua scripts (``lua/*.lua``, registered by ``scripts.py``) answer,
decoded into named results: the one place their replies' shapes and codes are known, so
that callers never index a reply or compare a magic number.

Each decoder takes a script's reply as redis-py returns it (strings as ``str`` from the
mailbox client, which decodes replies, or as ``bytes`` from one that does not) and
mirrors the "Returns" paragraph of its script. A script whose reply means nothing
(``finish_segment``, ``defer_event``, ``settle_event``) has no decoder.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis.exceptions import ResponseError


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _optional_text(value: Any) -> str | None:
    """A field ``snapshot.lua`` returns as "" when it is missing."""
    return None if value is None else (_text(value) or None)


# -- enqueue.lua ---------------------------------------------------------------------
class EnqueueCode(enum.IntEnum):
    """The first element of ``enqueue.lua``'s reply."""

    LEASE_NEEDED = -3  # {-3, need}: the shard's quota lease of the tenant cannot cover the batch
    USER_CONFLICT = -2  # {-2, owner}: the batch names another user than the conversation's
    OUT_OF_ORDER = -1  # {-1, index, last_us}: "reject" refused message #index
    ACCEPTED = 0  # {0, statuses}: taken; no drain to publish (one is queued, or nothing was accepted)
    PUBLISH_DRAIN = 1  # {1, statuses}: taken; the caller publishes the conversation's drain task
    DRAIN_QUEUED = 2  # {2, statuses}: taken; the script queued the drain task itself


# A message's character in ``Enqueued.statuses``, and what the producer calls it.
ACCEPTED, CLAMPED, DUPLICATE = "a", "c", "d"
MESSAGE_STATUSES = {ACCEPTED: "accepted", CLAMPED: "clamped", DUPLICATE: "duplicate"}


@dataclass(frozen=True, slots=True)
class Enqueued:
    """The batch was taken: each message accepted, accepted with its timestamp raised
    (clamped) or a duplicate of an id accepted before."""

    code: EnqueueCode  # ACCEPTED, PUBLISH_DRAIN or DRAIN_QUEUED
    statuses: str  # one character per message of the batch, in order (MESSAGE_STATUSES)

    @property
    def publish_drain(self) -> bool:
        """The caller must publish the conversation's drain task."""
        return self.code is EnqueueCode.PUBLISH_DRAIN

    @property
    def has_duplicates(self) -> bool:
        return DUPLICATE in self.statuses


@dataclass(frozen=True, slots=True)
class OutOfOrder:
    """Under the "reject" policy, message ``index`` of the batch is older than the
    conversation's last one (``last_us``): nothing of the batch was written."""

    index: int
    last_us: int


@dataclass(frozen=True, slots=True)
class OwnedByOtherUser:
    """The conversation belongs to ``owner``, not to the user the batch names: nothing of
    the batch was written."""

    owner: str


@dataclass(frozen=True, slots=True)
class LeaseNeeded:
    """The shard's lease of the tenant's quotas is missing, stale or short of the ``need``
    messages the batch would accept: nothing of the batch was written."""

    need: int


EnqueueReply = Enqueued | OutOfOrder | OwnedByOtherUser | LeaseNeeded


def decode_enqueue(reply: Sequence[Any]) -> EnqueueReply:
    code = EnqueueCode(int(reply[0]))
    if code is EnqueueCode.LEASE_NEEDED:
        return LeaseNeeded(int(reply[1]))
    if code is EnqueueCode.USER_CONFLICT:
        return OwnedByOtherUser(_text(reply[1]))
    if code is EnqueueCode.OUT_OF_ORDER:
        return OutOfOrder(int(reply[1]), int(reply[2]))
    return Enqueued(code, _text(reply[1]))


# -- quota_take.lua, quota_grant.lua -------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Lease:
    """A shard's lease of a tenant's quotas: messages it may still accept on ``day`` (UTC
    days since the epoch) and for good; -1: no limit."""

    day: int
    day_left: int
    stored_left: int


@dataclass(frozen=True, slots=True)
class QuotaRefusal:
    """The tenant's ``limit`` ("messages_per_day" | "stored_messages") of ``allowed``
    messages, ``used`` of it, cannot cover a batch."""

    limit: str
    allowed: int
    used: int


def decode_quota_take(reply: Sequence[Any]) -> Lease | None:
    if not reply:
        return None
    return Lease(int(reply[0]), int(reply[1]), int(reply[2]))


def decode_quota_grant(reply: Sequence[Any]) -> Lease | QuotaRefusal:
    if int(reply[0]) < 0:
        return QuotaRefusal(_text(reply[1]), int(reply[2]), int(reply[3]))
    return Lease(int(reply[1]), int(reply[2]), int(reply[3]))


# -- request_flush.lua -----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FlushRequested:
    publish_drain: bool  # the caller must publish the conversation's drain task
    has_work: bool  # the conversation had something to close (False: nothing to flush)


def decode_request_flush(reply: Sequence[Any]) -> FlushRequested:
    schedule, has_work = reply
    return FlushRequested(bool(int(schedule)), bool(int(has_work)))


# -- snapshot.lua ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SnapshotReply:
    """The state fields a drainer starts from, as stored (missing ones None or 0)."""

    run_id: str  # the Redis server's run id now
    buffer: list[str]  # the open event's items
    rid: str | None  # the run id the state was last synced under
    fence: int
    seq: int
    version: int
    last_eff_us: int | None
    event: str | None  # the detector's EventState JSON
    flush: str | None  # "<n>:<reason>" when a flush is asked for


def decode_snapshot(reply: Sequence[Any]) -> SnapshotReply:
    run_id, items, rid, fence, seq, version, last_eff, event, flush = reply
    return SnapshotReply(
        run_id=_text(run_id),
        buffer=[_text(i) for i in items],
        rid=_optional_text(rid),
        fence=int(fence or 0),
        seq=int(seq or 0),
        version=int(version or 0),
        last_eff_us=int(last_eff) if last_eff else None,
        event=_optional_text(event),
        flush=_optional_text(flush),
    )


# -- commit_steps.lua, sync.lua: fenced writes -----------------------------------------------
class FenceRefusal(enum.Enum):
    """Why a fenced script (``commit_steps.lua``, ``sync.lua``) wrote nothing: its error reply."""

    LOCK = "LOCK"  # the lock token is not ours any more
    HEAD = "HEAD"  # the inbox front is not the items the steps pop
    VERSION = "VERSION"  # the state is not at the version we read


def fence_refusal(exc: ResponseError) -> FenceRefusal | None:
    """The refusal a script's error reply names; None for any other error."""
    text = str(exc)
    for refusal in FenceRefusal:  # in their order above
        if refusal.value in text:
            return refusal
    return None


def decode_version(reply: Any) -> int:
    """``commit_steps.lua``: the state's new version."""
    return int(reply)


@dataclass(frozen=True, slots=True)
class Synced:
    version: int  # the state's new version
    restamped: int  # waiting segments re-stamped with the new fence


def decode_sync(reply: Sequence[Any]) -> Synced:
    version, restamped = reply
    return Synced(int(version), int(restamped))


# -- release.lua, mark_queued.lua, unlock.lua: yes or no -----------------------------------
def decode_flag(reply: Any) -> bool:
    """1 or 0: ``release.lua`` and ``mark_queued.lua`` (the caller must publish a drain),
    ``unlock.lua`` (the lock was released)."""
    return bool(int(reply))


# -- adopt_segment.lua ------------------------------------------------------------------------
class Adoption(enum.Enum):
    GONE = "gone"  # -1: no such segment waits (any more)
    NEEDS_SYNC = "needs_sync"  # 0: the state is not synced with this Redis: a drain must sync it first
    ADOPTED = "adopted"  # the fence: the segment now carries the conversation's current fence


@dataclass(frozen=True, slots=True)
class Adopted:
    outcome: Adoption
    fence: int = 0  # the segment's fence now (ADOPTED only)


def decode_adopt_segment(reply: Any) -> Adopted:
    fence = int(reply)
    if fence < 0:
        return Adopted(Adoption.GONE)
    if fence == 0:
        return Adopted(Adoption.NEEDS_SYNC)
    return Adopted(Adoption.ADOPTED, fence)


# -- record_failure.lua -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FailureRecorded:
    failures: int  # the unit's failures so far (0: not counted: it is no longer there, or not ours)
    quarantined: bool  # moved to the quarantine by this failure


def decode_record_failure(reply: Sequence[Any]) -> FailureRecorded:
    count, quarantined = reply
    return FailureRecorded(int(count), bool(int(quarantined)))


# -- quarantine_retry.lua ---------------------------------------------------------------------
@dataclass(frozen=True)
class Retried:
    kind: str  # "message" | "segment"
    id: str
    publish: bool  # the caller must publish a drain (message) or an episode creation (segment)


def decode_quarantine_retry(reply: Sequence[Any]) -> Retried | None:
    """None when there was no such item."""
    if not reply:
        return None
    kind, item_id, publish = reply
    return Retried(_text(kind), _text(item_id), bool(int(publish)))


# -- due.lua, front.lua: lists of strings; remember_front.lua: a count -----------------------
def decode_items(reply: Sequence[Any]) -> list[str]:
    """``due.lua``: the shard index's entries; ``front.lua``: the inbox items claimed."""
    return [_text(item) for item in reply]


def decode_count(reply: Any) -> int:
    """``remember_front.lua``: how many vectors were written."""
    return int(reply)
