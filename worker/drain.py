"""Draining one conversation's inbox through the segmenter (orchestration only:
policy lives in ``worker.segmentation``, storage in ``worker.conversation_store``).

Runs under the conversation lock. Reads inbox messages in order in small batches
(embedded together when the detector needs embeddings), runs one engine step per
message and commits it atomically before the next. Bounded in messages and time so
a task stays far below Celery's visibility timeout; the caller re-queues the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import structlog

from shared.embeddings import Embedder
from shared.settings import Settings
from worker.conversation_store import ConversationStore
from worker.segmentation.detectors.base import Detector
from worker.segmentation.engine import Buffered, OverlapParams, close_open_event, step
from worker.segmentation.rules import RuleParams
from worker.segmentation.tokens import message_tokens

log = structlog.get_logger("memq.segmentation")


@dataclass
class DrainOutcome:
    processed: int = 0
    episodes: list[str] = field(default_factory=list)
    more: bool = False  # stopped by the budget with messages left
    flushed: bool = False


def log_boundary_score(seq: int, result) -> None:
    """Seed 004's debug line: ``Boundary score: 0.85 (pred=.., drift=..) -> TRIGGER``."""
    v = result.verdict
    if v is None:
        log.info(f"seq {seq}: rule layer -> {result.action}", seq=seq, action=result.action)
        return
    parts = ", ".join(f"{k}={val:.2f}" for k, val in v.factors.items())
    score = f"{v.score:.2f}" if v.score is not None else "-"
    verdict = f"-> TRIGGER ({v.reason}, {v.source})" if v.boundary else f"({v.reason})"
    log.info(f"seq {seq}: Boundary score: {score} ({parts}) {verdict}", seq=seq, score=v.score, boundary=v.boundary)


def drain(
    store: ConversationStore,
    settings: Settings,
    detector: Detector,
    embedder: Callable[[], Embedder] | None,
    on_episode: Callable[[str], None],
) -> DrainOutcome:
    rules = RuleParams.from_settings(settings)
    overlap = OverlapParams(timedelta(minutes=settings.overlap_minutes), settings.overlap_tokens)

    def tokens(m) -> int:
        return message_tokens(m.role, m.content, tool_result_max_chars=settings.tool_result_max_chars, encoding=settings.tokenizer_encoding)

    messages, state, _ = store.load()
    buffer = [Buffered(m, tokens(m)) for m in messages]
    outcome = DrainOutcome()
    started = time.monotonic()

    lookahead = detector.lookahead if detector.needs_embeddings else 0
    while True:
        if outcome.processed >= settings.drain_max_messages or time.monotonic() - started > settings.drain_max_seconds:
            # Out of budget: the caller queues another drain for what is left, including a
            # flush that was asked for (otherwise nobody would act on it).
            outcome.more = bool(store.peek_inbox(1)) or store.flush_requested() is not None
            return outcome
        flushing = store.flush_requested() is not None
        want = min(settings.embed_prefetch, settings.drain_max_messages - outcome.processed)
        batch = store.peek_inbox(want + lookahead)
        # With look-ahead, a message is decided once the next w messages are here, or
        # when the conversation is being flushed (its end is known).
        decidable = len(batch) if flushing else min(want, len(batch) - lookahead)
        if decidable <= 0:
            break
        vectors = (
            embedder().embed([m.content for m in batch]) if detector.needs_embeddings and embedder else [None] * len(batch)
        )
        for j in range(decidable):
            message, vector = batch[j], vectors[j]
            ahead = [v for v in vectors[j + 1 : j + 1 + lookahead]] if lookahead else []
            new = Buffered(message, tokens(message))
            result = step(buffer, new, vector, state, detector, rules, overlap, ahead)
            episode_id = store.commit(
                head=message,
                drop=result.drop,
                push=message if result.push else None,
                segment=result.segment,
                state=result.state,
            )
            buffer = buffer[result.drop :] + ([new] if result.push else [])
            state = result.state
            outcome.processed += 1
            if settings.boundary_verbose:
                log_boundary_score(message.seq, result)
            if episode_id:
                log.info(
                    "segment_closed",
                    episode_id=episode_id,
                    reason=result.segment.reason,
                    messages=len(result.segment.messages),
                    first_seq=result.segment.messages[0].seq,
                    last_seq=result.segment.messages[-1].seq,
                    surprise=round(result.segment.surprise, 3),
                )
                outcome.episodes.append(episode_id)
                on_episode(episode_id)

    if store.peek_inbox(1):
        return outcome  # messages wait for look-ahead; a later message or a flush decides them
    reason = store.flush_requested()
    if reason is not None:
        result = close_open_event(buffer, state, detector, overlap, reason="inactivity" if reason == "inactivity" else "flush")
        if result is None:
            store.commit(head=None, drop=0, push=None, segment=None, state=state, clear_flush=True)
        else:
            episode_id = store.commit(head=None, drop=result.drop, push=None, segment=result.segment, state=result.state, clear_flush=True)
            log.info("segment_closed", episode_id=episode_id, reason=result.segment.reason, messages=len(result.segment.messages))
            outcome.episodes.append(episode_id)
            on_episode(episode_id)
        outcome.flushed = True
    return outcome
