"""Tests for ScriptedLLM, driven through litellm's real HTTP request path.

Observed with litellm 1.106.2 / openai 2.54.0 (model "openai/scripted"):

* Two retry layers exist for ``litellm.completion``:
  1. The OpenAI SDK client retries 408/409/429/5xx and timeouts/connection
     errors itself.  litellm passes ``num_retries`` through as the SDK's
     ``max_retries``; if neither ``num_retries`` nor ``max_retries`` is given,
     the SDK default of **2 retries** applies (so an un-configured call makes up
     to 3 HTTP requests!).  SDK back-off is 0.5 s * 2**n with up to -25 %
     jitter (~0.4-0.5 s, then ~0.75-1.0 s, capped at 8 s) unless the response
     carries ``retry-after-ms`` / ``Retry-After`` (honoured when 0 < x <= 120 s;
     ``Retry-After: 0`` is ignored and falls back to the back-off).
  2. If the call still fails with any ``openai.APIError`` (this includes 400,
     401, malformed bodies...), litellm's wrapper re-runs the whole completion
     ``num_retries`` more times via tenacity with **no wait** and SDK retries
     disabled.  Worst case: ``2 * num_retries + 1`` HTTP requests.
  Pass ``max_retries=0`` (or ``num_retries=0``) to get exactly one request.
* Side effect: any failed ``litellm.completion`` sets the *global*
  ``litellm.num_retries = None``.
* Exceptions: timeout -> ``litellm.Timeout`` (subclass of
  ``openai.APITimeoutError``); 503 -> ``litellm.ServiceUnavailableError``;
  429 -> ``litellm.RateLimitError``; 500 and malformed 200 bodies ->
  ``litellm.InternalServerError``; 400 -> ``litellm.BadRequestError``.
* ``response_format`` (json_schema) is forwarded verbatim in the request body;
  the ``openai/`` prefix is stripped, so the server sees ``model == "scripted"``.
  litellm sends no other requests (no GET /models, no probes).
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import contextlib
import json
import threading
import time
import urllib.error
import urllib.request

import litellm
import pytest

from memq_lab.testing.scripted_llm import NO_REPLY_MESSAGE, Reply, ScriptedLLM

litellm.suppress_debug_info = True  # drop the "Give Feedback / Get Help" banner

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def llm():
    saved_num_retries = litellm.num_retries  # litellm resets this global on failure
    with ScriptedLLM() as server:
        yield server
    litellm.num_retries = saved_num_retries


def complete(llm: ScriptedLLM, **kwargs):
    return litellm.completion(messages=MESSAGES, **llm.litellm_kwargs(), **kwargs)


def test_string_reply_arrives_as_content(llm):
    llm.push("hello there")
    resp = complete(llm)
    assert resp.choices[0].message.content == "hello there"
    assert resp.choices[0].finish_reason == "stop"
    assert isinstance(resp.usage.total_tokens, int) and resp.usage.total_tokens > 0
    assert llm.request_count == 1
    req = llm.requests[0]
    assert req["model"] == "scripted"  # "openai/" prefix stripped by litellm
    assert req["messages"] == MESSAGES


def test_dict_reply_and_json_schema_response_format(llm):
    response_format = {
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"answer": {"type": "integer"}},
                "required": ["answer"],
                "additionalProperties": False,
            },
        },
    }
    llm.push({"answer": 42})
    resp = complete(llm, response_format=response_format)
    assert json.loads(resp.choices[0].message.content) == {"answer": 42}
    # For an "openai/" model litellm forwards response_format untouched.
    assert llm.requests[0]["response_format"] == response_format


def test_callable_reply_sees_request(llm):
    llm.push(lambda req: f"echo: {req['messages'][-1]['content']}")
    assert complete(llm).choices[0].message.content == "echo: hi"


def test_503_then_success_with_num_retries(llm):
    # num_retries=2 -> litellm passes max_retries=2 to the OpenAI SDK, which
    # retries the 503 itself after ~0.4-0.5 s of back-off (no Retry-After sent).
    llm.push(Reply(status=503), "recovered")
    start = time.monotonic()
    resp = complete(llm, num_retries=2)
    elapsed = time.monotonic() - start
    assert resp.choices[0].message.content == "recovered"
    assert llm.request_count == 2
    assert 0.3 < elapsed < 3


def test_503_exhausted_raises_service_unavailable(llm):
    # retry-after-ms keeps the SDK back-off tiny. 3 SDK attempts + 2 litellm
    # wrapper attempts = 2 * num_retries + 1 requests.
    llm.default = Reply(status=503, headers={"retry-after-ms": "1"})
    with pytest.raises(litellm.ServiceUnavailableError):
        complete(llm, num_retries=2)
    assert llm.request_count == 5


def test_429_raises_rate_limit_error(llm):
    llm.push(Reply(status=429, headers={"Retry-After": "7"}))
    with pytest.raises(litellm.RateLimitError) as exc_info:
        complete(llm, max_retries=0)
    assert exc_info.value.status_code == 429
    assert llm.request_count == 1


def test_429_is_retried_with_num_retries(llm):
    llm.push(Reply(status=429, headers={"retry-after-ms": "1"}), "ok")
    assert complete(llm, num_retries=1).choices[0].message.content == "ok"
    assert llm.request_count == 2


def test_delay_beyond_timeout_raises_litellm_timeout(llm):
    # max_retries=0: otherwise the SDK retries timeouts too (2 more attempts).
    llm.push(Reply(content="too late", delay=5))
    start = time.monotonic()
    with pytest.raises(litellm.Timeout):
        complete(llm, timeout=1, max_retries=0)
    assert time.monotonic() - start < 3
    assert llm.request_count == 1


def test_malformed_body_raises_litellm_error(llm):
    llm.push(Reply(body="this is {not json"))
    with pytest.raises(litellm.InternalServerError):
        complete(llm, max_retries=0)


def test_empty_queue_gives_error(llm):
    with pytest.raises(litellm.InternalServerError, match=NO_REPLY_MESSAGE):
        complete(llm, max_retries=0)
    assert llm.request_count == 1


def test_default_reply_and_reset(llm):
    llm.default = "fallback"
    llm.push("first")
    assert complete(llm).choices[0].message.content == "first"
    assert complete(llm).choices[0].message.content == "fallback"
    assert llm.request_count == 2
    llm.reset()
    assert llm.default is None and llm.request_count == 0 and llm.requests == []


def test_stream_request_is_rejected(llm):
    llm.push("unused")
    with pytest.raises(litellm.BadRequestError):
        complete(llm, stream=True, max_retries=0)
    assert llm.requests[0]["stream"] is True


def _http(url: str, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_raw_http_endpoints(llm):
    status, body = _http(f"{llm.base_url}/models")
    assert status == 200 and [m["id"] for m in body["data"]] == ["scripted"]

    llm.push("no prefix", Reply(status=503, content="overloaded"))
    root = llm.base_url[: -len("/v1")]
    status, body = _http(f"{root}/chat/completions", {"model": "m", "messages": MESSAGES})
    assert status == 200 and body["object"] == "chat.completion" and body["model"] == "m"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "no prefix"}
    status, body = _http(f"{llm.base_url}/chat/completions", {"model": "m", "messages": MESSAGES})
    assert status == 503 and body["error"]["message"] == "overloaded"
    assert set(body["error"]) == {"message", "type", "code"}
    assert llm.wait_for_requests(2, timeout=1)
    assert not llm.wait_for_requests(3, timeout=0.05)


def test_stop_interrupts_delayed_reply():
    server = ScriptedLLM().start()
    server.push(Reply(content="never", delay=30))
    url = f"{server.base_url}/chat/completions"
    t = threading.Thread(target=lambda: _http_quiet(url), daemon=True)
    t.start()
    assert server.wait_for_requests(1, timeout=2)
    start = time.monotonic()
    server.stop()
    assert time.monotonic() - start < 2
    t.join(timeout=2)
    assert not t.is_alive()


def _http_quiet(url: str) -> None:
    with contextlib.suppress(Exception):
        _http(url, {"model": "m", "messages": MESSAGES})
