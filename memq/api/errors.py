"""Every error the API answers is JSON ``{"error": {"type", "message", "field"}}`` with a
4xx or 503 status; input is never answered with a 500. ``field`` names the offending
field (``messages[2].timestamp``, ``query``) when there is one.

A body that is not a JSON object at all says what to send instead of pydantic's "Input
should be a valid dictionary": 415 when it is not sent as JSON (no ``content-type:
application/json``), 400 when it is JSON but not an object (a list, a string, null) or
when it is missing."""

from __future__ import annotations

from typing import Any

import psycopg
import redis
import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from memq.shared.errors import BatchIncomplete, BatchRejected, Busy, NotFound, ServiceError, ValidationError
from memq.shared.webhooks.destinations import DestinationRefused

log = structlog.get_logger("memq.api")


def error(
    status: int,
    kind: str,
    message: str,
    field: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    return JSONResponse(
        {"error": {"type": kind, "message": message, "field": field, **extra}}, status_code=status, headers=headers
    )


def _results(results: list) -> list[dict[str, Any]]:
    return [{"index": i, "status": r.status, "message_id": r.message_id} for i, r in enumerate(results)]


_BODY_MODELS = {"MessagesIn", "MessageIn"}  # branches of a union body: not part of a field's path


def _loc(loc: tuple) -> str | None:
    """A pydantic error location as a field path: ``messages[2].timestamp``, ``depth``."""
    if loc and loc[0] in ("body", "query", "path", "header"):
        loc = loc[1:]
    parts = [str(p) for p in loc if p not in _BODY_MODELS]
    out = ""
    for p in parts:
        out += f"[{p}]" if p.isdigit() else (f".{p}" if out else p)
    return out or None


_NOT_AN_OBJECT = {"model_attributes_type", "model_type", "dict_type"}
_JSON_KINDS = {list: "an array", str: "a string", bool: "true or false", int: "a number", float: "a number"}


def _whole_body(found: list[Any]) -> bool:
    """The errors are about the body as a whole (not an object, or absent), not a field of it."""
    return bool(found) and all(
        tuple(e.get("loc", ()))[:1] == ("body",)
        and all(part in _BODY_MODELS for part in tuple(e["loc"])[1:])
        and e.get("type") in (_NOT_AN_OBJECT | {"missing"})
        for e in found
    )


def _send_instead(request: Request) -> str:
    route = request.scope.get("route")
    docs = f"{request.scope.get('root_path', '').rstrip('/')}/docs"
    if isinstance(route, APIRoute) and route.tags:  # Swagger UI's deep link to the operation
        docs += f"#/{route.tags[0]}/{route.unique_id}"
    return f"send a JSON object with content-type: application/json; see {docs} for this endpoint's body"


def _body_error(request: Request, found: list[Any], body: Any) -> JSONResponse | None:
    if not _whole_body(found):
        return None
    instead = _send_instead(request)
    if isinstance(body, bytes | bytearray):  # what FastAPI hands on when the content type is not JSON
        sent = request.headers.get("content-type")
        what = f"content-type: {sent[:100]}" if sent else "no content-type"
        return error(415, "unsupported_media_type", f"the body was sent with {what}: {instead}")
    if any(e.get("type") == "missing" for e in found):
        return error(400, "validation", f"the body is missing: {instead}")
    kind = "null" if body is None else _JSON_KINDS.get(type(body), "not an object")
    if isinstance(body, list) and any("MessagesIn" in e.get("loc", ()) for e in found):
        instead += '; a batch is {"messages": [...]}'
    return error(400, "validation", f"the body is {kind}, not a JSON object: {instead}")


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        found = list(exc.errors())
        body = getattr(exc, "body", None)
        shape = _body_error(request, found, body)
        if shape is not None:
            return shape
        # a body that is one message or {"messages": [...]}: report the errors of the form it has
        form = "MessagesIn" if isinstance(body, dict) and "messages" in body else "MessageIn"
        found.sort(key=lambda e: 0 if form in e.get("loc", ()) else 1)
        first = found[0] if found else {"loc": (), "msg": "invalid request"}
        field = _loc(tuple(first.get("loc", ())))
        message = str(first.get("msg", "invalid request"))
        if first.get("type") == "json_invalid":
            message, field = "the body is not valid JSON", None
        elif first.get("type") == "missing":
            message = "is required"
        elif first.get("type") == "extra_forbidden":
            message = "is not a field of this request"
        if field and not field.startswith("messages") and "MessageIn" in first.get("loc", ()):
            field = f"messages[0].{field}"  # the one-message form is message #0
        return error(400, "validation", message, field)

    @app.exception_handler(ValidationError)
    async def invalid(_: Request, exc: ValidationError) -> JSONResponse:
        field = exc.field
        if exc.index is not None:
            field = f"messages[{exc.index}]" + (f".{exc.field}" if exc.field else "")
        if isinstance(exc, BatchRejected):
            return error(409, "rejected", str(exc), field, results=_results(exc.results))
        if isinstance(exc, DestinationRefused):  # a webhook URL to a non-public address
            return error(400, "destination_refused", str(exc), field, rule=exc.rule)
        return error(400, "validation", str(exc), field)

    @app.exception_handler(BatchIncomplete)
    async def incomplete(_: Request, exc: BatchIncomplete) -> JSONResponse:
        return error(503, "incomplete", str(exc), results=_results(exc.results), headers={"Retry-After": "1"})

    @app.exception_handler(NotFound)
    async def not_found(_: Request, exc: NotFound) -> JSONResponse:
        return error(404, "not_found", str(exc))

    @app.exception_handler(Busy)
    async def busy(_: Request, exc: Busy) -> JSONResponse:
        return error(503, "busy", str(exc), headers={"Retry-After": "5"})

    @app.exception_handler(ServiceError)
    async def unavailable(_: Request, exc: ServiceError) -> JSONResponse:
        return error(503, "unavailable", str(exc), headers={"Retry-After": "5"})

    @app.exception_handler(psycopg.OperationalError)
    async def database_down(_: Request, exc: Exception) -> JSONResponse:
        log.warning("database_unavailable", error=type(exc).__name__)
        return error(503, "unavailable", "PostgreSQL cannot be reached; try again", headers={"Retry-After": "5"})

    @app.exception_handler(redis.RedisError)
    async def redis_down(_: Request, exc: Exception) -> JSONResponse:
        log.warning("redis_unavailable", error=type(exc).__name__)
        return error(503, "unavailable", "Redis cannot be reached; try again", headers={"Retry-After": "5"})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        kinds = {
            401: "unauthorized",
            403: "forbidden",
            404: "not_found",
            405: "method_not_allowed",
            413: "request_too_large",
            415: "unsupported_media_type",
        }
        return error(
            exc.status_code,
            kinds.get(exc.status_code, "http_error"),
            str(exc.detail),
            headers=getattr(exc, "headers", None),
        )
