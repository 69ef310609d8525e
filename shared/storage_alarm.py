"""What memq tells the operator when a server has no room to write (Redis at its maxmemory,
Redis or PostgreSQL unable to write to a full disk: ``memq.shared.storage_full``).

memq rides it out (the workers retry, the broker keeps delivering tasks) and nothing is
lost, but only the operator can make room: each refusal met is counted in
``memq_storage_full_total{cause}`` and logged as ``storage_full`` with the cause, what to do
about it, and what became of the work that met it.
"""

from __future__ import annotations

import structlog

from memq.shared.metrics import count_storage_full
from memq.shared.storage_full import (
    POSTGRES_DISK_FULL,
    REDIS_CANNOT_PERSIST,
    REDIS_OUT_OF_MEMORY,
    storage_full_cause,
    storage_full_text,
)

log = structlog.get_logger("memq.storage")

WHAT_TO_DO = {
    REDIS_OUT_OF_MEMORY: "raise Redis' maxmemory or give it more memory (docs/operations.md, storage full)",
    REDIS_CANNOT_PERSIST: "free disk space where Redis writes its append-only file; Redis accepts writes again "
    "by itself once a write succeeds",
    POSTGRES_DISK_FULL: "free or add disk space for PostgreSQL's data directory",
}
RETRIED = "the work is retried with backoff meanwhile and nothing is lost"


def report_storage_full(exc: BaseException, *, stage: str, then: str) -> bool:
    """Count and log ``exc`` when it is a refusal for want of room; whether it was one.
    ``stage``: the work that met it (drain, episode, broker); ``then``: what becomes of it."""
    cause = storage_full_cause(exc)
    if cause is None:
        return False
    count_storage_full(cause)
    error = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    log.warning(
        "storage_full",
        cause=cause,
        stage=stage,
        error=f"{type(exc).__name__}: {error}",
        what=storage_full_text(cause),
        hint=f"{WHAT_TO_DO.get(cause, 'make room')}; {then}",
    )
    return True
