"""Which failures are the world's fault and which are the input's.

Transient failures (a server down or restarting, a network timeout, a rate limit) say
nothing about the message or segment being processed: the work is retried with
backoff for as long as it takes and never counted against the input. Anything else
is treated as deterministic: counted against the unit that was being processed, and
after ``MEMQ_QUARANTINE_AFTER_FAILURES`` in a row the unit is moved to the quarantine
so that the rest of the conversation carries on.
"""

from __future__ import annotations

import random

import psycopg
import redis
from billiard.exceptions import SoftTimeLimitExceeded

# "Stop now" signals, never a failure of the input: Celery's soft time limit.
STOP: tuple[type[BaseException], ...] = (SoftTimeLimitExceeded,)

_TRANSIENT_TYPES: tuple[type[BaseException], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.BusyLoadingError,
    redis.ReadOnlyError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ClusterDownError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
    ConnectionError,
    TimeoutError,
)


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, _TRANSIENT_TYPES):
        return True
    if isinstance(exc, redis.ResponseError) and str(exc).startswith(("OOM", "LOADING", "MASTERDOWN", "CLUSTERDOWN")):
        return True
    status = getattr(exc, "status_code", None)  # litellm / HTTP errors (remote embeddings)
    if isinstance(status, int) and (status in (408, 409, 425, 429) or status >= 500):
        return True
    name = type(exc).__name__
    return name in {"APIConnectionError", "Timeout", "APITimeoutError", "RateLimitError", "ServiceUnavailableError"}


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:2000] if text else type(exc).__name__


def backoff_seconds(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with jitter: base x 2^attempt, at most cap."""
    seconds: float = min(cap, base * 2 ** max(0, attempt)) * (0.75 + random.random() / 2)
    return seconds
