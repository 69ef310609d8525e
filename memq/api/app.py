"""The HTTP service: ``create_app()`` for uvicorn (``memq api``), OpenAPI at
``/openapi.json`` and interactive docs at ``/docs`` and ``/redoc`` (``docs.py``: assets
served locally). Versioned paths under ``/v1``; every route but the health checks needs a
bearer key (``auth.py``); the MCP server (streamable HTTP, stateless, JSON answers) is at
``/mcp`` behind the same keys."""

from __future__ import annotations

import asyncio
import json
import os
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog
from fastapi import Depends, FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route

from memq import version
from memq.api import docs, errors
from memq.api.auth import UNAUTHORIZED, over_rate, tenant_for
from memq.api.fair_share import take_turn
from memq.api.inspect import router as inspector
from memq.api.limits import BodyLimit
from memq.api.models import ERRORS
from memq.api.rate_limit import RefusalGate
from memq.api.request_log import RequestLog
from memq.api.routes import (
    activity,
    conversations,
    facts,
    health,
    memory,
    messages,
    metrics,
    portability,
    quota,
    users,
    webhooks,
)
from memq.api.services import Services
from memq.producer.client import NO_WORKER
from memq.shared.auth.api_keys import header_key_id
from memq.shared.settings import Settings, get_settings

LOOPBACK = ("127.0.0.1", "localhost", "::1")
log = structlog.get_logger("memq.api")


def create_app(settings: Settings | None = None, services: Services | None = None) -> FastAPI:
    """``services``: already started ones (tests); by default they start with the app."""
    from memq.mcp_server import build_server
    from memq.shared.logging import configure_logging
    from memq.shared.settings.environment import report_openings, report_unrecognised

    settings = settings or get_settings()
    configure_logging(settings)
    report_unrecognised(os.environ)
    report_openings(settings)
    holder: dict[str, Services] = {}
    mcp = build_server(_Late(holder))
    mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=_transport_security(settings),
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        own = services is None
        svc = services if services is not None else await anyio.to_thread.run_sync(Services.start, settings)
        holder["services"] = app.state.services = svc

        async def warn_without_worker() -> None:  # accepted messages wait until one runs
            answered = await anyio.to_thread.run_sync(
                lambda: svc.producer.worker_answers(timeout=1.0), abandon_on_cancel=True
            )
            if not answered:
                log.warning("no_worker", hint=NO_WORKER)

        # beside serving: with no worker up (one deployed after the API), the ping's full
        # wait would hold the API's readiness back
        pinging = asyncio.create_task(warn_without_worker())
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            pinging.cancel()
            if own:
                svc.close()

    app = FastAPI(
        title="memq",
        version=version(),
        lifespan=lifespan,
        docs_url=None,  # served by memq.api.docs, with local assets
        redoc_url=None,
        description="Long-term memory for LLM agents: add conversation messages, retrieve what matters, load the "
        "context of a new session, forget a conversation. Every route under /v1 needs "
        "`Authorization: Bearer <key>` (`memq keys create --tenant T`); the MCP server is at /mcp.",
    )
    if services is not None:  # usable before the lifespan runs (schemathesis' ASGI client does not run it)
        holder["services"] = app.state.services = services
    errors.install(app)
    docs.install(app)
    for module in (messages, memory, conversations, facts, metrics, portability, webhooks, users, activity, quota):
        # what every error looks like (errors.py); each key's requests take turns (fair_share.py)
        app.include_router(module.router, responses=ERRORS, dependencies=[Depends(take_turn, scope="function")])
    app.include_router(health.router)
    app.include_router(inspector)  # the memory inspector, /inspect (not in the OpenAPI document)
    app.router.routes.append(
        Route(
            "/mcp",
            endpoint=McpAuth(StreamableHTTPASGIApp(mcp.session_manager), holder),
            methods=["GET", "POST", "DELETE"],
            include_in_schema=False,
        )
    )
    app.add_middleware(BodyLimit, max_bytes=settings.api_max_body_bytes)
    app.add_middleware(RefusalGate)  # a key still refused: 429 before its body is read
    app.add_middleware(RequestLog)  # outermost: times and logs every answer, refusals included
    return app


class _Late:
    """The services, once the lifespan has started them (the MCP tools are built first)."""

    def __init__(self, holder: dict[str, Services]):
        self._holder = holder

    def __getattr__(self, name: str):
        return getattr(self._holder["services"], name)


class McpAuth:
    """The API's bearer check in front of the MCP endpoint; the tenant goes to the tools
    through the request's state, never from anything the client says."""

    def __init__(self, app, holder: dict[str, Services]):
        self.app, self.holder = app, holder

    async def __call__(self, scope, receive, send):
        headers = dict(scope.get("headers") or ())
        authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        tenant = tenant_for(self.holder["services"], authorization)
        if tenant is None:
            await _answer(send, 401, "unauthorized", UNAUTHORIZED, [(b"www-authenticate", b"Bearer")])
            return
        refused = over_rate(self.holder["services"], authorization, tenant)
        if refused is not None:
            message, seconds = refused
            await _answer(send, 429, "rate_limited", message, [(b"retry-after", str(seconds).encode())])
            return
        scope.setdefault("state", {})["memq_tenant"] = tenant
        services = self.holder["services"]
        key = header_key_id(authorization) if services.settings.api_auth and scope.get("method") == "POST" else None
        if key is None:  # a stream's GET or DELETE holds no turn (memq.api.fair_share)
            await self.app(scope, receive, send)
            return
        async with services.turns.turn(key):
            await self.app(scope, receive, send)


async def _answer(send: Any, status: int, kind: str, message: str, headers: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"error": {"type": kind, "message": message, "field": None}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _transport_security(settings: Settings) -> TransportSecuritySettings:
    """DNS-rebinding protection while bound to loopback (a browser page cannot reach the
    local service through a hostile name); behind a proxy the proxy owns that."""
    if settings.api_host in LOOPBACK:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)
