"""``event_segmentation``: drain one conversation's inbox in order, one drainer at a
time, and hand every closed segment to ``episode_creation``.

Every way out of a drain (done, out of budget, a message that fails, a lost lock, a
state that changed underneath, Redis or PostgreSQL down, Celery's soft time limit)
goes through ``release.lua``, which decides atomically with the inbox whether another
drain is needed; the conversation keeps its "drain queued" mark and a fresh entry in
its shard's drains index until no work remains, so even a drain killed outright (hard
time limit, SIGKILL) is found and re-published by the stalled-work sweeper.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import structlog
from billiard.exceptions import SoftTimeLimitExceeded

from memq.shared import publisher, tasks
from memq.shared.storage_alarm import RETRIED, report_storage_full
from memq.worker import resources
from memq.worker.app import app
from memq.worker.conversation_store import LockLost, StateChanged
from memq.worker.failures import describe, is_transient, retry_delay
from memq.worker.segmentation.job import MessageFailed, drain
from memq.worker.sync import sync_with_database
from memq.worker.tasks.arguments import checked_arguments

if TYPE_CHECKING:
    from memq.worker.conversation_store import ConversationStore

log = structlog.get_logger("memq.tasks")

BUSY_RETRIES = 3


@app.task(name=tasks.EVENT_SEGMENTATION, acks_late=True)
@checked_arguments()
def event_segmentation(tenant: str, conversation_id: str, attempt: int = 0) -> dict[str, Any]:
    settings = resources.settings()
    store = resources.store(tenant, conversation_id)
    if not store.acquire():
        # Another worker holds the conversation. Alive, it queues a drain for whatever
        # arrived meanwhile when it releases; dead, its lease runs out: look again then
        # (a few times; after that the stalled-work sweeper is the safety net).
        if attempt < BUSY_RETRIES:
            wait = store.lock_ttl_seconds()
            publisher.drain(app, tenant, conversation_id, countdown=wait + 0.2, attempt=attempt + 1)
        return {"status": "busy"}

    result: dict[str, Any] = {"status": "drained"}
    delay, next_attempt = 0.0, 0
    lookahead = 0

    try:
        detector = resources.detector()
        lookahead = detector.lookahead if detector.needs_embeddings else 0
        snapshot = sync_with_database(store, store.snapshot(), lambda: resources.database(tenant))
        outcome = drain(
            store,
            settings,
            detector,
            resources.embedder,
            lambda segment_id: publisher.episode(app, tenant, conversation_id, segment_id),
            snapshot,
        )
        result.update(
            processed=outcome.processed, episodes=outcome.episodes, more=outcome.more, flushed=outcome.flushed
        )
        log.info(
            "drained",
            processed=outcome.processed,
            episodes=len(outcome.episodes),
            more=outcome.more,
            flushed=outcome.flushed,
        )
    except MessageFailed as failed:
        recorded = store.record_failure("message", failed.message_id, failed.error, head_raw=failed.raw)
        failures, quarantined = recorded.failures, recorded.quarantined
        (log.error if quarantined else log.warning)(
            "message_quarantined" if quarantined else "message_failed",
            message_id=failed.message_id,
            error=failed.error,
            failures=failures,
            threshold=settings.quarantine_after_failures,
            hint="see `memq quarantine list`; `memq quarantine retry` puts it back" if quarantined else None,
        )
        result = {"status": "quarantined" if quarantined else "message_failed", "message_id": failed.message_id}
        if not quarantined:
            delay, next_attempt = retry_delay(settings, max(0, failures - 1)), attempt + 1
    except LockLost:
        log.warning("lock_lost", hint="our lease ran out; whoever holds the conversation now continues")
        result = {"status": "lock_lost"}
    except StateChanged:
        log.warning(
            "state_changed", hint="the conversation's state moved underneath (Redis restarted?); a new drain resumes"
        )
        result = {"status": "state_changed"}
    except SoftTimeLimitExceeded:
        log.warning("soft_time_limit", hint="drain stopped by Celery's soft time limit; a new drain resumes")
        result = {"status": "time_limit"}
    except Exception as exc:
        transient = is_transient(exc)
        if transient:
            report_storage_full(exc, stage="drain", then=RETRIED)
            log.warning("drain_failed", error=describe(exc), transient=True, attempt=attempt)
        else:
            log.exception("drain_failed", error=describe(exc), transient=False, attempt=attempt)
        result = {"status": "failed", "error": describe(exc)}
        delay, next_attempt = retry_delay(settings, attempt), attempt + 1
    finally:
        try:
            if release(store, lookahead, settings.release_retry_seconds):
                publisher.drain(app, tenant, conversation_id, countdown=delay, attempt=next_attempt)
        except Exception as exc:  # Redis or the broker stayed away: the mark stays, a sweep re-publishes
            log.warning(
                "release_failed",
                error=describe(exc),
                hint="the sweep after the broker reconnects, or the stalled-work sweeper, re-publishes the drain",
            )
    return result


def release(store: ConversationStore, lookahead: int, retry_seconds: float) -> bool:
    """``store.release``, tried again while Redis is unreachable or loading its data (a
    restart takes seconds), for at most ``retry_seconds`` and never past the task's soft
    time limit: the drain that follows is published as soon as Redis is back."""
    ends_at = time.monotonic() + retry_seconds
    attempt = 0
    while True:
        try:
            return store.release(lookahead)
        except Exception as exc:
            if not is_transient(exc) or time.monotonic() >= ends_at:
                raise
            if attempt == 0:
                log.warning("release_retrying", error=describe(exc), seconds=retry_seconds)
            time.sleep(min(2.0, 0.1 * 2**attempt, max(0.0, ends_at - time.monotonic())))
            attempt += 1
