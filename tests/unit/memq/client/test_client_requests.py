"""Client and AsyncClient against a scripted server (httpx.MockTransport): what each call
sends, message ids fixed before the first attempt, what is retried and what is not (a
request rate and a storage full are, a tenant quota is not), errors, the flush's bounded
wait, the export's end record."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest

from memq.client import (
    AsyncClient,
    BadRequest,
    Client,
    MemqError,
    MessageIn,
    NetworkError,
    QuotaExceeded,
    RateLimited,
    RequestTimeout,
    Retries,
    ServiceUnavailable,
    UnexpectedResponse,
)
from memq.client.models import AddResultOut, FlushOut, ImportOut, ReadyOut

Handler = Callable[[httpx.Request], httpx.Response]
BUSY = {"error": {"type": "busy", "message": "a worker holds it; try again", "field": None}}
EXPORT = b'{"type":"header","format":"memq-export"}\n{"type":"conversation"}\n{"type":"end","records":1}\n'


class Server:
    """A scripted API: each request is recorded and answered by the next answer scripted for
    its path (a response, an exception to raise, or a handler), the last one repeating."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.script: dict[str, list[httpx.Response | Exception | Handler]] = {}

    def on(self, path: str, *answers: httpx.Response | Exception | Handler) -> Server:
        self.script[path] = list(answers)
        return self

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answers = self.script.get(request.url.path)
        if not answers:
            return httpx.Response(404, json={"error": {"type": "not_found", "message": "Not Found", "field": None}})
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer if isinstance(answer, httpx.Response) else answer(request)

    def bodies(self) -> list[dict]:
        return [json.loads(r.content) for r in self.requests]


def accept(request: httpx.Request) -> httpx.Response:
    """The messages route: every message accepted under its id."""
    body = json.loads(request.content)
    conversation = request.url.path.split("/")[3]
    results = [
        {"index": i, "status": "accepted", "message_id": m["message_id"]} for i, m in enumerate(body["messages"])
    ]
    return httpx.Response(202, json={"conversation_id": conversation, "results": results})


def client(server: Server, **options) -> tuple[Client, list[float]]:
    slept: list[float] = []
    c = Client("http://memq.test", "memq_k", transport=httpx.MockTransport(server), **options)
    c._sleep = slept.append
    return c, slept


def async_client(server: Server, **options) -> tuple[AsyncClient, list[float]]:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    c = AsyncClient("http://memq.test", "memq_k", transport=httpx.MockTransport(server), **options)
    c._sleep = sleep
    return c, slept


# --- message ids ------------------------------------------------------------------------------


def test_every_message_gets_an_id_before_the_first_attempt_and_keeps_it_on_a_retry():
    incomplete = {"error": {"type": "incomplete", "message": "Redis failed", "field": None}}
    server = Server().on(
        "/v1/conversations/c1/messages",
        httpx.Response(503, json=incomplete, headers={"Retry-After": "0"}),
        httpx.ConnectError("reset"),
        accept,
    )
    c, slept = client(server)
    out = c.add_messages(
        "c1",
        [
            {"role": "user", "content": "Book the 9:40 train."},
            {"role": "assistant", "content": "Booked.", "message_id": "mine-2"},
            MessageIn(role="user", content="Thanks!", timestamp="2026-03-02T09:15:00Z"),
        ],
        user_id="u7",
    )
    first, second, third = server.bodies()
    assert first == second == third  # the same ids every attempt: a repeat is a duplicate, never a copy
    ids = [m["message_id"] for m in first["messages"]]
    assert ids[1] == "mine-2" and len(set(ids)) == 3 and all(ids)
    assert first["user_id"] == "u7" and first["messages"][2]["timestamp"] == "2026-03-02T09:15:00Z"
    assert "metadata" not in first["messages"][2]  # no nulls sent
    assert [r.message_id for r in out.results] == ids and len(slept) == 2


def test_one_message_and_its_result():
    server = Server().on("/v1/conversations/c1/messages", accept)
    c, _ = client(server)
    when = datetime(2026, 3, 2, 9, 15, tzinfo=UTC)
    result = c.add_message("c1", "user", "Hello", timestamp=when, metadata={"name": "Ana"})
    (body,) = server.bodies()
    (message,) = body["messages"]
    assert isinstance(result, AddResultOut) and result.message_id == message["message_id"]
    assert message["timestamp"] == "2026-03-02T09:15:00+00:00" and message["metadata"] == {"name": "Ana"}
    assert c.add_message("c1", "user", "again", message_id="m-9").message_id == "m-9"


