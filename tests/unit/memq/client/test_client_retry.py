"""The client's retry policy as a function: what is retried (a request rate reached and a
storage full are, a tenant quota reached never is), how many times, how long it waits
(exponential, jittered, never under the server's Retry-After, bounded)."""

from __future__ import annotations

import pytest

from memq.client import (
    BadRequest,
    Conflict,
    MemqError,
    NetworkError,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RequestTimeout,
    Retries,
    ServerError,
    ServiceUnavailable,
)
from memq.client.retry import retry_delay

POLICY = Retries(attempts=4, backoff=0.5, backoff_max=8.0, retry_after_max=30.0)


@pytest.mark.parametrize(
    "error",
    [
        NetworkError("refused", type="connection"),
        RequestTimeout("slow", type="timeout"),
        RateLimited("slow down", status=429, type="rate_limited"),
        ServerError("bad gateway", status=502),
        ServiceUnavailable("busy", status=503, type="busy"),
        ServiceUnavailable("Redis is full", status=503, type="storage_full", retry_after=10.0),
        ServerError("gateway timeout", status=504),
    ],
)
def test_no_answer_and_429_502_503_504_are_retried(error):
    assert retry_delay(POLICY, 1, error, 0.5) is not None


@pytest.mark.parametrize(
    "error",
    [
        BadRequest("bad", status=400, type="validation"),
        NotFound("none", status=404),
        Conflict("refused", status=409, type="rejected"),
        ServerError("boom", status=500),
        QuotaExceeded("the day's quota is reached", status=429, type="quota_exceeded"),
        MemqError("https only", type="invalid_request"),
    ],
)
def test_what_a_retry_cannot_cure_is_raised_at_once(error):
    assert retry_delay(POLICY, 1, error, 0.5) is None


def test_attempts_are_bounded():
    error = NetworkError("refused")
    assert [retry_delay(POLICY, attempt, error, 1.0) is not None for attempt in (1, 2, 3, 4, 5)] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert retry_delay(Retries.none(), 1, error, 1.0) is None


def test_the_wait_doubles_up_to_the_cap_with_jitter_between_half_and_all():
    error = NetworkError("refused")
    policy = Retries(attempts=10, backoff=0.5, backoff_max=3.0)
    highest = [retry_delay(policy, attempt, error, 1.0) for attempt in range(1, 7)]
    lowest = [retry_delay(policy, attempt, error, 0.0) for attempt in range(1, 7)]
    assert highest == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]
    assert lowest == [0.25, 0.5, 1.0, 1.5, 1.5, 1.5]
    middle = retry_delay(policy, 2, error, 0.5)
    assert middle is not None and 0.5 < middle < 1.0


def test_retry_after_is_a_floor_and_too_long_a_one_is_not_waited_for():
    assert retry_delay(POLICY, 1, ServiceUnavailable("busy", status=503, retry_after=5.0), 1.0) == 5.0
    assert retry_delay(POLICY, 3, RateLimited("slow", status=429, retry_after=0.1), 1.0) == 2.0  # backoff is longer
    assert retry_delay(POLICY, 1, RateLimited("slow", status=429, retry_after=3600.0), 1.0) is None


def test_a_quota_reached_is_never_retried_whatever_the_policy_or_the_answer_says():
    quota = QuotaExceeded("the day's quota is reached", status=429, type="quota_exceeded")
    assert retry_delay(Retries(attempts=10, statuses=frozenset({429})), 1, quota, 0.0) is None
    told = QuotaExceeded("quota", status=429, type="quota_exceeded", retry_after=1.0)  # were one ever sent
    assert retry_delay(POLICY, 1, told, 0.0) is None
    assert retry_delay(POLICY, 1, RateLimited("slow", status=429, type="rate_limited", retry_after=1.0), 0.0) == 1.0


def test_storage_full_waits_its_retry_after():
    full = ServiceUnavailable("PostgreSQL's disk is full", status=503, type="storage_full", retry_after=10.0)
    assert [retry_delay(POLICY, attempt, full, 1.0) for attempt in (1, 2, 3, 4)] == [10.0, 10.0, 10.0, None]


def test_the_statuses_are_the_policys():
    policy = Retries(statuses=frozenset({503}))
    assert retry_delay(policy, 1, RateLimited("slow", status=429), 0.0) is None
    assert retry_delay(policy, 1, ServiceUnavailable("busy", status=503), 0.0) is not None


def test_a_policy_is_checked():
    with pytest.raises(ValueError, match="attempts"):
        Retries(attempts=0)
    with pytest.raises(ValueError, match="negative"):
        Retries(backoff=-1)
