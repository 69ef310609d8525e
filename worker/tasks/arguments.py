"""Task arguments are input too: a task published by hand, by an older producer or by
a bug must be refused clearly, never acted on with a malformed id."""

from __future__ import annotations

import uuid
from typing import Any

import structlog

from shared.errors import ValidationError
from shared.ids import check_conversation_id, check_tenant
from shared.settings import Settings

log = structlog.get_logger("memq.tasks")


def conversation_args(settings: Settings, tenant: object, conversation_id: object) -> tuple[str, str]:
    return check_tenant(tenant), check_conversation_id(conversation_id, settings.conversation_id_max_length)


def episode_arg(value: object) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise ValidationError(f"{str(value)[:60]!r} is not an episode id (a UUID)", field="episode_id") from None


def refused(exc: ValidationError) -> dict[str, Any]:
    """What a task with malformed arguments does: log it and drop the task."""
    log.error("invalid_task_arguments", error=str(exc), hint="task dropped; publish tasks through memq's producer")
    return {"status": "invalid", "error": str(exc)}
