"""Which failures mean a server has no room to write: the one reading of them that the
producer, the API and the workers share (the producer refuses clearly, the workers retry,
both count it in ``memq_storage_full_total``).

Duck-typed on the error, so the thin producer needs no PostgreSQL driver: a Redis reply
error is known by its code (the first word), a PostgreSQL one by its SQLSTATE or, where
PostgreSQL reports a file it cannot extend under another code (a file-size limit: EFBIG),
by its message.
"""

from __future__ import annotations

REDIS_OUT_OF_MEMORY = "redis_out_of_memory"
REDIS_CANNOT_PERSIST = "redis_cannot_persist"
POSTGRES_DISK_FULL = "postgres_disk_full"

WHAT = {
    REDIS_OUT_OF_MEMORY: "Redis is at its maxmemory and refuses writes (maxmemory-policy noeviction)",
    REDIS_CANNOT_PERSIST: "Redis cannot write its append-only file or snapshot to disk and refuses writes (MISCONF)",
    POSTGRES_DISK_FULL: "PostgreSQL cannot extend its files (disk full or file-size limit)",
}

_POSTGRES_CODES = {"53100"}  # disk_full
_POSTGRES_WORDS = ("could not extend file", "No space left on device", "File too large")
# redis-py puts this before a pipeline command's error: "Command # 1 (HSET ...) of pipeline caused error: MISCONF ..."
_PIPELINE = " of pipeline caused error: "


def storage_full_cause(exc: BaseException) -> str | None:
    """The cause (a constant above) when ``exc`` says a server has no room, else None."""
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate is not None:
        if sqlstate in _POSTGRES_CODES or any(word in str(exc) for word in _POSTGRES_WORDS):
            return POSTGRES_DISK_FULL
        return None
    # A reply error starts with its code; raised inside a script, Redis wraps it ("Error
    # running script ...: -OOM command not allowed ...").
    if not type(exc).__module__.startswith("redis"):
        return None
    text = str(exc).split(_PIPELINE, 1)[-1]
    if type(exc).__name__ == "OutOfMemoryError" or text.startswith("OOM ") or "-OOM " in text:
        return REDIS_OUT_OF_MEMORY
    if text.startswith("MISCONF ") or "-MISCONF " in text:
        return REDIS_CANNOT_PERSIST
    return None


def storage_full_text(cause: str) -> str:
    return WHAT.get(cause, cause)
