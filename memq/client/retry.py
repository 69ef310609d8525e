"""When the client sends a request again, and after how long: a pure policy (no clock, no
randomness of its own), so it is tested as a function.

Only a call that is safe to repeat is retried (``Operation.retry_safe``): reads, deletes
(forgetting is idempotent), adding messages (the client fixes every message's id before the
first attempt, so a repeat is a ``duplicate``, never a second copy), flush, moving a
conversation to a user (setting it again changes nothing), and import (the API documents it
as idempotent: what is there is skipped). Registering a webhook and asking a delivery to be
sent again are never retried.

A retry-safe call is retried when there was no answer (connection failed or broke, timed
out) or the answer was 429, 502, 503 or 504, at most ``attempts`` attempts in all, waiting
``backoff`` doubling per attempt up to ``backoff_max``, with jitter (a random half of it)
so clients that failed together do not come back together, and never less than the
server's ``Retry-After``. A ``Retry-After`` over ``retry_after_max`` is not waited for: the
error is raised with its ``retry_after`` for the caller to decide.

A 429 is retried only when it is the request rate (``rate_limited``, with its
``Retry-After``): a tenant quota (``quota_exceeded``, :class:`QuotaExceeded`) refuses the
same batch until the day turns or the limit is raised, so it is never retried, whatever
``statuses`` holds. A 503 (``unavailable``, ``busy``, ``incomplete``, ``storage_full``) is
retried after its ``Retry-After``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memq.client.errors import MemqError, NetworkError, QuotaExceeded

__all__ = ["RETRY_STATUSES", "Retries", "retry_delay"]

RETRY_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class Retries:
    attempts: int = 4
    """Attempts of a retry-safe call in all (1: never retry)."""
    backoff: float = 0.5
    """Seconds before the first retry (before jitter); doubled for each one after."""
    backoff_max: float = 8.0
    """The longest computed wait between attempts."""
    retry_after_max: float = 30.0
    """A server's Retry-After longer than this is not waited for (the error is raised)."""
    statuses: frozenset[int] = field(default=RETRY_STATUSES)
    """The answers retried (besides no answer at all; a 429 ``quota_exceeded`` never is)."""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.backoff < 0 or self.backoff_max < 0 or self.retry_after_max < 0:
            raise ValueError("backoff, backoff_max and retry_after_max must not be negative")

    @classmethod
    def none(cls) -> Retries:
        """One attempt: every error is raised at once."""
        return cls(attempts=1)


def retryable(error: MemqError, policy: Retries) -> bool:
    """The error is one a retry may cure (no answer, or a status the policy retries, but
    for a quota reached)."""
    if isinstance(error, QuotaExceeded):
        return False
    return isinstance(error, NetworkError) or (error.status is not None and error.status in policy.statuses)


def retry_delay(policy: Retries, attempt: int, error: MemqError, jitter: float) -> float | None:
    """Seconds to wait before attempt ``attempt + 1`` after attempt ``attempt`` (1-based)
    failed with ``error``; None: do not retry. ``jitter`` is a number in [0, 1] (random in
    the client): the wait is between half and all of the backoff, and at least the error's
    ``retry_after``. The caller has already checked that the call is retry-safe."""
    if attempt >= policy.attempts or not retryable(error, policy):
        return None
    if error.retry_after is not None and error.retry_after > policy.retry_after_max:
        return None
    ceiling = min(policy.backoff_max, policy.backoff * 2.0 ** (attempt - 1))
    wait = ceiling / 2 + ceiling / 2 * min(1.0, max(0.0, jitter))
    if error.retry_after is not None:
        wait = max(wait, error.retry_after)
    return wait
