"""One log line and one latency observation (memq_http_request_seconds) per request (pure
ASGI): method, route template, status, duration and tenant (the tenant in the log only);
never the key, the query string or the body. Health checks and scrapes are logged
at debug, so probes do not drown the log."""

from __future__ import annotations

import time
from typing import Any

import structlog

from memq.shared.metrics import metrics

log = structlog.get_logger("memq.api")

QUIET = frozenset({"/healthz", "/readyz", "/metrics"})
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestLog:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets when the application raises before answering

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route, seconds = route_template(scope), time.perf_counter() - started
            (log.debug if route in QUIET else log.info)(
                "request",
                method=scope.get("method"),
                route=route,
                status=status,
                duration_ms=round(seconds * 1000, 1),
                tenant=(scope.get("state") or {}).get("memq_tenant"),
            )
            method = str(scope.get("method"))
            method = method if method in METHODS else "OTHER"  # a label takes values from a fixed set
            metrics().http_seconds.labels(method=method, route=route, status=str(status)).observe(seconds)


def route_template(scope: dict[str, Any]) -> str:
    """The matched route's template (``/v1/conversations/{conversation_id}/messages``): what
    the path was, without its ids. Unmatched paths are not echoed into the log."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    requested = str(scope.get("path", ""))
    for mounted in ("/mcp", "/docs/assets"):  # not routes FastAPI names in the scope
        if requested.startswith(mounted):
            return mounted
    return "(unmatched)"
