"""Request body size limit (pure ASGI): a body over ``max_bytes`` is refused with 413
before the application reads it, whether its size is declared (Content-Length) or not
(chunked)."""

from __future__ import annotations

import json


class BodyLimit:
    def __init__(self, app, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    return await _refuse(send, 400, "Content-Length is not a number")
                if declared > self.max_bytes:
                    return await _too_large(send, self.max_bytes)
        # Read the body before the application does (it would hold it in memory anyway),
        # refusing as soon as it passes the limit; then hand it over unchanged.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                return await _too_large(send, self.max_bytes)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _too_large(send, limit: int) -> None:
    await _refuse(
        send, 413, f"the request body is larger than {limit} bytes (MEMQ_API_MAX_BODY_BYTES); send smaller batches"
    )


async def _refuse(send, status: int, message: str) -> None:
    body = json.dumps(
        {"error": {"type": "request_too_large" if status == 413 else "bad_request", "message": message, "field": None}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
