"""``memory_review`` and ``semantic_consolidation``: the chain after episode creation
(Plast Mem, lifecycle steps 4 and 5).

``memory_review`` rates and applies the reviews waiting for the conversation's new
segment (``memq.worker.review.job``), then starts a consolidation when the conversation's
unconsolidated episodes reach ``MEMQ_CONSOLIDATION_THRESHOLD`` or one is a flashbulb.
``semantic_consolidation`` runs one consolidation (``memq.worker.consolidation.job``) and
another while enough remains; with no LLM configured the episodes wait. Transient
failures (PostgreSQL, Redis) are retried with backoff; both jobs are idempotent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
import structlog
from billiard.exceptions import SoftTimeLimitExceeded

from memq.shared import publisher, tasks
from memq.shared.db.facts import unconsolidated
from memq.worker import resources
from memq.worker.app import app
from memq.worker.consolidation.job import consolidate
from memq.worker.failures import describe, gives_up, retry_delay
from memq.worker.review.job import review_segment
from memq.worker.tasks.arguments import checked_arguments

if TYPE_CHECKING:
    from memq.shared.settings import Settings

log = structlog.get_logger("memq.tasks")


def _due(conn: psycopg.Connection, settings: Settings, tenant: str, conversation_id: str) -> bool:
    waiting, flashbulb = unconsolidated(conn, tenant, conversation_id, settings.flashbulb_surprise)
    return waiting >= settings.consolidation_threshold or (waiting > 0 and flashbulb)


@app.task(name=tasks.MEMORY_REVIEW, acks_late=True)
@checked_arguments(id_argument="episode_id")
def memory_review(tenant: str, conversation_id: str, episode_id: str, attempt: int = 0) -> dict[str, Any]:
    settings = resources.settings()
    try:
        with resources.database(tenant) as conn:
            outcome = review_segment(conn, settings, tenant, conversation_id, episode_id)
            due = settings.llm_enabled and _due(conn, settings, tenant, conversation_id)
    except SoftTimeLimitExceeded:
        publisher.review(
            app, tenant, conversation_id, episode_id, countdown=retry_delay(settings, attempt), attempt=attempt + 1
        )
        return {"status": "time_limit"}
    except Exception as exc:
        if gives_up(settings, exc, attempt):
            log.exception("memory_review_failed", episode_id=episode_id, error=describe(exc), attempt=attempt)
            return {"status": "failed", "error": describe(exc)}
        publisher.review(
            app, tenant, conversation_id, episode_id, countdown=retry_delay(settings, attempt), attempt=attempt + 1
        )
        return {"status": "retrying"}
    if due:
        publisher.consolidation(app, tenant, conversation_id)
    return {"status": "reviewed", "reviewed": outcome.reviewed, "consumed": outcome.consumed, "source": outcome.source}


@app.task(name=tasks.SEMANTIC_CONSOLIDATION, acks_late=True)
@checked_arguments()
def semantic_consolidation(tenant: str, conversation_id: str, attempt: int = 0) -> dict[str, Any]:
    settings = resources.settings()
    if not settings.llm_enabled:
        log.info(
            "consolidation_waiting",
            hint="no LLM configured (MEMQ_LLM_MODEL); `memq consolidate` drains the backlog later",
        )
        return {"status": "waiting"}
    try:
        with resources.database(tenant) as conn:
            outcome = consolidate(conn, settings, resources.embedder(), tenant, conversation_id)
            again = outcome.status == "done" and _due(conn, settings, tenant, conversation_id)
    except SoftTimeLimitExceeded:
        publisher.consolidation(
            app, tenant, conversation_id, countdown=retry_delay(settings, attempt), attempt=attempt + 1
        )
        return {"status": "time_limit"}
    except Exception as exc:
        if gives_up(settings, exc, attempt):
            log.exception("consolidation_error", error=describe(exc), attempt=attempt)
            return {"status": "failed", "error": describe(exc)}
        publisher.consolidation(
            app, tenant, conversation_id, countdown=retry_delay(settings, attempt), attempt=attempt + 1
        )
        return {"status": "retrying"}
    if again:
        publisher.consolidation(app, tenant, conversation_id)
    return {"status": outcome.status, "episodes": outcome.episodes, **outcome.counts}
