"""``event_segmentation``: drain one conversation's inbox in order, one drainer at a
time, and hand every closed segment to ``episode_creation``."""

from __future__ import annotations

import time

import structlog

from shared import tasks
from worker import resources
from worker.app import app
from worker.conversation_store import InboxMoved, LockLost
from worker.drain import drain

log = structlog.get_logger("memq.tasks")


@app.task(name=tasks.EVENT_SEGMENTATION, bind=True, max_retries=None, acks_late=True)
def event_segmentation(self, tenant: str, conversation_id: str) -> dict:
    settings = resources.settings()
    store = resources.store(tenant, conversation_id)
    if not store.acquire():
        # Another worker drains this conversation; try again shortly so messages it
        # may have missed at its end are not left waiting.
        store.touch_drain_queued()
        raise self.retry(countdown=settings.lock_retry_seconds)
    try:
        store.mark_drain_started()
        for episode_id in store.pending_segment_ids():
            # Segments closed by a drainer that died before handing them over.
            if (seg := store.segment(episode_id)) and time.time() - seg["cut_at"] > settings.stalled_after_seconds:
                queue_episode(tenant, conversation_id, episode_id)
        detector = resources.detector()
        outcome = drain(
            store,
            settings,
            detector,
            resources.embedder,
            lambda episode_id: queue_episode(tenant, conversation_id, episode_id),
        )
    except LockLost:
        log.warning("lock_lost", hint="another worker took over after our lease ran out; it continues")
        return {"status": "lock_lost"}
    except InboxMoved:
        log.error("inbox_moved", hint="inbox changed under the lock; stopping, the next drain resumes")
        return {"status": "inbox_moved"}
    finally:
        store.release()
    if outcome.more:
        requeue(tenant, conversation_id)
    log.info("drained", processed=outcome.processed, episodes=len(outcome.episodes), more=outcome.more, flushed=outcome.flushed)
    return {"processed": outcome.processed, "episodes": outcome.episodes, "more": outcome.more}


def queue_episode(tenant: str, conversation_id: str, episode_id: str) -> None:
    app.send_task(tasks.EPISODE_CREATION, args=[tenant, conversation_id, episode_id])


def requeue(tenant: str, conversation_id: str) -> None:
    """Queue another drain unless one is already queued (a new message may have)."""
    if resources.store(tenant, conversation_id).mark_drain_queued():
        app.send_task(tasks.EVENT_SEGMENTATION, args=[tenant, conversation_id])
