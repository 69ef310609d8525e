"""A tiny OpenAI-compatible HTTP server that serves scripted answers.

Used by tests to exercise litellm's *real* HTTP request path (no mocks of
litellm internals) without a real LLM or network access.  Standard library only.

Usage::

    with ScriptedLLM() as llm:
        llm.push("hello", {"a": 1}, Reply(status=503), Reply(delay=5))
        litellm.completion(messages=[...], **llm.litellm_kwargs())
        assert llm.requests[0]["messages"][0]["content"] == ...

Reply kinds accepted by ``push`` / ``default``:

* ``str``                -> served as ``choices[0].message.content``
* ``dict`` / ``list``    -> JSON-encoded and served as the content
* ``Reply(...)``         -> full control (status, delay, raw body, headers)
* ``callable(req_json)`` -> called with the parsed request body; may return any
  of the above (including another callable).
"""

from __future__ import annotations

import collections
import contextlib
import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["NO_REPLY_MESSAGE", "Reply", "ScriptedLLM"]

NO_REPLY_MESSAGE = "ScriptedLLM: no scripted reply left"

_ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "not_found"),
    408: ("timeout_error", "timeout"),
    422: ("invalid_request_error", "unprocessable_entity"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "service_unavailable"),
    504: ("server_error", "gateway_timeout"),
}


@dataclass
class Reply:
    """Fully specified scripted reply.

    content: message content (str, or dict/list which is JSON-encoded).
    status:  HTTP status; != 200 produces an OpenAI-style error JSON whose
             ``error.message`` is ``content`` (if given) or a generic text.
    delay:   seconds to wait before answering (interrupted by ``stop()``).
    body:    raw response body sent verbatim (overrides content/status JSON
             generation; ``status`` is still used as the HTTP status).
    headers: extra response headers, e.g. ``{"Retry-After": "0"}``.
    """

    content: Any = None
    status: int = 200
    delay: float = 0.0
    body: str | None = None
    headers: dict[str, str] | None = None


def _error_payload(status: int, message: str) -> dict:
    err_type, code = _ERROR_TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", str(status))
    )
    return {"error": {"message": message, "type": err_type, "code": code}}


def _approx_tokens(obj: Any) -> int:
    text = obj if isinstance(obj, str) else json.dumps(obj, default=str)
    return max(1, len(text) // 4)


class _Handler(BaseHTTPRequestHandler):
    server_version = "ScriptedLLM/1.0"
    protocol_version = "HTTP/1.1"  # keep-alive, like real OpenAI endpoints
    server: _Server  # the server this handler was made by

    # The owning ScriptedLLM is attached to the server object.
    @property
    def llm(self) -> ScriptedLLM:
        return self.server.scripted_llm

    def log_message(self, format: str, *args: Any) -> None:
        pass  # silence default stderr request logging

    # ---------------------------------------------------------------- helpers
    def _path(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.startswith("/v1/"):
            path = path[3:]
        return path

    def _send(
        self,
        status: int,
        body: str | bytes,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        data = body.encode("utf-8") if isinstance(body, str) else body
        try:
            self.send_response(status)
            hdrs = {"Content-Type": content_type, "Content-Length": str(len(data))}
            for k, v in (headers or {}).items():
                hdrs[k] = str(v)
            for k, v in hdrs.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            # Client gave up (e.g. timed out) -- nothing to do.
            self.close_connection = True

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj), headers)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # ---------------------------------------------------------------- routes
    def do_GET(self) -> None:
        if self._path() == "/models":
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": self.llm.model_name,
                            "object": "model",
                            "created": int(time.time()),
                            "owned_by": "scripted-llm",
                        }
                    ],
                },
            )
        else:
            self._send_json(404, _error_payload(404, f"Unknown path: GET {self.path}"))

    def do_POST(self) -> None:
        raw = self._read_body()
        if self._path() != "/chat/completions":
            self._send_json(404, _error_payload(404, f"Unknown path: POST {self.path}"))
            return
        try:
            req = json.loads(raw.decode("utf-8") or "{}")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self._send_json(400, _error_payload(400, f"Invalid JSON body: {exc}"))
            return

        self.llm._record(req)

        if req.get("stream"):
            self._send_json(400, _error_payload(400, "ScriptedLLM: streaming (stream=true) is not supported"))
            return

        reply = self.llm._next_reply()
        try:
            while callable(reply) and not isinstance(reply, Reply):
                reply = reply(req)
        except Exception as exc:  # scripted callable blew up -> surface as 500
            self._send_json(500, _error_payload(500, f"ScriptedLLM: reply callable raised {exc!r}"))
            return

        if reply is None:
            self._send_json(500, _error_payload(500, NO_REPLY_MESSAGE))
            return
        if not isinstance(reply, Reply):
            reply = Reply(content=reply)

        if reply.delay and reply.delay > 0 and self.llm._stopping.wait(reply.delay):
            # Server is shutting down: drop the connection without answering.
            self.close_connection = True
            return

        headers = dict(reply.headers or {})
        if reply.body is not None:
            self._send(reply.status, reply.body, headers)
            return
        if reply.status != 200:
            if reply.content is None:
                message = f"ScriptedLLM: scripted error {reply.status}"
            elif isinstance(reply.content, str):
                message = reply.content
            else:
                message = json.dumps(reply.content)
            self._send_json(reply.status, _error_payload(reply.status, message), headers)
            return

        content = reply.content
        if content is None:
            content = ""
        elif not isinstance(content, str):
            content = json.dumps(content)
        prompt_tokens = _approx_tokens(req.get("messages", []))
        completion_tokens = _approx_tokens(content)
        self._send_json(
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": req.get("model", self.llm.model_name),
                "system_fingerprint": None,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
            headers,
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False
    scripted_llm: ScriptedLLM  # set by ScriptedLLM.start

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def close_all_connections(self) -> None:
        """Unblock handler threads idling on keep-alive connections."""
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class ScriptedLLM:
    """OpenAI-compatible chat-completions server with a FIFO of scripted replies."""

    model_name = "scripted"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: collections.deque[Any] = collections.deque()
        self._requests: list[dict] = []
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.default: Any = None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> ScriptedLLM:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server((self._host, self._port), _Handler)
        server.scripted_llm = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"ScriptedLLM:{server.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()  # wakes handlers sleeping on a Reply.delay
        server.shutdown()
        server.server_close()
        server.close_all_connections()
        if thread is not None:
            thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------ addressing
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("ScriptedLLM is not running")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def litellm_kwargs(self) -> dict[str, str]:
        return {"model": "openai/scripted", "api_base": self.base_url, "api_key": "test-key"}

    # ------------------------------------------------------------ scripting
    def push(self, *replies: Any) -> ScriptedLLM:
        with self._lock:
            self._queue.extend(replies)
        return self

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self.default = None

    @property
    def pending(self) -> int:
        """Number of scripted replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    # ------------------------------------------------------------ recording
    @property
    def requests(self) -> list[dict]:
        """Snapshot of parsed JSON request bodies, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._requests) < n:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    # ------------------------------------------------------------ internals
    def _record(self, req: dict) -> None:
        with self._cond:
            self._requests.append(req)
            self._cond.notify_all()

    def _next_reply(self) -> Any:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            return self.default
