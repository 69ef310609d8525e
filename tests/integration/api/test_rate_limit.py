"""Per-key rate limits held across API processes through Redis: two apps (as two API
processes would) share one key's budget; beyond it a request gets 429 with Retry-After
naming the limit and its setting, another key is not slowed, and the budget comes back."""

from __future__ import annotations

import dataclasses

import pytest
from waiting import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
def limited(api_services, settings):
    """Two apps with their own limiter each (2 requests a second, 3 at once), one Redis."""
    from fastapi.testclient import TestClient

    from memq.api.app import create_app
    from memq.api.rate_limit import RateLimiter

    tight = settings.model_copy(update={"api_rate_limit_per_second": 2.0, "api_rate_limit_burst": 3})
    clients = []
    for _ in range(2):
        svc = dataclasses.replace(api_services, rate_limiter=RateLimiter(api_services.redis, tight))
        clients.append(TestClient(create_app(settings, services=svc), base_url="http://127.0.0.1"))
    yield clients
    for c in clients:
        c.close()


def test_a_keys_budget_is_shared_across_processes_and_comes_back(limited, auth, stranger):
    one, two = limited
    key, other = auth, stranger[1]
    answers = [c.get("/v1/conversations", headers=key) for c in (one, two, one)]  # the burst of 3, both apps
    assert [a.status_code for a in answers] == [200, 200, 200]
    refused = two.get("/v1/conversations", headers=key)
    assert refused.status_code == 429, refused.text
    error = refused.json()["error"]
    assert error["type"] == "rate_limited" and "MEMQ_API_RATE_LIMIT_PER_SECOND" in error["message"]
    assert int(refused.headers["Retry-After"]) >= 1
    assert one.get("/v1/conversations", headers=other).status_code == 200  # another tenant's key is not slowed

    # at 2 a second, one request's worth comes back within half a second (Redis' clock)
    wait_until(
        lambda: one.get("/v1/conversations", headers=key).status_code == 200,
        5,
        interval=0.1,
        message="the key's budget did not come back",
    )


def test_no_limit_when_set_to_zero(api_services, settings):
    from memq.api.rate_limit import RateLimiter

    off = RateLimiter(api_services.redis, settings.model_copy(update={"api_rate_limit_per_second": 0.0}))
    assert off.limit is None and all(off.wait_ms("key:x") == 0 for _ in range(50))


