"""What ``memq beat`` sends, and how often: the periodic tasks of ``memq.worker.tasks.maintenance``
and ``memq.worker.tasks.webhooks``, from the settings (pure: the app reads it at start)."""

from __future__ import annotations

from typing import Any

from memq.shared import tasks
from memq.shared.settings import Settings

PRUNE_ACTIVITY_SECONDS = 3600.0


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    """What ``memq beat`` sends, and how often (seconds)."""
    schedule: dict[str, dict[str, Any]] = {
        "collapse-idle-conversations": {"task": tasks.COLLAPSE_IDLE, "schedule": settings.collapse_check_seconds},
        "sweep-stalled-work": {
            "task": tasks.SWEEP_STALLED,
            "schedule": max(5.0, min(60.0, settings.stalled_after_seconds / 2)),
        },
        "sweep-webhook-outbox": {"task": tasks.WEBHOOK_SWEEP, "schedule": settings.webhook_sweep_seconds},
    }
    if settings.activity_retention_days > 0:
        schedule["prune-activity-log"] = {"task": tasks.PRUNE_ACTIVITY, "schedule": PRUNE_ACTIVITY_SECONDS}
    return schedule
