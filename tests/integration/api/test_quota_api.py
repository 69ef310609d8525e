"""What the API says when a tenant quota or a full Redis refuses a batch: 429
``quota_exceeded`` naming the limit and its setting, without Retry-After (waiting does not
help); 503 ``storage_full`` naming the cause, with Retry-After; nothing of the refused part
written either way. ``GET /v1/quota`` shows the tenant its limits and use."""

from __future__ import annotations

import dataclasses

import pytest

pytestmark = pytest.mark.integration


def _batch(n: int, conversation: str = "q") -> dict:
    return {"messages": [{"role": "user", "content": f"message {i} of {conversation}"} for i in range(n)]}


def test_a_quota_is_refused_with_429_naming_the_limit_and_no_retry_after(client, auth, settings, tenant, api_services):
    from memq.shared.mailbox import quota

    quota.set_limits(api_services.redis, api_services.producer.scripts, settings, tenant, {"messages_per_day": 5})
    assert client.post("/v1/conversations/q/messages", json=_batch(4), headers=auth).status_code == 202
    refused = client.post("/v1/conversations/q/messages", json=_batch(2), headers=auth)
    assert refused.status_code == 429, refused.text
    assert "Retry-After" not in refused.headers
    error = refused.json()["error"]
    assert (error["type"], error["limit"], error["setting"]) == (
        "quota_exceeded",
        "messages_per_day",
        "MEMQ_QUOTA_MESSAGES_PER_DAY",
    )
    assert [r["status"] for r in error["results"]] == ["rejected", "rejected"]
    shown = client.get("/v1/quota", headers=auth).json()
    # today's use counts what shards hold reserved (none here: the refusal took the lease back); stored
    # messages are counted while a stored limit is set
    assert shown == {"messages_per_day": 5, "used_today": 4, "stored_messages": None, "stored": None}
    assert client.post("/v1/conversations/q/messages", json=_batch(1), headers=auth).status_code == 202
    status = client.get("/v1/conversations/q/status", headers=auth).json()
    assert status["accepted"] == 5  # the refused batch wrote nothing


@pytest.fixture
def full_redis(own_redis):
    """A Redis of the test's own at its maxmemory (noeviction): every write refused with OOM."""
    import redis

    client = redis.Redis.from_url(own_redis.url)
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", 1)
    yield own_redis
    client.config_set("maxmemory", 0)


def test_a_full_redis_is_a_503_naming_the_cause_with_retry_after(api_services, settings, auth, full_redis):
    from fastapi.testclient import TestClient

    from memq.api.app import create_app
    from memq.producer.client import Producer
    from memq.shared.connections import mailbox_client
    from memq.shared.metrics import metrics

    counted = metrics().storage_full.labels(cause="redis_out_of_memory")
    before = counted._value.get()
    mailbox = settings.model_copy(update={"mailbox_redis_url": full_redis.url, "mailbox_redis_cluster": False})
    svc = dataclasses.replace(api_services, producer=Producer(mailbox, client=mailbox_client(mailbox)))
    with TestClient(create_app(settings, services=svc), base_url="http://127.0.0.1") as client:
        answer = client.post("/v1/conversations/full/messages", json=_batch(3, "full"), headers=auth)
        exposed = client.get("/metrics", headers=auth).text
    assert answer.status_code == 503, answer.text
    assert int(answer.headers["Retry-After"]) >= 1
    error = answer.json()["error"]
    assert (error["type"], error["cause"]) == ("storage_full", "redis_out_of_memory")
    assert "maxmemory" in error["message"] and "send them again" in error["message"]
    assert [r["status"] for r in error["results"]] == ["rejected"] * 3
    assert counted._value.get() == before + 1  # once, though both the producer and the API saw it
    assert 'memq_storage_full_total{cause="redis_out_of_memory"}' in exposed
    import redis

    assert redis.Redis.from_url(full_redis.url).dbsize() == 0  # nothing written
