"""structlog configuration: JSON in production (MEMQ_LOG_FORMAT=json), readable
console lines otherwise. stdlib logging (Celery's own lines included) goes through
the same renderer, so one process writes one format; every line logged while a task runs
carries task_id, task_name, tenant and conversation_id (memq.worker.app binds them), and
Celery's own task lines their task_id and task_name."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

import structlog
from structlog.typing import EventDict

from memq.shared.settings import Settings

_configured = False


def celery_task_fields(_: Any, __: str, event: EventDict) -> EventDict:
    """Celery's own task lines ("Task ... received", "... succeeded in ...") pass the task's
    id and name as their format arguments: bound as task_id / task_name, as memq's lines
    have them, so one filter on a task id finds both."""
    record = event.get("_record")
    data = getattr(record, "args", None)
    if isinstance(data, Mapping) and "id" in data and "name" in data:
        event.setdefault("task_id", data["id"])
        event.setdefault("task_name", data["name"])
    return event


def _traceback_without_locals() -> structlog.typing.ExceptionRenderer:
    """Tracebacks in the console without the frames' variables: those hold message text,
    bearer keys and request headers, which no log line may carry."""
    if structlog.dev.rich is None:  # rich is optional
        return structlog.dev.plain_traceback
    return structlog.dev.RichTracebackFormatter(show_locals=False)


def configure_logging(settings: Settings, *, force: bool = False) -> None:
    global _configured
    if _configured and not force:
        return
    shared_processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer = (
        structlog.processors.JSONRenderer()
        if settings.log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty(), exception_formatter=_traceback_without_locals())
    )
    structlog.configure(
        # below the level, an event is dropped before any processor runs (debug lines on hot paths cost nothing)
        processors=[
            structlog.stdlib.filter_by_level,
            *shared_processors,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared_processors, celery_task_fields],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info if settings.log_format == "json" else (lambda _, __, e: e),
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
    logging.captureWarnings(True)  # Python warnings as log lines too: one format per process
    for noisy in ("httpx", "LiteLLM", "litellm", "urllib3", "alembic"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    _configured = True
