"""Every endpoint end to end on real Redis, PostgreSQL and a Celery worker: messages in,
episodes made by the worker, then retrieval, recent memory, manifest (cached, and
invalidated by a new episode), session context, and forget leaving nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from helpers import START, messages
from invariants import traces

pytestmark = pytest.mark.integration


def test_a_conversation_over_http_from_messages_to_forget(client, auth, worker, producer, tenant, db):
    conv = "trip-and-garden"
    url = f"/v1/conversations/{conv}"
    # The worker answers a ping now, while idle (a solo pool answers only between tasks, and
    # the drain of these messages starts at once); the API remembers the answer for 10 s.
    assert client.app.state.services.producer.worker_answers(timeout=5.0)
    r = client.post(f"{url}/messages", json={"messages": messages()}, headers=auth)
    assert r.status_code == 202, r.text
    assert [x["status"] for x in r.json()["results"]] == ["accepted"] * 8
    assert [x["message_id"] for x in r.json()["results"]][:2] == ["m-g0", "m-g1"]

    again = client.post(f"{url}/messages", json=messages()[0], headers=auth)  # the one-message form, re-sent
    assert again.status_code == 202 and again.json()["results"] == [
        {"index": 0, "status": "duplicate", "message_id": "m-g0"}
    ]

    flushed = client.post(f"{url}/flush", headers=auth).json()
    assert flushed == {"conversation_id": conv, "flushed": True, "warning": None, "idle": None}  # the worker answered
    producer.wait_idle(conv, tenant=tenant, timeout=120)

    episodes = client.get(f"{url}/episodes", headers=auth).json()["episodes"]
    assert len(episodes) == 2 and sum(e["message_count"] for e in episodes) == 8
    assert episodes[1]["boundary_reason"] in ("time_boundary", "flush")

    md = client.post(
        "/v1/memory/retrieve",
        json={
            "query": "which seat on the train to Hamburg?",
            "conversation_id": conv,
            "now": (START + timedelta(days=1)).isoformat(),
        },
        headers=auth,
    )
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert "seat 54" in md.text
    raw = client.post(
        "/v1/memory/retrieve/raw",
        json={
            "query": "compost for the beds",
            "detail": "high",
            "max_tokens": 300,
            "now": (START + timedelta(days=1)).isoformat(),
        },
        headers=auth,
    ).json()
    assert raw["memories"][0]["id"] == episodes[0]["id"] and raw["tokens"] <= 300
    assert {"rrf", "retrievability", "final", "vector_rank", "lexical_rank"} <= set(raw["memories"][0]["scores"])

    recent = client.post(
        "/v1/memory/recent/raw",
        json={"conversation_id": conv, "days": 30, "now": (START + timedelta(days=1)).isoformat()},
        headers=auth,
    ).json()
    assert [m["id"] for m in recent["memories"]] == [episodes[1]["id"], episodes[0]["id"]]
    assert client.post("/v1/memory/recent", json={"conversation_id": conv, "days": 30}, headers=auth).status_code == 200

    first = client.get(f"{url}/manifest", headers=auth).json()
    assert first["cached"] is False and first["total_episodes"] == 2
    assert [s["id"] for g in first["groups"] for s in g["segments"]] == [episodes[1]["id"], episodes[0]["id"]]
    second = client.get(f"{url}/manifest", params={"timezone": "Europe/Berlin"}, headers=auth).json()
    assert second["cached"] is True and second["timezone"] == "Europe/Berlin"
    tree = client.get(f"{url}/manifest", params={"format": "markdown"}, headers=auth)
    assert tree.text.startswith("CONVERSATION MANIFEST\n") and "[09:00 - 09:03]" in tree.text

    later = [
        {
            "role": "user",
            "content": "One more thing about the train: is there a dining car on ICE 1004?",
            "timestamp": (START + timedelta(hours=6)).isoformat(),
            "metadata": {"name": "Ana"},
        },
        {
            "role": "assistant",
            "content": "Yes, the dining car is coach 9, open until 21:00.",
            "timestamp": (START + timedelta(hours=6, minutes=1)).isoformat(),
            "metadata": {"name": "Bo"},
        },
    ]
    assert client.post(f"{url}/messages", json={"messages": later}, headers=auth).status_code == 202
    active = client.get(f"{url}/manifest", headers=auth).json()
    assert active["groups"][0]["segments"][0]["status"] == "active"  # not yet in an episode
    context = client.get(f"{url}/context", headers=auth).json()
    assert context["open_segment"] and "## Open segment (not yet in an episode)" in context["text"]
    assert "[Earlier conversation: 2 episodes are stored as memories" in context["text"]
    assert context["summaries"] and context["continuity"][-1]["content"].startswith("Done: ICE 1011")
    assert "3 hours 57 minutes since the last message" in context["text"]

    client.post(f"{url}/flush", headers=auth)
    producer.wait_idle(conv, tenant=tenant, timeout=120)
    third = client.get(f"{url}/manifest", headers=auth).json()
    assert third["cached"] is False and third["total_episodes"] == 3  # the new episode invalidated the cache

    gone = client.delete(url, headers=auth)
    assert gone.status_code == 200 and gone.json() == {
        "conversation_id": conv,
        "forgotten": True,
        "episodes": 3,
        "messages": 10,
    }
    assert traces(db, producer.redis, tenant, conv) == []
    assert client.delete(url, headers=auth).json()["forgotten"] is False  # idempotent
    forgotten = client.get(f"{url}/episodes", headers=auth)  # a forgotten conversation is not known any more
    assert forgotten.status_code == 404 and forgotten.json()["error"]["field"] == "conversation_id"


def test_health_and_readiness(client, worker):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert {name: c["ok"] for name, c in ready.json()["checks"].items()} == {
        "redis": True,
        "postgres": True,
        "workers": True,
    }


def test_readiness_needs_redis_and_postgresql_not_a_worker(client):
    """A load balancer keeps the API in service while the workers restart: it accepts
    messages and serves memory without them. Whether a worker answers is still reported."""
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.text
    checks = ready.json()["checks"]
    assert checks["redis"]["ok"] and checks["postgres"]["ok"] and "workers" in checks


def test_openapi_document_is_valid_and_versioned(client):
    from openapi_spec_validator import validate

    spec = client.get("/openapi.json").json()
    validate(spec)
    assert all(path.startswith("/v1/") or path in ("/healthz", "/readyz") for path in spec["paths"])
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    assert client.get("/docs").status_code == 200


@pytest.mark.parametrize(
    "method, path, body, status, field",
    [
        ("post", "/v1/memory/retrieve", {"query": ""}, 400, "query"),
        ("post", "/v1/memory/retrieve", {"query": "x" * 5000}, 400, "query"),
        ("post", "/v1/memory/retrieve", {"query": "q", "max_tokens": 10}, 400, "max_tokens"),
        ("post", "/v1/memory/retrieve", {"query": "q", "detail": "everything"}, 400, "detail"),
        ("post", "/v1/memory/retrieve", {"query": "q", "time_range": {"start": "yesterday"}}, 400, "time_range.start"),
        ("post", "/v1/memory/retrieve", {"query": 42}, 400, "query"),
        ("post", "/v1/memory/retrieve", {"query": "q", "conversation_id": "../etc"}, 400, "conversation_id"),
        ("post", "/v1/memory/retrieve", {"query": "q", "colour": "red"}, 400, "colour"),
        ("post", "/v1/memory/recent", {"conversation_id": "c", "days": 0}, 400, "days"),
        ("post", "/v1/conversations/c/messages", {"messages": []}, 400, "messages"),
        ("post", "/v1/conversations/c/messages", {"role": "robot", "content": "hi"}, 400, "messages[0].role"),
        (
            "post",
            "/v1/conversations/c/messages",
            {"role": "user", "content": "hi", "timestamp": "2026-01-01T00:00:00"},
            400,
            "messages[0].timestamp",
        ),
        (
            "post",
            "/v1/conversations/c/messages",
            {"messages": [{"role": "user", "content": "ok"}, {"role": "user"}]},
            400,
            "messages[1].content",
        ),
        (
            "post",
            "/v1/conversations/c/messages",
            {"role": "user", "content": "hi", "conversation_id": "other"},
            400,
            "messages[0].conversation_id",
        ),
        ("post", "/v1/conversations/-bad/messages", {"role": "user", "content": "hi"}, 400, "conversation_id"),
        ("get", "/v1/conversations/c/manifest?depth=0", None, 400, "depth"),
        ("get", "/v1/conversations/c/manifest?timezone=Mars/Olympus", None, 400, "timezone"),
        ("get", "/v1/conversations/c/context?max_tokens=5", None, 400, "max_tokens"),
        ("get", "/v1/conversations/c/context?format=xml", None, 400, "format"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_field_and_writes_nothing(
    client, auth, producer, tenant, method, path, body, status, field
):
    r = getattr(client, method)(path, headers=auth, **({"json": body} if body is not None else {}))
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["field"] == field and error["message"], error
    assert producer.status("c", tenant=tenant).inbox == 0


def test_oversized_bodies_and_batches(client, auth, settings, producer, tenant):
    big = client.post(
        "/v1/conversations/c/messages",
        content=b"{" + b" " * settings.api_max_body_bytes + b"}",
        headers={**auth, "content-type": "application/json"},
    )
    assert big.status_code == 413 and big.json()["error"]["type"] == "request_too_large"
    many = [{"role": "user", "content": f"message {i}"} for i in range(settings.api_max_batch + 1)]
    r = client.post("/v1/conversations/c/messages", json={"messages": many}, headers=auth)
    assert r.status_code == 400 and r.json()["error"]["field"] == "messages"
    assert producer.status("c", tenant=tenant).inbox == 0


def test_out_of_order_timestamps_are_clamped_and_reported(client, auth):
    ts = START.isoformat()
    earlier = (START - timedelta(minutes=5)).isoformat()
    r = client.post(
        "/v1/conversations/clock/messages",
        headers=auth,
        json={
            "messages": [
                {"role": "user", "content": "first", "timestamp": ts},
                {"role": "user", "content": "second", "timestamp": earlier},
            ]
        },
    )
    assert [x["status"] for x in r.json()["results"]] == ["accepted", "clamped"]


def test_metrics_export_the_backlog_in_prometheus_text(client):
    from prometheus_client.parser import text_string_to_metric_families

    r = client.get("/metrics")  # no key: counts only, like the health checks
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    assert {"memq_backlog", "memq_inbox_messages", "memq_queued_tasks", "memq_backlog_oldest_age_seconds"} <= set(
        families
    )
    (backlog,) = families["memq_backlog"].samples
    queued = {s.labels["queue"]: s.value for s in families["memq_queued_tasks"].samples}
    (inbox,) = families["memq_inbox_messages"].samples
    assert backlog.value == inbox.value + sum(queued.values())
