"""``episode_creation``: write the episodic memory of one closed segment, exactly once
(see ``worker.episode_store``).

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

from shared import tasks
from shared.db.episodes import StaleSegment, StoredChanged
from shared.errors import ValidationError
from worker import resources
from worker.app import app
from worker.episode_store import create_episode
from worker.failures import backoff_seconds, describe, is_transient
from worker.tasks import publish
from worker.tasks.arguments import conversation_args, episode_arg, refused

log = structlog.get_logger("memq.tasks")


@app.task(name=tasks.EPISODE_CREATION, acks_late=True)
def episode_creation(tenant: str, conversation_id: str, episode_id: str, attempt: int = 0) -> dict[str, Any]:
    settings = resources.settings()
    try:
        tenant, conversation_id = conversation_args(settings, tenant, conversation_id)
        episode_id = episode_arg(episode_id)
    except ValidationError as exc:
        return refused(exc)
    store = resources.store(tenant, conversation_id)

    def again(delay_attempt: int) -> None:
        delay = backoff_seconds(delay_attempt, settings.retry_backoff_seconds, settings.retry_backoff_max_seconds)
        publish.episode(tenant, conversation_id, episode_id, countdown=delay, attempt=attempt + 1)

    try:
        with resources.database() as conn:
            created = create_episode(store, conn, episode_id, settings, resources.embedder())
        if created.status == "created":  # the chain goes on: what was retrieved before this segment is reviewed
            assert created.episode_id is not None  # a created episode has its id
            publish.review(tenant, conversation_id, created.episode_id)
        return {"status": created.status, "episode_id": created.episode_id, "summary_source": created.summary_source}
    except StaleSegment as exc:
        fence = store.adopt_segment(episode_id)
        if fence < 0:
            return {"status": "gone"}
        if fence > 0:  # the segment in Redis is authoritative: it now carries the current fence
            log.info("segment_adopted", segment_id=episode_id, fence=fence, error=str(exc))
            publish.episode(tenant, conversation_id, episode_id, attempt=attempt + 1)
            return {"status": "adopted"}
        log.warning(
            "stale_segment",
            segment_id=episode_id,
            error=str(exc),
            hint="waiting for a drain to re-sync the conversation",
        )
        if store.mark_drain_queued():
            publish.drain(tenant, conversation_id)
        again(attempt)
        return {"status": "stale"}
    except SoftTimeLimitExceeded:
        log.warning("soft_time_limit", segment_id=episode_id)
        again(0)
        return {"status": "time_limit"}
    except Exception as exc:
        if is_transient(exc) or isinstance(exc, StoredChanged):
            log.warning("episode_failed", segment_id=episode_id, error=describe(exc), transient=True, attempt=attempt)
            again(attempt)
            return {"status": "retrying"}
        failures, quarantined = store.record_failure("segment", episode_id, describe(exc))
        log.exception(
            "segment_quarantined" if quarantined else "episode_failed",
            segment_id=episode_id,
            error=describe(exc),
            failures=failures,
            hint="see `memq quarantine list`" if quarantined else None,
        )
        if not quarantined and failures:
            again(failures - 1)
        return {"status": "quarantined" if quarantined else "failed", "error": describe(exc)}