def test_a_single_mapping_is_not_taken_for_a_batch():
    c, _ = client(Server())
    with pytest.raises(TypeError, match="add_message"):
        c.add_messages("c1", {"role": "user", "content": "x"})  # type: ignore[arg-type]


# --- what is sent ---------------------------------------------------------------------------------


def test_the_key_and_the_url_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("MEMQ_URL", "http://from-env.test:9000/")
    monkeypatch.setenv("MEMQ_KEY", "memq_env")
    server = Server().on("/healthz", httpx.Response(200, json={"status": "ok"}))
    with Client(transport=httpx.MockTransport(server)) as c:
        assert c.base_url == "http://from-env.test:9000" and c.health().status == "ok"
    (request,) = server.requests
    assert str(request.url) == "http://from-env.test:9000/healthz"
    assert request.headers["authorization"] == "Bearer memq_env"
    assert request.headers["user-agent"].startswith("memq-client/")
    with Client("http://arg.test", "memq_arg", transport=httpx.MockTransport(server)) as c:
        c.health()
    assert server.requests[-1].headers["authorization"] == "Bearer memq_arg"
    monkeypatch.delenv("MEMQ_KEY")
    with Client(transport=httpx.MockTransport(server)) as c:
        c.health()
    assert "authorization" not in server.requests[-1].headers  # no key: none sent (MEMQ_API_AUTH=false)


def test_the_views_ask_for_json_and_send_only_what_is_given():
    empty = httpx.Response(200, json={})
    server = Server().on("/v1/memory/retrieve", empty)
    server.on("/v1/conversations/c:1/manifest", empty).on("/v1/conversations/c:1/context", empty)
    c, _ = client(server)
    with pytest.raises(UnexpectedResponse, match="RetrieveOut"):  # {} is not a RetrieveOut
        c.retrieve(
            "which seat?",
            conversation_id="c:1",
            detail="high",
            time_range=(datetime(2026, 3, 1, tzinfo=UTC), None),
            record=False,
        )
    with pytest.raises(UnexpectedResponse):
        c.manifest("c:1", timezone="Europe/Berlin")
    with pytest.raises(UnexpectedResponse):
        c.context("c:1", max_tokens=500)
    retrieve, manifest, context = server.requests
    assert retrieve.url.params["format"] == "json"
    assert json.loads(retrieve.content) == {
        "query": "which seat?",
        "conversation_id": "c:1",
        "detail": "high",
        "time_range": {"start": "2026-03-01T00:00:00+00:00"},
        "record": False,
    }
    assert manifest.url.raw_path == b"/v1/conversations/c%3A1/manifest?timezone=Europe%2FBerlin&format=json"
    assert dict(context.url.params) == {"max_tokens": "500", "format": "json"}


def test_an_empty_id_is_refused_before_anything_is_sent():
    server = Server()
    c, _ = client(server)
    with pytest.raises(BadRequest) as refused:
        c.manifest("")
    assert refused.value.field == "conversation_id" and refused.value.status is None and server.requests == []


# --- retries ------------------------------------------------------------------------------------


def test_a_retry_safe_call_is_retried_then_raises_the_last_error():
    server = Server().on("/v1/conversations/c1", httpx.Response(503, json=BUSY, headers={"Retry-After": "1"}))
    c, slept = client(server, retries=Retries(attempts=3, backoff=0.1))
    with pytest.raises(ServiceUnavailable) as failed:
        c.forget("c1")
    assert len(server.requests) == 3 and slept == [1.0, 1.0]  # Retry-After is the floor
    assert (failed.value.status, failed.value.type, failed.value.retry_after) == (503, "busy", 1.0)


def test_creating_a_webhook_and_resending_a_delivery_are_never_retried():
    busy = httpx.Response(503, json=BUSY, headers={"Retry-After": "0"})
    server = Server().on("/v1/webhooks", busy).on("/v1/webhooks/deliveries/d1/retry", busy)
    c, slept = client(server)
    with pytest.raises(ServiceUnavailable):
        c.create_webhook("https://example.com/hook", events=["episode.created"])
    with pytest.raises(ServiceUnavailable):
        c.retry_delivery("d1")
    assert len(server.requests) == 2 and slept == []
    assert json.loads(server.requests[0].content) == {
        "url": "https://example.com/hook",
        "content": False,
        "events": ["episode.created"],
    }


def test_no_answer_is_retried_and_raised_as_a_network_error():
    server = Server().on("/v1/conversations/c1/status", httpx.ConnectError("connection refused"))
    c, slept = client(server, retries=2)
    with pytest.raises(NetworkError) as failed:
        c.status("c1")
    assert len(server.requests) == 3 and len(slept) == 2
    assert failed.value.type == "connection" and isinstance(failed.value.__cause__, httpx.ConnectError)
    server.on("/v1/conversations/c1/status", httpx.ReadTimeout("slow"))
    with pytest.raises(RequestTimeout):
        c.status("c1")