def test_the_mcp_endpoint_draws_on_the_same_budget(limited, auth):
    one, _ = limited
    assert [one.get("/v1/conversations", headers=auth).status_code for _ in range(3)] == [200, 200, 200]
    r = one.post(
        "/mcp",
        headers={**auth, "accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        follow_redirects=False,
    )
    assert r.status_code == 429 and r.json()["error"]["type"] == "rate_limited", r.text
    assert int(r.headers["retry-after"]) >= 1


def test_a_refused_key_is_refused_again_without_asking_redis(api_services, settings):
    """A flood of refused requests costs no Redis round trip each (the refusal is kept in
    the process until it ends), and the key goes on once it has."""
    from memq.api.rate_limit import RateLimiter

    one_at_a_time = {"api_rate_limit_per_second": 2.0, "api_rate_limit_burst": 1}
    limiter = RateLimiter(api_services.redis, settings.model_copy(update=one_at_a_time))
    asked: list[dict] = []
    script = limiter._script

    def counted(**kw):
        asked.append(kw)
        return script(**kw)

    limiter._script = counted
    caller = f"key:flood-{id(limiter)}"
    assert limiter.wait_ms(caller) == 0
    first = limiter.wait_ms(caller)
    assert 0 < first <= 500
    waits = [limiter.wait_ms(caller) for _ in range(200)]
    assert len(asked) == 2  # the allowed request and the first refusal; the 200 after it: none
    assert all(0 < w <= first for w in waits) and waits == sorted(waits, reverse=True)
    wait_until(lambda: limiter.wait_ms(caller) == 0, 5, interval=0.05, message="the refusal never ended")
    assert len(asked) >= 3  # asked Redis again once the refusal had ended


def test_a_key_still_refused_is_answered_before_its_request_is_read(limited, auth):
    """Once refused, a key's next requests are answered 429 by the gate in front of the
    routes, the same answer, before validation: a body that would be a 400 is a 429 too."""
    one, _ = limited
    answers = [one.get("/v1/conversations", headers=auth) for _ in range(4)]
    routed = answers[-1]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    gated = one.post("/v1/memory/retrieve", content=b"not json", headers={**auth, "content-type": "application/json"})
    assert gated.status_code == 429, gated.text

    def without_wait(answer) -> dict:  # the seconds to wait differ from one answer to the next
        error = answer.json()["error"]
        return {**error, "message": error["message"].rsplit("; retry after", 1)[0]}

    assert without_wait(gated) == without_wait(routed)
    assert gated.json()["error"]["type"] == "rate_limited" and int(gated.headers["Retry-After"]) >= 1


def test_a_key_that_comes_back_before_its_retry_after_is_answered_after_a_hold(api_services, settings, auth):
    """Refused once (by Redis), a key that sends again at once meets the gate, which holds its
    429 MEMQ_API_RATE_LIMIT_HOLD_MS first: a client ignoring Retry-After slows to a few
    requests a second, in a sleeping coroutine."""
    import time

    from fastapi.testclient import TestClient

    from memq.api.app import create_app
    from memq.api.rate_limit import RateLimiter

    held = settings.model_copy(
        update={"api_rate_limit_per_second": 0.5, "api_rate_limit_burst": 1, "api_rate_limit_hold_ms": 300.0}
    )
    svc = dataclasses.replace(api_services, settings=held, rate_limiter=RateLimiter(api_services.redis, held))
    with TestClient(create_app(held, services=svc), base_url="http://127.0.0.1") as client:
        assert client.get("/v1/conversations", headers=auth).status_code == 200
        assert client.get("/v1/conversations", headers=auth).status_code == 429  # the route's check, via Redis
        started = time.monotonic()
        again = client.get("/v1/conversations", headers=auth)
        assert again.status_code == 429 and again.json()["error"]["type"] == "rate_limited"
        assert time.monotonic() - started >= 0.3  # held before it was answered
        assert int(again.headers["Retry-After"]) >= 1


def test_a_batch_spends_the_key_message_rate_by_its_messages(api_services, settings, auth, stranger):
    """A key's message budget (20 at once here) counts each message of a batch: a batch that
    does not fit is refused whole with 429 naming the message rate and nothing is written,
    a smaller one that fits goes on, and neither the key's other routes nor another key are
    held back."""
    from fastapi.testclient import TestClient

    from memq.api.app import create_app

    tight = settings.model_copy(
        update={"api_rate_limit_messages_per_second": 0.5, "api_rate_limit_messages_burst": 20, "api_max_batch": 20}
    )
    svc = dataclasses.replace(api_services, settings=tight)

    def batch(n: int, tag: str) -> dict:
        return {"messages": [{"role": "user", "content": f"{tag} {i}"} for i in range(n)]}

    with TestClient(create_app(tight, services=svc), base_url="http://127.0.0.1") as client:
        assert client.post("/v1/conversations/rate-a/messages", json=batch(15, "a"), headers=auth).status_code == 202
        refused = client.post("/v1/conversations/rate-b/messages", json=batch(10, "b"), headers=auth)
        assert refused.status_code == 429, refused.text
        error = refused.json()["error"]
        assert error["type"] == "rate_limited" and "MEMQ_API_RATE_LIMIT_MESSAGES_PER_SECOND" in error["message"]
        assert int(refused.headers["Retry-After"]) >= 1
        assert client.get("/v1/conversations/rate-b/status", headers=auth).status_code == 404  # nothing written
        assert client.post("/v1/conversations/rate-c/messages", json=batch(5, "c"), headers=auth).status_code == 202
        assert client.get("/v1/conversations", headers=auth).status_code == 200  # the request rate is its own
        other = client.post("/v1/conversations/rate-a/messages", json=batch(20, "x"), headers=stranger[1])
        assert other.status_code == 202, other.text  # another key's budget
