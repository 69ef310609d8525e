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

from memq.shared.settings import Settings
from memq.shared.storage_full import storage_full_cause

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
    # A server that is (now) a standby: a primary demoted by a failover, still reached over a
    # kept connection. The connection is dropped with the error (resources._session) and the
    # retry connects to the writable server (target_session_attrs=read-write).
    psycopg.errors.ReadOnlySqlTransaction,
    ConnectionError,
    TimeoutError,
)


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, _TRANSIENT_TYPES):
        return True
    if isinstance(exc, redis.ResponseError) and str(exc).startswith(("OOM", "LOADING", "MASTERDOWN", "CLUSTERDOWN")):
        return True
    if storage_full_cause(exc) is not None:  # no room (Redis full, a disk full): the operator's to fix, then go on
        return True
    status = getattr(exc, "status_code", None)  # litellm / HTTP errors (remote embeddings)
    if isinstance(status, int) and (status in (408, 409, 425, 429) or status >= 500):
        return True
    name = type(exc).__name__
    return name in {"APIConnectionError", "Timeout", "APITimeoutError", "RateLimitError", "ServiceUnavailableError"}


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:2000] if text else type(exc).__name__


def retry_delay(settings: Settings, attempt: int) -> float:
    """The one backoff of every task that runs again: MEMQ_RETRY_BACKOFF_SECONDS, doubling
    with each attempt, at most MEMQ_RETRY_BACKOFF_MAX_SECONDS."""
    return backoff_seconds(attempt, settings.retry_backoff_seconds, settings.retry_backoff_max_seconds)


def gives_up(settings: Settings, exc: BaseException, attempt: int) -> bool:
    """Whether a review or consolidation stops retrying: at once for an error that is not
    transient, after MEMQ_MEMORY_RETRY_LIMIT transient failures in a row otherwise. (Drains
    and episode creation never give up on transient failures: their work is the mailbox's,
    kept until done; a persistent error quarantines it instead.)"""
    return not is_transient(exc) or attempt >= settings.memory_retry_limit


def backoff_seconds(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with jitter: base x 2^attempt, at most cap."""
    seconds: float = min(cap, base * 2 ** max(0, attempt)) * (0.75 + random.random() / 2)
    return seconds