def test_a_quota_reached_is_raised_at_once_and_a_rate_or_a_full_storage_is_waited_out():
    quota = {
        "type": "quota_exceeded",
        "message": "the tenant holds 500 messages, its quota (MEMQ_QUOTA_STORED_MESSAGES): forget some first",
        "field": None,
        "limit": "stored_messages",
        "setting": "MEMQ_QUOTA_STORED_MESSAGES",
        "results": [{"index": 0, "status": "rejected", "message_id": "m1"}],
    }
    server = Server().on("/v1/conversations/c1/messages", httpx.Response(429, json={"error": quota}), accept)
    c, slept = client(server)
    with pytest.raises(QuotaExceeded) as refused:
        c.add_messages("c1", [{"role": "user", "content": "Hi", "message_id": "m1"}])
    assert len(server.requests) == 1 and slept == []
    assert (refused.value.limit, refused.value.setting) == ("stored_messages", "MEMQ_QUOTA_STORED_MESSAGES")

    rate = {"type": "rate_limited", "message": "rate limit: retry after 2 s", "field": None}
    full = {"type": "storage_full", "message": "Redis is full", "field": None, "cause": "redis_out_of_memory"}
    server.on(
        "/v1/conversations/c2/messages",
        httpx.Response(429, json={"error": rate}, headers={"Retry-After": "2"}),
        httpx.Response(503, json={"error": full}, headers={"Retry-After": "10"}),
        accept,
    )
    out = c.add_messages("c2", [{"role": "user", "content": "Hi"}])
    assert out.results[0].status == "accepted" and len(server.requests) == 4 and slept == [2.0, 10.0]
    server.on("/v1/conversations/c2/messages", httpx.Response(429, json={"error": rate}, headers={"Retry-After": "2"}))
    with pytest.raises(RateLimited):
        c.add_messages("c2", [{"role": "user", "content": "Hi"}])  # retried, then the last error raised
    assert len(server.requests) == 8


def test_what_a_retry_cannot_cure_is_raised_at_once():
    server = Server().on(
        "/v1/memory/recent",
        httpx.Response(400, json={"error": {"type": "validation", "message": "is required", "field": "days"}}),
    )
    c, slept = client(server)
    with pytest.raises(BadRequest) as refused:
        c.recent("c1", days=-1)
    assert refused.value.field == "days" and len(server.requests) == 1 and slept == []
    with Client("ftp://memq.test") as wrong, pytest.raises(MemqError) as unsupported:
        wrong.health()  # httpx's own transport: refused before connecting
    assert unsupported.value.type == "invalid_request"


def test_import_is_retried_it_is_idempotent_and_sent_as_json_lines():
    done = {
        "tenant": "t",
        "source_tenant": "s",
        "complete": True,
        "lines": 3,
        "reembedded": False,
        "inserted": {"conversation": 1},
        "skipped": {},
        "stopped_at_line": None,
        "stopped_reason": None,
    }
    server = Server().on("/v1/import", httpx.ReadError("reset"), httpx.Response(200, json=done))
    c, _ = client(server)
    assert isinstance(c.import_(io.BytesIO(EXPORT)), ImportOut)
    first, second = server.requests
    assert first.content == second.content == EXPORT
    assert second.headers["content-type"] == "application/x-ndjson"


def test_readiness_that_fails_is_an_answer():
    down = {"ready": False, "checks": {"redis": {"ok": False, "detail": "ConnectionError"}}}
    c, _ = client(Server().on("/readyz", httpx.Response(503, json=down)))
    ready = c.ready()
    assert isinstance(ready, ReadyOut) and not ready.ready and not ready.checks["redis"].ok


# --- flush, pages, export ---------------------------------------------------------------------------


def flushed(idle: bool | None, flushed: bool = True) -> httpx.Response:
    return httpx.Response(202, json={"conversation_id": "c1", "flushed": flushed, "idle": idle})


