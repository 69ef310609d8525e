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

from memq.shared.errors import (
    BatchIncomplete,
    BatchRejected,
    Busy,
    NotFound,
    QuotaExceeded,
    ServiceError,
    StorageFull,
    ValidationError,
)
from memq.shared.metrics import count_storage_full
from memq.shared.storage_full import storage_full_cause, storage_full_text
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


def _count_storage_full(cause: str) -> None:
    """A refusal for want of room met by a route itself (the producer's own, ``StorageFull``,
    are counted and logged where they are raised)."""
    count_storage_full(cause)
    log.warning("storage_full", cause=cause)


def _storage_full(cause: str, message: str, results: list | None = None) -> JSONResponse:
    """503 naming what has no room (``cause``), with Retry-After: the operator's to fix."""
    extra: dict[str, Any] = {"cause": cause}
    if results:
        extra["results"] = _results(results)
    return error(503, "storage_full", message, headers={"Retry-After": "10"}, **extra)


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


# pydantic's error types in memq's words (the rest keep pydantic's message)
_WORDING: dict[str, str] = {
    "string_type": "must be a string",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be an array",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "datetime_type": "must be an ISO 8601 date and time with a time zone, e.g. 2026-03-14T09:30:00Z",
    "datetime_parsing": "must be an ISO 8601 date and time with a time zone, e.g. 2026-03-14T09:30:00Z",
    "datetime_from_date_parsing": "must be an ISO 8601 date and time with a time zone, e.g. 2026-03-14T09:30:00Z",
    "uuid_type": "must be a UUID",
    "uuid_parsing": "must be a UUID",
}


def _number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def wording(found: dict[str, Any]) -> str:
    """What a request validation error says: memq's words for the common kinds, with the
    limits it broke ("must be at least 1"), pydantic's message otherwise."""
    kind = found.get("type", "")
    ctx = {k: _number(v) for k, v in (found.get("ctx") or {}).items()}
    if kind in _WORDING:
        return _WORDING[kind]
    if kind in ("greater_than_equal", "greater_than") and ("ge" in ctx or "gt" in ctx):
        return f"must be at least {ctx['ge']}" if "ge" in ctx else f"must be more than {ctx['gt']}"
    if kind in ("less_than_equal", "less_than") and ("le" in ctx or "lt" in ctx):
        return f"must be at most {ctx['le']}" if "le" in ctx else f"must be less than {ctx['lt']}"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        return f"must be at least {ctx.get('min_length')} characters"
    if kind == "too_long":
        return f"must have at most {ctx.get('max_length')} items"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} items"
    if kind in ("literal_error", "enum"):
        return f"must be one of {ctx.get('expected')}"
    message = str(found.get("msg", "invalid request"))
    return message[:1].lower() + message[1:]


# the routes under /v1/conversations/{conversation_id}/...: a path that matched none of them
# because the id holds a '/' is told the id rule it breaks
_CONVERSATION_ROUTES = ("episodes", "manifest", "context", "facts", "status", "flush", "messages", "user")


def _conversation_id_in(path: str) -> str | None:
    prefix = "/v1/conversations/"
    if not path.startswith(prefix):
        return None
    rest = path[len(prefix) :].rstrip("/")
    head, _, last = rest.rpartition("/")
    candidate = head if last in _CONVERSATION_ROUTES else rest
    return candidate if "/" in candidate else None


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
        message = wording(first)
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

    @app.exception_handler(QuotaExceeded)
    async def over_quota(_: Request, exc: QuotaExceeded) -> JSONResponse:
        # A refusal, not a wait: no Retry-After (sending again fails the same way until the day
        # turns, the tenant forgets something or the operator raises the limit).
        return error(
            429, "quota_exceeded", str(exc), limit=exc.limit, setting=exc.setting, results=_results(exc.results)
        )

    @app.exception_handler(StorageFull)
    async def storage_full(_: Request, exc: StorageFull) -> JSONResponse:
        return _storage_full(exc.cause, str(exc), exc.results)

    @app.exception_handler(BatchIncomplete)
    async def incomplete(_: Request, exc: BatchIncomplete) -> JSONResponse:
        return error(503, "incomplete", str(exc), results=_results(exc.results), headers={"Retry-After": "1"})

    @app.exception_handler(NotFound)
    async def not_found(_: Request, exc: NotFound) -> JSONResponse:
        return error(404, "not_found", str(exc), field=exc.field)

    @app.exception_handler(Busy)
    async def busy(_: Request, exc: Busy) -> JSONResponse:
        return error(503, "busy", str(exc), headers={"Retry-After": "5"})

    @app.exception_handler(ServiceError)
    async def unavailable(_: Request, exc: ServiceError) -> JSONResponse:
        return error(503, "unavailable", str(exc), headers={"Retry-After": "5"})

    @app.exception_handler(psycopg.Error)
    async def database_error(_: Request, exc: Exception) -> JSONResponse:
        if (cause := storage_full_cause(exc)) is not None:
            _count_storage_full(cause)
            return _storage_full(cause, f"{storage_full_text(cause)}: nothing was written; try again later")
        if not isinstance(exc, psycopg.OperationalError):
            log.error("database_error", error=type(exc).__name__, sqlstate=getattr(exc, "sqlstate", None))
            return error(500, "internal", "PostgreSQL refused the request; see the API's log")
        log.warning("database_unavailable", error=type(exc).__name__)
        return error(503, "unavailable", "PostgreSQL cannot be reached; try again", headers={"Retry-After": "5"})

    @app.exception_handler(redis.RedisError)
    async def redis_down(_: Request, exc: Exception) -> JSONResponse:
        if (cause := storage_full_cause(exc)) is not None:
            _count_storage_full(cause)
            return _storage_full(cause, f"{storage_full_text(cause)}: nothing was written; try again later")
        log.warning("redis_unavailable", error=type(exc).__name__)
        return error(503, "unavailable", "Redis cannot be reached; try again", headers={"Retry-After": "5"})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404 and (bad := _conversation_id_in(request.url.path)) is not None:
            return error(
                400,
                "validation",
                f"{bad[:60]!r} is not a conversation id: 1-128 letters, digits, '.', '_', ':' or '-', starting "
                "with a letter or digit (no '/'; encode other characters out of the id)",
                "conversation_id",
            )
        kinds = {
            401: "unauthorized",
            403: "forbidden",
            404: "not_found",
            405: "method_not_allowed",
            413: "request_too_large",
            429: "rate_limited",
            415: "unsupported_media_type",
        }
        return error(
            exc.status_code,
            kinds.get(exc.status_code, "http_error"),
            str(exc.detail),
            headers=getattr(exc, "headers", None),
        )
