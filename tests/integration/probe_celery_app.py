"""A Celery app on memq's broker configuration (memq.shared.celery_config: memq's transport,
its retry and acknowledgement settings) with one trivial task and no models to load: for
tests of a worker's consumer itself, run as ``celery -A probe_celery_app worker`` with this
folder on PYTHONPATH and REDIS_URL set."""

from __future__ import annotations

import os

import redis
from celery import Celery

from memq.shared.celery_config import celery_config
from memq.shared.settings import get_settings

QUEUE = "probe"

app = Celery("probe")
app.conf.update(celery_config(get_settings(), os.environ["REDIS_URL"]))
app.conf.update(task_routes={}, task_default_queue=QUEUE)


@app.task(name="probe.mark")
def mark(key: str) -> None:
    """Set ``key``: the test sees the task ran."""
    redis.Redis.from_url(os.environ["REDIS_URL"]).set(key, "1")
