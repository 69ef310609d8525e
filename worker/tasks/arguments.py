"""Task arguments are input too: a task published by hand, by an older producer or by
a bug must be refused clearly, never acted on with a malformed id."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any

import structlog

from memq.shared.errors import ValidationError
from memq.shared.ids import check_conversation_id, check_tenant
from memq.shared.settings import Settings

log = structlog.get_logger("memq.tasks")


def conversation_args(settings: Settings, tenant: object, conversation_id: object) -> tuple[str, str]:
    return check_tenant(tenant), check_conversation_id(conversation_id, settings.conversation_id_max_length)


# what a task's id argument names, in error messages
_ID_NAMES = {"episode_id": "an episode id", "segment_id": "a segment id"}


def id_arg(value: object, name: str) -> str:
    """A task's UUID argument ``name`` (``episode_id``, ``segment_id``), normalised."""
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        what = _ID_NAMES.get(name, name)
        raise ValidationError(f"{str(value)[:60]!r} is not {what} (a UUID)", field=name) from None


def refused(exc: ValidationError) -> dict[str, Any]:
    """What a task with malformed arguments does: log it and drop the task."""
    log.error("invalid_task_arguments", error=str(exc), hint="task dropped; publish tasks through memq's producer")
    return {"status": "invalid", "error": str(exc)}


TaskBody = Callable[..., dict[str, Any]]


def checked_arguments(*, id_argument: str | None = None) -> Callable[[TaskBody], TaskBody]:
    """Wrap a task body taking ``(tenant, conversation_id[, <id_argument>], ...)``, where
    ``id_argument`` names a UUID (``episode_id``, ``segment_id``): the ids are validated (and
    normalised) before the body runs, and a malformed one drops the task with a clear log
    line instead of reaching the body. Every memq task uses it, so none can forget.

    ``memq.shared.publisher`` sends the ids positionally (only ``attempt`` goes by name), so
    a task's id parameter can be renamed without breaking messages already queued."""

    def wrap(body: TaskBody) -> TaskBody:
        @functools.wraps(body)
        def run(tenant: object, conversation_id: object, *args: Any, **kwargs: Any) -> dict[str, Any]:
            from memq.worker import resources  # the worker's settings, read once per process

            try:
                checked = conversation_args(resources.settings(), tenant, conversation_id)
                if id_argument is not None:
                    value, *rest = args if args else (kwargs.pop(id_argument, None),)
                    args = (id_arg(value, id_argument), *rest)
            except ValidationError as exc:
                return refused(exc)
            return body(*checked, *args, **kwargs)

        return run

    return wrap