def test_flush_without_wait_and_with_a_wait_longer_than_one_request_takes():
    server = Server().on("/v1/conversations/c1/flush", flushed(None))
    c, _ = client(server)
    assert c.flush("c1").idle is None and "wait" not in server.requests[0].url.params
    server = Server().on(
        "/v1/conversations/c1/flush", flushed(False), flushed(False, flushed=False), flushed(True, flushed=False)
    )
    c, _ = client(server)
    out = c.flush("c1", wait=150)
    assert isinstance(out, FlushOut) and out.idle is True and out.flushed is True  # flushed by the first
    assert [float(r.url.params["wait"]) for r in server.requests] == [60.0, 60.0, 60.0]
    assert server.requests[0].extensions["timeout"]["read"] == 30.0 + 60.0  # the wait is not a timeout
    server = Server().on("/v1/conversations/c1/flush", flushed(True))
    c, _ = client(server)
    assert c.flush("c1", wait=2.5).idle is True and server.requests[0].url.params["wait"] == "2.5"
    with pytest.raises(BadRequest):
        c.flush("c1", wait=-1)


def test_conversations_are_paged_through():
    def page(request: httpx.Request) -> httpx.Response:
        after = request.url.params.get("after")
        ids, nxt = (["a", "b"], "b") if after is None else (["c"], None)
        rows = [
            {
                "conversation_id": i,
                "user_id": None,
                "messages": 1,
                "episodes": 1,
                "last_message_at": None,
                "stored": True,
            }
            for i in ids
        ]
        return httpx.Response(200, json={"conversations": rows, "next": nxt})

    server = Server().on("/v1/conversations", page)
    c, _ = client(server)
    assert [x.conversation_id for x in c.iter_conversations(limit=2)] == ["a", "b", "c"]
    assert [dict(r.url.params) for r in server.requests] == [{"limit": "2"}, {"after": "b", "limit": "2"}]


def test_an_export_is_checked_for_its_end_record_and_streamed_to_a_file():
    server = Server().on("/v1/export", httpx.Response(200, content=EXPORT))
    c, _ = client(server)
    assert c.export(conversation_id="c1") == EXPORT
    assert dict(server.requests[0].url.params) == {"conversation_id": "c1"}
    file = io.BytesIO()
    assert c.export_to(file) == len(EXPORT) and file.getvalue() == EXPORT
    server.on("/v1/export", httpx.Response(200, content=EXPORT.rsplit(b'{"type":"end"', 1)[0]))
    with pytest.raises(UnexpectedResponse, match="incomplete"):
        c.export()
    with pytest.raises(UnexpectedResponse, match="incomplete"):
        c.export_to(io.BytesIO())


def test_an_export_is_retried_until_its_first_byte():
    server = Server().on(
        "/v1/export", httpx.Response(503, json=BUSY, headers={"Retry-After": "0"}), httpx.Response(200, content=EXPORT)
    )
    c, slept = client(server)
    file = io.BytesIO()
    assert c.export_to(file, user_id="u7") == len(EXPORT) and len(slept) == 1
    assert [r.url.params["user_id"] for r in server.requests] == ["u7", "u7"]


def test_an_answer_that_is_not_the_model_is_an_unexpected_response():
    c, _ = client(Server().on("/v1/webhooks", httpx.Response(200, text="<html>a login page</html>")))
    with pytest.raises(UnexpectedResponse) as odd:
        c.list_webhooks()
    assert odd.value.status == 200 and "WebhookListOut" in odd.value.message


# --- the asyncio client ---------------------------------------------------------------------------


def test_the_async_client_does_the_same():
    server = Server().on("/v1/conversations/c1/messages", accept)
    server.on("/v1/conversations/c1/flush", flushed(False), flushed(True, flushed=False))
    server.on("/v1/conversations/c1/status", httpx.ConnectError("refused"))
    server.on("/v1/webhooks", httpx.Response(503, json=BUSY, headers={"Retry-After": "0"}))
    server.on("/v1/export", httpx.Response(200, content=EXPORT))
    server.on("/v1/conversations", httpx.Response(200, json={"conversations": [], "next": None}))

    async def main() -> list[float]:
        c, slept = async_client(server, retries=1)
        async with c:
            out = await c.add_messages("c1", [{"role": "user", "content": "Hi"}])
            assert out.results[0].message_id == server.bodies()[0]["messages"][0]["message_id"]
            assert (await c.flush("c1", wait=90)).idle is True
            with pytest.raises(NetworkError):
                await c.status("c1")  # retried once
            with pytest.raises(ServiceUnavailable):
                await c.create_webhook("https://example.com/hook")  # never retried
            file = io.BytesIO()
            assert await c.export_to(file) == len(EXPORT) and file.getvalue() == EXPORT
            assert [x async for x in c.iter_conversations()] == []
        return slept

    slept = asyncio.run(main())
    assert len(slept) == 1
    flushes = [r for r in server.requests if r.url.path.endswith("/flush")]
    assert [float(r.url.params["wait"]) for r in flushes] == [60.0, 60.0]
    assert [r.url.path for r in server.requests].count("/v1/webhooks") == 1
