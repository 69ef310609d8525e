"""Publishing memq's tasks by name: the one place a task message is sent. The producer, the
CLI and the API send through a publish-only Celery app configured like the workers'
(``publishing_app``); a worker sends through its own app. Either way the message is the
same: the task's name, its arguments, ``attempt`` when it is a retry, a countdown when it
waits.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from celery import Celery

from memq.shared import tasks
from memq.shared.celery_config import celery_config
from memq.shared.connections import redis_url
from memq.shared.settings import Settings, SettingsKey, by_value


def publishing_app(settings: Settings) -> Celery:
    """The publish-only app for these settings (one per distinct settings' values)."""
    return _publishing_app(by_value(settings))


@functools.lru_cache(maxsize=4)
def _publishing_app(key: SettingsKey) -> Celery:
    app = Celery("memq-publisher", set_as_current=False)
    app.conf.update(celery_config(key.settings, redis_url(key.settings)))
    return app


def _send(app: Celery, name: str, args: Sequence[str], *, countdown: float, **kwargs: Any) -> None:
    app.send_task(name, args=list(args), kwargs=kwargs or None, countdown=countdown or None)


def _retry(attempt: int) -> dict[str, int]:
    return {"attempt": attempt} if attempt else {}


def drain(app: Celery, tenant: str, conversation_id: str, *, countdown: float = 0.0, attempt: int = 0) -> None:
    _send(app, tasks.EVENT_SEGMENTATION, (tenant, conversation_id), countdown=countdown, **_retry(attempt))


def episode(
    app: Celery, tenant: str, conversation_id: str, segment_id: str, *, countdown: float = 0.0, attempt: int = 0
) -> None:
    """Episode creation for the closed segment ``segment_id`` (its ids sent positionally)."""
    _send(app, tasks.EPISODE_CREATION, (tenant, conversation_id, segment_id), countdown=countdown, **_retry(attempt))


def review(
    app: Celery, tenant: str, conversation_id: str, episode_id: str, *, countdown: float = 0.0, attempt: int = 0
) -> None:
    _send(app, tasks.MEMORY_REVIEW, (tenant, conversation_id, episode_id), countdown=countdown, **_retry(attempt))


def consolidation(app: Celery, tenant: str, conversation_id: str, *, countdown: float = 0.0, attempt: int = 0) -> None:
    _send(app, tasks.SEMANTIC_CONSOLIDATION, (tenant, conversation_id), countdown=countdown, **_retry(attempt))


def sweep(app: Celery, *, age: float, once_per_seconds: float) -> None:
    _send(app, tasks.SWEEP_STALLED, (), countdown=0.0, age=age, once_per_seconds=once_per_seconds)


def webhook_delivery(app: Celery, delivery_id: str, *, countdown: float = 0.0) -> None:
    app.send_task(tasks.WEBHOOK_DELIVERY, args=[delivery_id], countdown=countdown or None)


def webhook_sweep(app: Celery, *, countdown: float = 0.0) -> None:
    """The outbox sweep (``memq.worker.tasks.webhooks``)."""
    app.send_task(tasks.WEBHOOK_SWEEP, countdown=countdown or None)
