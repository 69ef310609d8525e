"""Publish memq's tasks by name from outside a worker (the producer, the CLI, the API):
a publish-only Celery app on the broker, configured like the workers'."""

from __future__ import annotations

import functools

from celery import Celery

from shared import tasks
from shared.celery_config import celery_config
from shared.connections import service_urls
from shared.settings import Settings


@functools.lru_cache(maxsize=4)
def publisher(settings: Settings) -> Celery:
    app = Celery("memq-publisher", set_as_current=False)
    app.conf.update(celery_config(settings, service_urls(settings).redis_url))
    return app


def publish_drain(settings: Settings, tenant: str, conversation_id: str) -> None:
    publisher(settings).send_task(tasks.EVENT_SEGMENTATION, args=[tenant, conversation_id])


def publish_episode(settings: Settings, tenant: str, conversation_id: str, episode_id: str) -> None:
    publisher(settings).send_task(tasks.EPISODE_CREATION, args=[tenant, conversation_id, episode_id])
