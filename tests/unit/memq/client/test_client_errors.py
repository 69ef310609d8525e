"""The API's error answers as exceptions: the class by status (a 429 also by type), the
API's type, message and field carried, Retry-After read, anything that is not the API's
error still an error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from memq.client import (
    AuthError,
    BadRequest,
    ClientError,
    Conflict,
    MemqError,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RequestTooLarge,
    ServerError,
    ServiceUnavailable,
    UnexpectedResponse,
)
from memq.client.errors import error_from_response, parse_retry_after


def answer(status: int, error: dict | None = None, *, headers: dict[str, str] | None = None, text: str | None = None):
    request = httpx.Request("POST", "http://memq.test/v1/conversations/c/messages")
    if text is not None:
        return httpx.Response(status, text=text, headers=headers, request=request)
    return httpx.Response(status, json={"error": error}, headers=headers, request=request)


@pytest.mark.parametrize(
    ("status", "kind", "cls"),
    [
        (400, "validation", BadRequest),
        (401, "unauthorized", AuthError),
        (403, "forbidden", AuthError),
        (404, "not_found", NotFound),
        (405, "method_not_allowed", ClientError),
        (409, "rejected", Conflict),
        (413, "request_too_large", RequestTooLarge),
        (415, "unsupported_media_type", BadRequest),
        (429, "rate_limited", RateLimited),
        (429, "quota_exceeded", QuotaExceeded),
        (500, "internal", ServerError),
        (502, "bad_gateway", ServerError),
        (503, "unavailable", ServiceUnavailable),
        (503, "storage_full", ServiceUnavailable),
    ],
)
def test_each_status_has_its_class_and_carries_the_apis_fields(status, kind, cls):
    error = error_from_response(answer(status, {"type": kind, "message": "what went wrong", "field": "query"}))
    assert type(error) is cls and isinstance(error, MemqError)
    assert (error.status, error.type, error.message, error.field) == (status, kind, "what went wrong", "query")
    assert (error.method, error.url) == ("POST", "http://memq.test/v1/conversations/c/messages")
    assert str(error) == f"{status} {kind}: what went wrong (field query)"


def test_a_refused_batch_carries_its_results_and_extra_keys_are_kept():
    error = error_from_response(
        answer(
            409,
            {
                "type": "rejected",
                "message": "out of order",
                "field": "messages[1].timestamp",
                "results": [
                    {"index": 0, "status": "accepted", "message_id": "m1"},
                    {"index": 1, "status": "rejected", "message_id": "m2"},
                ],
            },
        )
    )
    assert isinstance(error, Conflict) and error.field == "messages[1].timestamp"
    assert error.results is not None and [r.status for r in error.results] == ["accepted", "rejected"]
    refused = error_from_response(
        answer(400, {"type": "destination_refused", "message": "private", "field": "url", "rule": "private"})
    )
    assert refused.detail["rule"] == "private" and refused.type == "destination_refused"


def test_retry_after_is_read_from_the_answer():
    error = error_from_response(
        answer(503, {"type": "busy", "message": "m", "field": None}, headers={"Retry-After": "5"})
    )
    assert isinstance(error, ServiceUnavailable) and error.retry_after == 5.0
    assert error_from_response(answer(429, {"type": "t", "message": "m", "field": None})).retry_after is None


def test_a_quota_reached_is_its_own_error_with_the_limit_and_its_setting():
    error = error_from_response(
        answer(
            429,
            {
                "type": "quota_exceeded",
                "message": "the tenant's quota of 1000 messages a day is reached",
                "field": None,
                "limit": "messages_per_day",
                "setting": "MEMQ_QUOTA_MESSAGES_PER_DAY",
                "results": [{"index": 0, "status": "rejected", "message_id": "m1"}],
            },
        )
    )
    assert isinstance(error, QuotaExceeded) and isinstance(error, ClientError)
    assert not isinstance(error, RateLimited)  # not a wait: the client never retries it
    assert (error.limit, error.setting, error.retry_after) == ("messages_per_day", "MEMQ_QUOTA_MESSAGES_PER_DAY", None)
    assert error.results is not None and [r.status for r in error.results] == ["rejected"]
    bare = error_from_response(answer(429, {"type": "quota_exceeded", "message": "m", "field": None}))
    assert isinstance(bare, QuotaExceeded) and (bare.limit, bare.setting) == (None, None)
    rate = error_from_response(
        answer(429, {"type": "rate_limited", "message": "m", "field": None}, headers={"Retry-After": "2"})
    )
    assert type(rate) is RateLimited and rate.retry_after == 2.0
    proxy = error_from_response(answer(429, text="Too Many Requests"))  # not the API's: a rate, not a quota
    assert type(proxy) is RateLimited and proxy.type == "http_error"


def test_storage_full_is_a_service_unavailable_naming_its_cause():
    error = error_from_response(
        answer(
            503,
            {
                "type": "storage_full",
                "message": "Redis is at its maxmemory and refuses writes: nothing was written; try again later",
                "field": None,
                "cause": "redis_out_of_memory",
            },
            headers={"Retry-After": "10"},
        )
    )
    assert type(error) is ServiceUnavailable and error.type == "storage_full"
    assert error.detail["cause"] == "redis_out_of_memory" and error.retry_after == 10.0


def test_an_answer_that_is_not_the_apis_error_is_still_an_error_of_its_status():
    error = error_from_response(answer(502, text="<html>Bad Gateway from the proxy</html>"))
    assert isinstance(error, ServerError) and error.status == 502 and error.type == "http_error"
    assert "Bad Gateway" in error.message and error.field is None
    odd = error_from_response(answer(400, text='{"detail": "not memq"}'))
    assert isinstance(odd, BadRequest) and odd.type == "http_error"


def test_retry_after_seconds_and_http_dates():
    now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert parse_retry_after("7") == 7.0 and parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(later, now=now.timestamp()) == pytest.approx(90.0)
    assert parse_retry_after(format_datetime(now - timedelta(hours=1), usegmt=True), now=now.timestamp()) == 0.0
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None and parse_retry_after("nan") is None


def test_an_unexpected_response_is_a_memq_error():
    assert issubclass(UnexpectedResponse, MemqError)
