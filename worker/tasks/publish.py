"""Publishing memq's own tasks from inside a worker (by name, as the producer does)."""

from __future__ import annotations

from shared import tasks
from worker.app import app


def drain(tenant: str, conversation_id: str, *, countdown: float = 0.0, attempt: int = 0) -> None:
    kwargs = {"attempt": attempt} if attempt else {}
    app.send_task(tasks.EVENT_SEGMENTATION, args=[tenant, conversation_id], kwargs=kwargs, countdown=countdown or None)


def episode(tenant: str, conversation_id: str, episode_id: str, *, countdown: float = 0.0, attempt: int = 0) -> None:
    kwargs = {"attempt": attempt} if attempt else {}
    app.send_task(
        tasks.EPISODE_CREATION, args=[tenant, conversation_id, episode_id], kwargs=kwargs, countdown=countdown or None
    )


def review(tenant: str, conversation_id: str, episode_id: str, *, countdown: float = 0.0) -> None:
    app.send_task(tasks.MEMORY_REVIEW, args=[tenant, conversation_id, episode_id], countdown=countdown or None)


def consolidation(tenant: str, conversation_id: str, *, countdown: float = 0.0) -> None:
    app.send_task(tasks.SEMANTIC_CONSOLIDATION, args=[tenant, conversation_id], countdown=countdown or None)
