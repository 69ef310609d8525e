"""A worker's Prometheus metrics, served by its main process for all of its pool processes.

Celery's prefork pool runs tasks in child processes, each with its own memory: counters
incremented there would be invisible to a scrape of the parent. With MEMQ_WORKER_METRICS_PORT
set, the main process switches prometheus-client to its multiprocess mode before the pool
forks (each child then writes its values to files named by its pid, in a directory of this
worker's own) and serves ``GET /metrics`` summing them; a child's counts outlive the child
(a recycled pool process loses nothing). Task runtimes are measured here too, from Celery's
task signals, by task name and final state.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import structlog
from prometheus_client import CollectorRegistry, multiprocess, start_http_server, values

from memq.shared.metrics import metrics
from memq.shared.settings import Settings

log = structlog.get_logger("memq.worker.metrics")

_directory: str | None = None
_started: dict[str, float] = {}  # task id -> when it started (perf_counter), in the process running it


def serve(settings: Settings) -> int | None:
    """In the worker's main process, before the pool forks: the multiprocess mode on and
    the metrics server started; the port it listens on, or None when not served."""
    global _directory
    if not settings.worker_metrics_port:
        return None
    if metrics.cache_info().currsize:  # values already made in memory would not reach the files
        log.warning("worker_metrics_late", hint="metrics were used before the worker started; not served")
        return None
    _directory = tempfile.mkdtemp(prefix="memq-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _directory  # inherited by the pool processes
    values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]  # prometheus-client's multiprocess parts are unannotated
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=_directory)  # type: ignore[no-untyped-call]  # prometheus-client's multiprocess parts are unannotated
    try:
        start_http_server(settings.worker_metrics_port, settings.worker_metrics_address, registry=registry)
    except OSError as exc:  # the port is taken (another worker on this host): work on, unscraped
        log.warning(
            "worker_metrics_not_served",
            port=settings.worker_metrics_port,
            error=str(exc),
            hint="give each worker on a host its own MEMQ_WORKER_METRICS_PORT",
        )
        return None
    log.info("worker_metrics_served", port=settings.worker_metrics_port, directory=_directory)
    return settings.worker_metrics_port


def process_exiting() -> None:
    """In a pool process that is exiting: its live values are no longer current."""
    if _directory is not None:
        multiprocess.mark_process_dead(os.getpid(), path=_directory)  # type: ignore[no-untyped-call]  # prometheus-client's multiprocess parts are unannotated


def stop() -> None:
    """In the main process, at shutdown: the value files go with the worker."""
    if _directory is not None:
        shutil.rmtree(_directory, ignore_errors=True)


def task_started(task_id: str | None) -> None:
    if task_id:
        _started[task_id] = time.perf_counter()


def task_finished(task_id: str | None, task_name: str | None, state: str | None) -> None:
    started = _started.pop(task_id, None) if task_id else None
    if started is not None and task_name:
        seconds = time.perf_counter() - started
        metrics().task_seconds.labels(task=task_name, state=state or "UNKNOWN").observe(seconds)
