"""``episode_creation``: write the episodic memory of one closed segment, exactly once
(see ``memq.worker.episodes.job``).

Failures: transient ones (PostgreSQL or Redis down) are retried with backoff for as
long as they last; a segment cut before its conversation was re-synced waits for the
drain that re-stamps it; any other error is counted against the segment, which after
``MEMQ_QUARANTINE_AFTER_FAILURES`` in a row goes to the quarantine instead of being
retried without end.
"""

from __future__ import annotations

from typing import Any

import structlog
from billiard.exceptions import SoftTimeLimitExceeded

from memq.shared import publisher, tasks
from memq.shared.db.episodes import StaleSegment, StoredChanged
from memq.shared.mailbox.replies import Adoption
from memq.shared.storage_alarm import RETRIED, report_storage_full
from memq.worker import resources
from memq.worker.app import app
from memq.worker.episodes.job import create_episode
from memq.worker.failures import describe, is_transient, retry_delay
from memq.worker.tasks.arguments import checked_arguments

log = structlog.get_logger("memq.tasks")


@app.task(name=tasks.EPISODE_CREATION, acks_late=True)
@checked_arguments(id_argument="segment_id")
def episode_creation(tenant: str, conversation_id: str, segment_id: str, attempt: int = 0) -> dict[str, Any]:
    """Create the episode of the closed segment ``segment_id`` (the id ``commit_steps.lua``
    stored it under; publishers send it positionally, never by name)."""
    settings = resources.settings()
    store = resources.store(tenant, conversation_id)

    def again(delay_attempt: int) -> None:
        delay = retry_delay(settings, delay_attempt)
        publisher.episode(app, tenant, conversation_id, segment_id, countdown=delay, attempt=attempt + 1)

    try:
        with resources.database(tenant) as conn:
            created = create_episode(store, conn, segment_id, settings, resources.embedder())
        if created.status == "created":  # the chain goes on: what was retrieved before this segment is reviewed
            assert created.episode_id is not None  # a created episode has its id
            publisher.review(app, tenant, conversation_id, created.episode_id)
        return {"status": created.status, "episode_id": created.episode_id, "summary_source": created.summary_source}
    except StaleSegment as exc:
        adopted = store.adopt_segment(segment_id)
        if adopted.outcome is Adoption.GONE:
            return {"status": "gone"}
        if adopted.outcome is Adoption.ADOPTED:  # the segment in Redis is authoritative: it carries the fence now
            log.info("segment_adopted", segment_id=segment_id, fence=adopted.fence, error=str(exc))
            publisher.episode(app, tenant, conversation_id, segment_id, attempt=attempt + 1)
            return {"status": "adopted"}
        log.warning(
            "stale_segment",
            segment_id=segment_id,
            error=str(exc),
            hint="waiting for a drain to re-sync the conversation",
        )
        if store.mark_drain_queued():
            publisher.drain(app, tenant, conversation_id)
        again(attempt)
        return {"status": "stale"}
    except SoftTimeLimitExceeded:
        log.warning("soft_time_limit", segment_id=segment_id)
        again(0)
        return {"status": "time_limit"}
    except Exception as exc:
        if is_transient(exc) or isinstance(exc, StoredChanged):
            report_storage_full(exc, stage="episode", then=RETRIED)
            log.warning("episode_failed", segment_id=segment_id, error=describe(exc), transient=True, attempt=attempt)
            again(attempt)
            return {"status": "retrying"}
        recorded = store.record_failure("segment", segment_id, describe(exc))
        failures, quarantined = recorded.failures, recorded.quarantined
        log.exception(
            "segment_quarantined" if quarantined else "episode_failed",
            segment_id=segment_id,
            error=describe(exc),
            failures=failures,
            hint="see `memq quarantine list`" if quarantined else None,
        )
        if not quarantined and failures:
            again(failures - 1)
        return {"status": "quarantined" if quarantined else "failed", "error": describe(exc)}
