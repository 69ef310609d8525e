"""A retrieval request is validated at the edge, like the producer's input: every refusal
is a ``ValidationError`` naming the field and saying what is allowed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memq.memory.retrieval.request import TimeRange, build_request
from memq.shared.errors import ValidationError
from memq.shared.settings import Settings


@pytest.fixture(scope="module")
def cfg() -> Settings:
    # explicit limits so that the parametrised edges below stay edges whatever the environment says
    return Settings(
        tenant="acme",
        retrieval_limit=10,
        retrieval_limit_max=50,
        retrieval_max_tokens=1500,
        retrieval_max_tokens_max=16_000,
        query_max_chars=2000,
        retrieval_max_conversations=100,
    )


def refused(cfg: Settings, field: str, **kw) -> str:
    kw.setdefault("tenant", None)
    kw.setdefault("query", "what did we plant?")
    with pytest.raises(ValidationError) as info:
        build_request(cfg, **kw)
    assert info.value.field == field, str(info.value)
    assert str(info.value).startswith(f"{field}: ")
    return str(info.value)


def test_defaults_come_from_settings(cfg):
    now = datetime(2023, 5, 24, 12, tzinfo=UTC)
    r = build_request(cfg, tenant=None, query="  what   did\nwe plant? ", now=now)
    assert (r.tenant, r.conversation_ids, r.query) == ("acme", None, "what did we plant?")
    assert (r.limit, r.detail, r.max_tokens, r.time_range, r.now) == (
        cfg.retrieval_limit,
        "auto",
        cfg.retrieval_max_tokens,
        None,
        now,
    )


@pytest.mark.parametrize("query", ["", "   ", "\n\t \u00a0"])
def test_an_empty_query_is_refused(cfg, query):
    assert refused(cfg, "query", query=query) == "query: is empty: say what to remember"


def test_an_oversized_query_is_refused_with_the_limit_and_its_setting(cfg):
    message = refused(cfg, "query", query="x" * (cfg.query_max_chars + 1))
    assert f"is {cfg.query_max_chars + 1} characters; at most {cfg.query_max_chars}" in message
    assert "MEMQ_QUERY_MAX_CHARS" in message
    assert build_request(cfg, tenant=None, query="x" * cfg.query_max_chars).query == "x" * cfg.query_max_chars


@pytest.mark.parametrize(
    "query, says",
    [(None, "must be a string"), (42, "must be a string"), ("a\x00b", "NUL"), ("a\ud800b", "surrogate")],
)
def test_queries_that_are_not_clean_text_are_refused(cfg, query, says):
    assert says in refused(cfg, "query", query=query)


@pytest.mark.parametrize("limit", [0, -1, 51, True, "5", 2.0])
def test_bad_limits_are_refused(cfg, limit):
    assert f"from 1 to {cfg.retrieval_limit_max}" in refused(cfg, "limit", limit=limit)


@pytest.mark.parametrize("detail", ["medium", "", None, "HIGH"])
def test_bad_details_are_refused(cfg, detail):
    assert "is not one of none, low, high, auto" in refused(cfg, "detail", detail=detail)


@pytest.mark.parametrize("max_tokens", [0, 49, 16_001, True, "500", 500.0])
def test_bad_budgets_are_refused(cfg, max_tokens):
    assert f"from 50 to {cfg.retrieval_max_tokens_max}" in refused(cfg, "max_tokens", max_tokens=max_tokens)


@pytest.mark.parametrize(
    "time_range, field, says",
    [
        (("2023-05-02T00:00:00Z", "2023-05-01T00:00:00Z"), "time_range", "start must be before end"),
        (("2023-05-01T00:00:00Z", "2023-05-01T00:00:00Z"), "time_range", "start must be before end"),
        (("2023-05-01T00:00:00Z",), "time_range", "must be [start, end]"),
        ("2023-05-01", "time_range", "must be [start, end]"),
        (("yesterday", None), "time_range.start", "is not an ISO-8601 time"),
        ((None, datetime(2023, 5, 1)), "time_range.end", "timezone-aware"),
        ((None, "2023-05-01T00:00:00"), "time_range.end", "timezone-aware"),
        ((12, None), "time_range.start", "timezone-aware"),
    ],
)
def test_bad_time_ranges_are_refused(cfg, time_range, field, says):
    assert says in refused(cfg, field, time_range=time_range)


def test_time_ranges_are_read_into_utc_and_either_end_may_be_open(cfg):
    r = build_request(cfg, tenant=None, query="q", time_range=["2023-05-01T02:00:00+02:00", None])
    assert r.time_range == TimeRange(datetime(2023, 5, 1, tzinfo=UTC), None)
    r = build_request(cfg, tenant=None, query="q", time_range=(None, "2023-06-01T00:00:00Z"))
    assert r.time_range == TimeRange(None, datetime(2023, 6, 1, tzinfo=UTC))
    window = TimeRange(datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC))
    assert build_request(cfg, tenant=None, query="q", time_range=window).time_range is window


def test_now_must_be_aware_and_is_kept_in_utc(cfg):
    refused(cfg, "now", now=datetime(2023, 5, 1))
    east = datetime(2023, 5, 1, 2, tzinfo=timezone(timedelta(hours=2)))
    assert build_request(cfg, tenant=None, query="q", now=east).now == datetime(2023, 5, 1, tzinfo=UTC)


@pytest.mark.parametrize("tenant", ["a/b", "has space", "x" * 65, "ünï"])
def test_bad_tenants_are_refused(cfg, tenant):
    assert "is not a tenant id" in refused(cfg, "tenant", tenant=tenant)


def test_conversation_id_and_conversation_ids_together_are_refused(cfg):
    message = refused(cfg, "conversation_ids", conversation_id="c1", conversation_ids=["c2"])
    assert "not both" in message


def test_conversation_scopes(cfg):
    assert build_request(cfg, tenant="t1", query="q", conversation_id="c1").conversation_ids == ("c1",)
    assert build_request(cfg, tenant="t1", query="q", conversation_ids=["c2", "c1", "c2"]).conversation_ids == (
        "c2",
        "c1",
    )
    assert "non-empty list" in refused(cfg, "conversation_ids", conversation_ids=[])
    assert "non-empty list" in refused(cfg, "conversation_ids", conversation_ids="c1")
    many = [f"c{i}" for i in range(cfg.retrieval_max_conversations + 1)]
    assert f"at most {cfg.retrieval_max_conversations}" in refused(cfg, "conversation_ids", conversation_ids=many)
    assert "characters outside" in refused(cfg, "conversation_id", conversation_ids=["ok", "not/ok"])
    assert "non-empty string" in refused(cfg, "conversation_id", conversation_id="")
