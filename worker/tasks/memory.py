"""``memory_review`` and ``semantic_consolidation``: the chain after episode creation
(seed 001, lifecycle steps 4 and 5).

``memory_review`` rates and applies the reviews waiting for the conversation's new
segment (``worker.review.job``), then starts a consolidation when the conversation's
unconsolidated episodes reach ``MEMQ_CONSOLIDATION_THRESHOLD`` or one is a flashbulb.
``semantic_consolidation`` runs one consolidation (``worker.consolidation.job``) and
another while enough remains; with no LLM configured the episodes wait. Transient
failures (PostgreSQL, Redis) are retried with backoff; both jobs are idempotent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
import structlog
from billiard.exceptions import SoftTimeLimitExceeded

from shared import tasks
from shared.db.facts import unconsolidated
from shared.errors import ValidationError
from worker import resources
from worker.app import app
from worker.consolidation.job import consolidate
from worker.failures import backoff_seconds, describe, is_transient
from worker.review.job import review_segment
from worker.tasks import publish
from worker.tasks.arguments import conversation_args, episode_arg, refused

if TYPE_CHECKING:
    from shared.settings import Settings

log = structlog.get_logger("memq.tasks")


def _due(conn: psycopg.Connection, settings: Settings, tenant: str, conversation_id: str) -> bool:
    waiting, flashbulb = unconsolidated(conn, tenant, conversation_id, settings.flashbulb_surprise)
    return waiting >= settings.consolidation_threshold or (waiting > 0 and flashbulb)


@app.task(name=tasks.MEMORY_REVIEW, acks_late=True)
def memory_review(tenant: str, conversation_id: str, episode_id: str, attempt: int = 0) -> dict[str, Any]:
    settings = resources.settings()
    try:
        tenant, conversation_id = conversation_args(settings, tenant, conversation_id)
        episode_id = episode_arg(episode_id)
    except ValidationError as exc:
        return refused(exc)
    try:
        with resources.database() as conn:
            outcome = review_segment(conn, settings, tenant, conversation_id, episode_id)
            due = settings.llm_enabled and _due(conn, settings, tenant, conversation_id)
    except SoftTimeLimitExceeded:
        _again(memory_review, (tenant, conversation_id, episode_id), attempt, settings)
        return {"status": "time_limit"}
    except Exception as exc:
        if not is_transient(exc) or attempt >= 20:
            log.exception("memory_review_failed", episode_id=episode_id, error=describe(exc))
            return {"status": "failed", "error": describe(exc)}
        _again(memory_review, (tenant, conversation_id, episode_id), attempt, settings)
        return {"status": "retrying"}
    if due:
        publish.consolidation(tenant, conversation_id)
    return {"status": "reviewed", "reviewed": outcome.reviewed, "consumed": outcome.consumed, "source": outcome.source}


@app.task(name=tasks.SEMANTIC_CONSOLIDATION, acks_late=True)
def semantic_consolidation(tenant: str, conversation_id: str, attempt: int = 0) -> dict[str, Any]:
    settings = resources.settings()
    try:
        tenant, conversation_id = conversation_args(settings, tenant, conversation_id)
    except ValidationError as exc:
        return refused(exc)
    if not settings.llm_enabled:
        log.info(
            "consolidation_waiting",
            hint="no LLM configured (MEMQ_LLM_MODEL); `memq consolidate` drains the backlog later",
        )
        return {"status": "waiting"}
    try:
        with resources.database() as conn:
            outcome = consolidate(conn, settings, resources.embedder(), tenant, conversation_id)
            again = outcome.status == "done" and _due(conn, settings, tenant, conversation_id)
    except SoftTimeLimitExceeded:
        _again(semantic_consolidation, (tenant, conversation_id), attempt, settings)
        return {"status": "time_limit"}
    except Exception as exc:
        if not is_transient(exc) or attempt >= 20:
            log.exception("consolidation_error", error=describe(exc))
            return {"status": "failed", "error": describe(exc)}
        _again(semantic_consolidation, (tenant, conversation_id), attempt, settings)
        return {"status": "retrying"}
    if again:
        publish.consolidation(tenant, conversation_id)
    return {"status": outcome.status, "episodes": outcome.episodes, **outcome.counts}


def _again(task: Any, args: tuple[str, ...], attempt: int, settings: Settings) -> None:
    delay = backoff_seconds(attempt, settings.retry_backoff_seconds, settings.retry_backoff_max_seconds)
    task.apply_async(args=args, kwargs={"attempt": attempt + 1}, countdown=delay)
