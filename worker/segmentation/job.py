"""Draining one conversation's inbox through the segmenter (the segmentation stage's orchestration:
policy lives in the other modules of ``memq.worker.segmentation``, storage in ``memq.worker.conversation_store``).

Runs under the conversation lock, from a ``Snapshot`` already synced with PostgreSQL
(``memq.worker.sync``). Reads inbox messages in order in small batches (embedded together
when the detector needs embeddings), numbers each, advances the ``Segmenter`` by it
and commits each step atomically, the batch's steps in one round trip (``_Pending``:
before a failure is raised against the inbox front, and before the lock's lease could
run short); a step not yet committed when the drain stops is redone by the next one, as
after a crash. Bounded in messages and time, checked before every
message, and every step runs under a deadline that slow calls (the LLM topic check)
respect, so a drain ends on its own budget far below Celery's time limit; the task
queues another drain for what is left.

A message whose processing raises a non-transient error surfaces as ``MessageFailed``
naming exactly that message, so the task can count the failure against it (and
quarantine it after repeated failures) instead of blocking the conversation.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import structlog

from memq.shared import deadline
from memq.shared.embeddings import Embedder
from memq.shared.mailbox.codec import QueuedMessage, decode_inbox_item, to_micros
from memq.shared.metrics import metrics
from memq.shared.settings import Settings
from memq.worker.conversation_store import CommitStep, ConversationStore, Snapshot, front_mark
from memq.worker.failures import STOP, describe, is_transient
from memq.worker.segmentation import co_embedding
from memq.worker.segmentation.detectors.base import Detector
from memq.worker.segmentation.engine import ClosedSegment, Step
from memq.worker.segmentation.segmenter import Segmenter

log = structlog.get_logger("memq.segmentation")


class MessageFailed(Exception):
    """Processing the inbox front failed for a reason that is not transient."""

    def __init__(self, raw: str, message_id: str, cause: BaseException):
        super().__init__(f"message {message_id}: {describe(cause)}")
        self.raw = raw
        self.message_id = message_id
        self.error = describe(cause)
        self.__cause__ = cause


@dataclass
class DrainOutcome:
    processed: int = 0
    episodes: list[str] = field(default_factory=list)  # ids of the segments closed (each becomes an episode)
    more: bool = False  # stopped by the budget with work left
    flushed: bool = False


def log_boundary_score(seq: int | None, result: Step) -> None:
    """episodic_agent's debug line: ``Boundary score: 0.85 (pred=.., drift=..) -> TRIGGER``."""
    v = result.verdict
    if v is None:
        log.info(f"seq {seq}: rule layer -> {result.action}", seq=seq, action=result.action)
        return
    parts = ", ".join(f"{k}={float(val):.2f}" for k, val in v.factors.items())
    score = f"{v.score:.2f}" if v.score is not None else "-"
    verdict = f"-> TRIGGER ({v.reason}, {v.source})" if v.boundary else f"({v.reason})"
    log.info(
        f"seq {seq}: Boundary score: {score} ({parts}) {verdict}", seq=seq, score=v.score, boundary=bool(v.boundary)
    )


