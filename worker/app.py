"""The Celery application: settings map one-to-one onto Celery's configuration
(``memq.shared.celery_config``), tasks come from ``memq.worker.tasks``, and logging is bound
to task and conversation ids.

    celery -A memq.worker.app worker      # or: memq worker
    celery -A memq.worker.app beat        # or: memq beat (one per deployment; RedBeat locks)
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import structlog
from celery import Celery, signals
from celery.exceptions import CPendingDeprecationWarning

from memq.shared.celery_config import celery_config
from memq.shared.connections import redis_url
from memq.shared.logging import configure_logging
from memq.shared.settings import get_settings
from memq.shared.settings.environment import report_openings, report_unrecognised
from memq.worker import metrics_export
from memq.worker.broker_recovery import SweepAfterReconnect
from memq.worker.schedule import beat_schedule
from memq.worker.watchdog import WatchdogStep


def create_app() -> Celery:
    settings = get_settings()
    configure_logging(settings)
    report_unrecognised(os.environ)
    report_openings(settings)
    app = Celery(
        "memq",
        include=[
            "memq.worker.tasks.segmentation",
            "memq.worker.tasks.episodes",
            "memq.worker.tasks.maintenance",
            "memq.worker.tasks.memory",
            "memq.worker.tasks.webhooks",
        ],
    )
    app.conf.update(celery_config(settings, redis_url(settings)))
    app.steps["consumer"].update({WatchdogStep, SweepAfterReconnect})  # see docs/broker-restarts.md
    app.conf.beat_schedule = beat_schedule(settings)
    return app


app = create_app()


@signals.worker_ready.connect
def _quiet_cancel_notice(**_: object) -> None:
    """memq keeps tasks running across a lost broker connection on purpose
    (memq.shared.celery_config); Celery's notice about that default would be logged at every
    reconnect. Set once the worker is up: Celery's logging setup puts its own 'always'
    filter for the warning in front of any set earlier."""
    warnings.filterwarnings(
        "ignore",
        message=r"\s*In Celery 5.1 we introduced an optional breaking change",
        category=CPendingDeprecationWarning,
    )


@signals.celeryd_after_setup.connect
def _record_pool_size(instance: Any = None, **_: object) -> None:
    """In the worker's main process, before the pool forks: how many pool processes share
    this machine's CPUs (each sizes its embedding model's threads to its share), and the
    metrics server (multiprocess mode must be on before the pool processes exist)."""
    from memq.worker import resources

    concurrency = getattr(instance, "concurrency", None)
    if isinstance(concurrency, int) and concurrency > 0:
        resources.POOL_PROCESSES = concurrency
    metrics_export.serve(get_settings())


@signals.worker_process_shutdown.connect
def _pool_process_exiting(**_: object) -> None:
    metrics_export.process_exiting()


@signals.worker_shutdown.connect
def _worker_exiting(**_: object) -> None:
    metrics_export.stop()


@signals.worker_process_init.connect
def _warm_up(**_: object) -> None:
    """Load the heavy parts (the embedding model, litellm, the tokenizer, the detector)
    in each pool process before it takes a task: a first task must not spend its time
    budget importing, and a soft time limit must never interrupt an import halfway
    (that leaves a half-initialised module behind for every later task)."""
    from memq.worker import resources

    resources.warm_up()


@signals.setup_logging.connect
def _setup_logging(**_: object) -> None:
    configure_logging(get_settings(), force=True)


@signals.task_prerun.connect
def _bind_task(task_id: str | None = None, task: object = None, args: Sequence[Any] | None = None, **_: object) -> None:
    structlog.contextvars.clear_contextvars()
    context = {"task_id": task_id, "task_name": getattr(task, "name", None)}
    if args and len(args) >= 2:
        context.update(tenant=args[0], conversation_id=args[1])
    structlog.contextvars.bind_contextvars(**context)
    metrics_export.task_started(task_id)


@signals.task_postrun.connect
def _unbind_task(task_id: str | None = None, task: object = None, state: str | None = None, **_: object) -> None:
    structlog.contextvars.clear_contextvars()
    metrics_export.task_finished(task_id, getattr(task, "name", None), state)