def _fallback_id(raw: str) -> str:
    return "raw-" + hashlib.sha1(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class _Unusable:
    """Marks a message of a batch that could not be decoded or embedded."""

    def __init__(self, exc: BaseException):
        self.exc = exc


def _decode(raws: list[str]) -> list[QueuedMessage | _Unusable]:
    out: list[QueuedMessage | _Unusable] = []
    for raw in raws:
        try:
            out.append(decode_inbox_item(raw))
        except Exception as exc:
            out.append(_Unusable(exc))
    return out


def _embed(
    embedder: Embedder,
    messages: list[QueuedMessage | _Unusable],
    batch_call: Callable[[list[str]], np.ndarray] | None = None,
) -> list[np.ndarray | _Unusable | None]:
    """One batch call (``batch_call``, by default the embedder's); when it fails for a
    non-transient reason, one call per message so that only the message that cannot be
    embedded is marked."""
    usable = [(i, m) for i, m in enumerate(messages) if isinstance(m, QueuedMessage)]
    vectors: list[np.ndarray | _Unusable | None] = [m if isinstance(m, _Unusable) else None for m in messages]
    try:
        batch = (batch_call or embedder.embed)([m.content for _, m in usable])
        for (i, _), v in zip(usable, batch):
            vectors[i] = v
        return vectors
    except STOP:
        raise
    except Exception as exc:
        if is_transient(exc):
            raise
    for i, m in usable:
        try:
            vectors[i] = embedder.embed([m.content])[0]
        except STOP:
            raise
        except Exception as exc:
            if is_transient(exc):
                raise
            vectors[i] = _Unusable(exc)
    return vectors


def claimed_through(raws: list[str], mark: str | None) -> int:
    """How many of ``raws`` (the inbox front, in order) lie up to the co-embedding mark:
    taken by another conversation's drain, whose vectors may still be on their way
    (``front.lua``); 0 when the mark is not among them."""
    if mark is None:
        return 0
    for i, raw in enumerate(raws):
        if front_mark(raw) == mark:
            return i + 1
    return 0


def _take_kept(
    store: ConversationStore,
    raws: list[str],
    decoded: list[QueuedMessage | _Unusable],
    indexes: list[int],
    into: dict[str, np.ndarray | _Unusable | None],
) -> str | None:
    """The vectors kept in Redis of these items (indexes into ``raws``: by another
    conversation's drain, ``co_embedding``, or by an earlier drain of this one, a look-ahead
    message) put ``into`` the drain's (inbox item -> vector); returns the co-embedding mark
    (``ConversationStore.vectors_and_front``)."""
    kept, mark = store.vectors_and_front([m.id for i in indexes if isinstance(m := decoded[i], QueuedMessage)])
    if kept:
        metrics().co_embedded.labels(outcome="used").inc(len(kept))
    for i in indexes:
        item = decoded[i]
        if isinstance(item, QueuedMessage) and item.id in kept:
            into[raws[i]] = kept[item.id]
    return mark


def _embed_into(
    model: Embedder,
    raws: list[str],
    decoded: list[QueuedMessage | _Unusable],
    indexes: list[int],
    batch_call: Callable[[list[str]], np.ndarray],
    into: dict[str, np.ndarray | _Unusable | None],
) -> None:
    for i, vector in zip(indexes, _embed(model, [decoded[i] for i in indexes], batch_call), strict=True):
        into[raws[i]] = vector


def _embed_fresh(
    store: ConversationStore,
    model: Embedder,
    raws: list[str],
    decoded: list[QueuedMessage | _Unusable],
    fresh: list[int],
    mark: str | None,
    embed_with_others: Callable[[list[str]], np.ndarray],
    into: dict[str, np.ndarray | _Unusable | None],
) -> None:
    """The vectors of the ``fresh`` items (indexes into ``raws``, none kept in Redis when
    last looked) put ``into`` the drain's. Those another drain took along with its own (up
    to the ``mark``) are embedded last: by then its vectors have usually come, and are
    taken instead of embedding the same texts twice. With none of this drain's own to
    embed first, the others' waiting fronts are (what the riding drain would otherwise do
    later)."""
    claimed = claimed_through(raws, mark)
    own = [i for i in fresh if i >= claimed]
    taken = [i for i in fresh if i < claimed]
    if own:
        _embed_into(model, raws, decoded, own, embed_with_others, into)
    elif taken:
        embed_with_others([])
    if taken:
        _take_kept(store, raws, decoded, taken, into)
        missing = [i for i in taken if raws[i] not in into]
        if missing:
            _embed_into(model, raws, decoded, missing, embed_with_others, into)


def drain(
    store: ConversationStore,
    settings: Settings,
    detector: Detector,
    embedder: Callable[[], Embedder] | None,
    on_episode: Callable[[str], None],
    snapshot: Snapshot,
) -> DrainOutcome:
    """Segment the conversation's inbox, in order, from ``snapshot`` (read under the
    conversation's lock, synced with PostgreSQL), until the inbox holds nothing decidable
    or the budget (``MEMQ_DRAIN_MAX_MESSAGES``, ``MEMQ_DRAIN_MAX_SECONDS``) runs out; then,
    when a flush is asked for and nothing waits in the inbox, close the open event.

    Each batch of the inbox front is read (``_Drain.next_batch``: decoded, embedded when
    the detector needs it), advanced through the segmenter message by message
    (``_Drain.segment``) and committed in one fenced script call (``_Pending``).
    ``on_episode`` is called with the id of each segment closed, once its step is committed.

    Guarantees: messages are numbered and decided strictly in inbox order; nothing is
    written but through fenced commits, so a drain that stops at any point (budget,
    crash, lost lock) leaves the state as its last commit left it, and the next drain
    resumes from there; a message with look-ahead is decided only once the next ones are
    there or the conversation is flushed. Raises ``MessageFailed`` (the steps before the
    failing message committed), ``LockLost`` / ``StateChanged`` (refused commits) and
    transient errors (the uncommitted steps are redone by the next drain).
    ``DrainOutcome.more``: stopped by the budget with work left."""
    return _Drain(store, settings, detector, embedder, on_episode, snapshot).run()


@dataclass
class _Batch:
    """Inbox items read at once: decoded, their vectors (None without embeddings), and
    how many of them (from the first) can be decided now."""

    raws: list[str]
    decoded: list[QueuedMessage | _Unusable]
    vectors: list[np.ndarray | _Unusable | None]
    decidable: int


def _ahead(vectors: list[np.ndarray | _Unusable | None]) -> list[np.ndarray]:
    """The look-ahead vectors, up to the first one missing or unusable."""
    ahead: list[np.ndarray] = []
    for v in vectors:
        if v is None or isinstance(v, _Unusable):
            break
        ahead.append(v)
    return ahead


class _Drain:
    """One run of ``drain``: the segmenter and the counters it advances."""

    def __init__(
        self,
        store: ConversationStore,
        settings: Settings,
        detector: Detector,
        embedder: Callable[[], Embedder] | None,
        on_episode: Callable[[str], None],
        snapshot: Snapshot,
    ):
        self.store, self.settings, self.detector = store, settings, detector
        self.embedder, self.on_episode = embedder, on_episode
        self.segmenter = Segmenter.from_settings(settings, detector, snapshot.buffer, snapshot.event)
        self.seq, self.last_eff, self.fence = snapshot.seq, snapshot.last_eff_us, snapshot.fence
        self.outcome = DrainOutcome()
        self.ends_at = time.monotonic() + settings.drain_max_seconds
        self.step_seconds = settings.lock_lease_seconds / 2  # a step never outlives half the lock's lease
        self.lookahead = detector.lookahead if detector.needs_embeddings else 0
        self.embedded: dict[str, np.ndarray | _Unusable | None] = {}  # inbox item -> its vector, within this drain

    def run(self) -> DrainOutcome:
        while not self.out_of_budget():
            batch = self.next_batch()
            if batch is None:
                return self.close_if_flushed()
            if not self.segment(batch):
                return self.outcome
        self.outcome.more = True  # the task's release decides, with the inbox, whether a drain follows
        return self.outcome

    def out_of_budget(self) -> bool:
        return self.outcome.processed >= self.settings.drain_max_messages or time.monotonic() >= self.ends_at

    # -- reading a batch ----------------------------------------------------------------
    def next_batch(self) -> _Batch | None:
        """The inbox front, as far as this drain may go; None when none of it can be decided now."""
        flushing = self.store.flush_requested() is not None
        want = min(self.settings.embed_prefetch, self.settings.drain_max_messages - self.outcome.processed)
        raws = self.store.peek_inbox_raw(want + self.lookahead)
        # With look-ahead, a message is decided once the next w messages are here, or
        # when the conversation is being flushed (its end is known).
        decidable = len(raws) if flushing else min(want, len(raws) - self.lookahead)
        if decidable <= 0:
            return None
        decoded = _decode(raws)
        vectors: list[np.ndarray | _Unusable | None] = [None] * len(raws)
        if self.detector.needs_embeddings and self.embedder:
            vectors = self.vectors(self.embedder, raws, decoded, want, decidable)
        return _Batch(raws, decoded, vectors, decidable)

    def vectors(
        self,
        embedder: Callable[[], Embedder],
        raws: list[str],
        decoded: list[QueuedMessage | _Unusable],
        want: int,
        decidable: int,
    ) -> list[np.ndarray | _Unusable | None]:
        """The batch's vectors: kept in Redis (another drain's), kept from the last batch
        (its look-ahead), or embedded now (along with other conversations' fronts); the new
        ones are kept in Redis for episode creation and later drains."""
        store, embedded = self.store, self.embedded
        # the look-ahead messages of the last batch are this batch's first: embedded once
        fresh = [i for i, raw in enumerate(raws) if raw not in embedded]
        mark = _take_kept(store, raws, decoded, fresh, embedded)
        fresh = [i for i in fresh if raws[i] not in embedded]
        if fresh:
            model = embedder()
            with_others = functools.partial(
                co_embedding.embed, model, store=store, settings=self.settings, window=want + self.lookahead
            )
            _embed_fresh(store, model, raws, decoded, fresh, mark, with_others, embedded)
        vectors = [embedded[raw] for raw in raws]
        store.remember_vectors(  # for episode creation and later drains, on whichever worker they run
            {
                item.id: vector
                for i in fresh
                if isinstance(item := decoded[i], QueuedMessage) and isinstance(vector := embedded[raws[i]], np.ndarray)
            },
            through=raws[-1],
        )
        for raw in raws[:decidable]:
            embedded.pop(raw, None)
        return vectors

    # -- segmenting a batch -------------------------------------------------------------
    def segment(self, batch: _Batch) -> bool:
        """The batch's decidable messages through the segmenter, their steps committed
        (``_Pending``); False when the budget ran out first (the rest waits for the next drain)."""
        pending = _Pending(self.store, self.outcome, self.on_episode)
        for j in range(batch.decidable):
            if self.out_of_budget():
                pending.commit()
                self.outcome.more = True
                return False
            if pending.age() > self.step_seconds / 2:  # commits renew the lock's lease
                pending.commit()
            message, result = self.advance(batch, j, pending)
            pending.add(self.step(batch.raws[j], message, result), result.segment)
            self.outcome.processed += 1
            if self.settings.boundary_verbose:
                log_boundary_score(message.seq, result)
        pending.commit()
        return True

    def advance(self, batch: _Batch, j: int, pending: _Pending) -> tuple[QueuedMessage, Step]:
        """Message ``j`` of the batch, numbered, and the segmenter's step for it. A failure
        that is not transient is the inbox front's: the steps before it are committed and
        ``MessageFailed`` names the message."""
        raw, item = batch.raws[j], batch.decoded[j]
        try:
            if isinstance(item, _Unusable):
                raise item.exc
            vector = batch.vectors[j]
            if isinstance(vector, _Unusable):
                raise vector.exc
            message = item.numbered(self.seq + 1, self.last_eff)
            ahead = _ahead(batch.vectors[j + 1 : j + 1 + self.lookahead])
            with deadline.within(min(self.step_seconds, self.ends_at - time.monotonic())):
                return message, self.segmenter.advance(message, vector, ahead)
        except STOP:
            raise
        except Exception as exc:
            if is_transient(exc):
                raise  # the steps not yet committed are redone by the next drain, as after a crash
            pending.commit()  # the messages before it are done: the failure is the inbox front's
            message_id = item.id if isinstance(item, QueuedMessage) else _fallback_id(raw)
            raise MessageFailed(raw, message_id, exc) from exc

    def step(self, raw: str, message: QueuedMessage, result: Step) -> CommitStep:
        """The segmenter's step for the inbox front ``raw`` (numbered ``message``), ready to commit."""
        self.seq += 1
        self.last_eff = to_micros(message.timestamp)
        return self.store.step(
            head_raw=raw,
            push=message if result.push else None,
            drop=result.drop,
            segment=result.segment,
            state=result.state,
            fence=self.fence,
            seq=self.seq,
            last_eff_us=self.last_eff,
        )

    # -- the end ------------------------------------------------------------------------
    def close_if_flushed(self) -> DrainOutcome:
        """The inbox is drained as far as it can be: when a flush is asked for and nothing
        waits for look-ahead, close the open event (a flush with nothing open is only cleared)."""
        if self.store.peek_inbox_raw(1):
            return self.outcome  # messages wait for look-ahead; a later message or a flush decides them
        flush = self.store.flush_requested()
        if flush is None:
            return self.outcome
        reason = "inactivity" if flush.endswith(":inactivity") else "flush"
        closing = self.segmenter.close(reason)  # None: nothing open, the flush is only cleared
        segment_id = self.store.commit(
            self.store.step(
                head_raw=None,
                push=None,
                drop=closing.drop if closing else 0,
                segment=closing.segment if closing else None,
                state=closing.state if closing else self.segmenter.state,
                fence=self.fence,
                clear_flush=flush,
            )
        )
        if closing is not None:
            assert segment_id is not None and closing.segment is not None  # closing a non-empty event
            _closed(segment_id, closing.segment, self.outcome, self.on_episode)
        self.outcome.flushed = True
        return self.outcome


class _Pending:
    """A batch's steps, committed together in one atomic, fenced script call
    (``ConversationStore.commit_steps``: all of them or none) when the batch ends, before a failure is
    raised against the inbox front, and before the lock's lease could run short; a segment
    they close is announced (its episode task published) only once its step is committed."""

    def __init__(self, store: ConversationStore, outcome: DrainOutcome, on_episode: Callable[[str], None]):
        self.store, self.outcome, self.on_episode = store, outcome, on_episode
        self.steps: list[CommitStep] = []
        self.closed: list[tuple[str, ClosedSegment]] = []  # (segment id, segment)
        self.since = time.monotonic()

    def add(self, step: CommitStep, segment: ClosedSegment | None) -> None:
        self.steps.append(step)
        if step.segment_id:
            assert segment is not None  # a segment id comes with its segment
            self.closed.append((step.segment_id, segment))

    def age(self) -> float:
        """Seconds since the last commit (or since the batch began)."""
        return time.monotonic() - self.since if self.steps else 0.0

    def commit(self) -> None:
        self.store.commit_steps(self.steps)
        closed, self.steps, self.closed = self.closed, [], []
        self.since = time.monotonic()
        for segment_id, segment in closed:
            _closed(segment_id, segment, self.outcome, self.on_episode)


def _closed(segment_id: str, segment: ClosedSegment, outcome: DrainOutcome, on_episode: Callable[[str], None]) -> None:
    log.info(
        "segment_closed",
        episode_id=segment_id,
        reason=segment.reason,
        messages=len(segment.messages),
        first_seq=segment.messages[0].seq,
        last_seq=segment.messages[-1].seq,
        surprise=round(segment.surprise, 3),
    )
    metrics().boundaries.labels(reason=segment.reason).inc()
    outcome.episodes.append(segment_id)
    on_episode(segment_id)
