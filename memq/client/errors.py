"""What the client raises. Every error the API answers is ``{"error": {"type", "message",
"field", ...}}`` with a 4xx or 5xx status; it comes back as a :class:`MemqError` subclass
chosen by the status (and, for a 429, the type), carrying the API's ``type``, ``message``
and ``field`` (and, with a refused or incomplete batch, the per-message ``results``). No
answer at all (the connection failed, the request timed out) is a :class:`NetworkError`.

::

    MemqError
    ├── ClientError          4xx: the request is wrong; sending it again will not help
    │   ├── BadRequest       400 (validation, destination_refused, ...), 415, 422
    │   ├── AuthError        401, 403: a missing, wrong or revoked key
    │   ├── NotFound         404: no such conversation, user, fact, webhook, delivery
    │   ├── Conflict         409: a batch refused (out of order, another user's conversation)
    │   ├── RequestTooLarge  413: over MEMQ_API_MAX_BODY_BYTES
    │   ├── RateLimited      429 rate_limited: the key's request rate; retry_after (retried)
    │   └── QuotaExceeded    429 quota_exceeded: a tenant quota; limit, setting (never retried)
    ├── ServerError          5xx
    │   └── ServiceUnavailable  503: Redis or PostgreSQL down, full (storage_full: detail["cause"]),
    │                           busy, a batch incomplete; retry_after
    ├── NetworkError         no answer: connection refused or reset, DNS, TLS
    │   └── RequestTimeout   no answer in time (httpx's connect/read/write/pool timeouts)
    └── UnexpectedResponse   an answer the client cannot read (not the API's JSON)
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx
from pydantic import ValidationError as PydanticValidationError

from memq.api.models import AddResultOut, ErrorOut

__all__ = [
    "AuthError",
    "BadRequest",
    "ClientError",
    "Conflict",
    "MemqError",
    "NetworkError",
    "NotFound",
    "QuotaExceeded",
    "RateLimited",
    "RequestTimeout",
    "RequestTooLarge",
    "ServerError",
    "ServiceUnavailable",
    "UnexpectedResponse",
    "error_from_response",
    "parse_retry_after",
]


class MemqError(Exception):
    """Any failure of a call. ``status`` is the HTTP status (None: no answer); ``type``,
    ``message`` and ``field`` are the API's (``field`` names the offending input, e.g.
    ``messages[2].timestamp``, when there is one); ``detail`` is the whole ``error`` object
    (with any extra keys, e.g. ``rule`` of a refused webhook destination)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        type: str = "error",
        field: str | None = None,
        detail: dict[str, Any] | None = None,
        results: list[AddResultOut] | None = None,
        retry_after: float | None = None,
        method: str | None = None,
        url: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type
        self.field = field
        self.detail: dict[str, Any] = detail if detail is not None else {}
        self.results = results
        self.retry_after = retry_after
        self.method = method
        self.url = url

    def __str__(self) -> str:
        where = f" (field {self.field})" if self.field else ""
        status = f"{self.status} " if self.status is not None else ""
        return f"{status}{self.type}: {self.message}{where}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, type={self.type!r}, message={self.message!r}, "
            f"field={self.field!r})"
        )


class ClientError(MemqError):
    """4xx: the request is wrong as sent (the client never retries it, 429 aside)."""


class BadRequest(ClientError):
    """400 (``validation``, ``destination_refused``, ``bad_request``), 415 (not sent as JSON), 422."""


class AuthError(ClientError):
    """401 or 403: a missing, malformed, unknown or revoked key (the same answer for each)."""


class NotFound(ClientError):
    """404: nothing of that id in the key's tenant (another tenant's is reported the same)."""


class Conflict(ClientError):
    """409: a batch refused, nothing of it written (``results`` says which message and why)."""


class RequestTooLarge(ClientError):
    """413: the body is over MEMQ_API_MAX_BODY_BYTES; send smaller batches."""


class RateLimited(ClientError):
    """429 ``rate_limited``: the key made too many requests a second; ``retry_after``
    seconds, when the server said (the client waits that long and retries)."""


class QuotaExceeded(ClientError):
    """429 ``quota_exceeded``: a tenant quota refused the batch, nothing of it written
    (``results`` says which message and why). No ``Retry-After`` and never retried: sending
    again fails the same way until the day turns (UTC), the tenant forgets something, or
    the operator raises the limit (``setting`` names it)."""

    @property
    def limit(self) -> str | None:
        """The quota reached: ``messages_per_day`` or ``stored_messages``."""
        return _text(self.detail.get("limit"))

    @property
    def setting(self) -> str | None:
        """The setting that sets it (``MEMQ_QUOTA_...``)."""
        return _text(self.detail.get("setting"))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class ServerError(MemqError):
    """5xx."""


class ServiceUnavailable(ServerError):
    """503: Redis or PostgreSQL cannot be reached (``unavailable``) or has no room to write
    (``storage_full``; ``detail["cause"]``: ``redis_out_of_memory``,
    ``redis_cannot_persist`` or ``postgres_disk_full``, for the operator to fix), a worker
    holds the conversation (``busy``), or a batch was incomplete (``incomplete``, with
    ``results``); ``retry_after`` seconds."""


class NetworkError(MemqError):
    """No answer: the connection failed or broke (``type`` ``connection``)."""


class RequestTimeout(NetworkError):
    """No answer in time (``type`` ``timeout``)."""


class UnexpectedResponse(MemqError):
    """An answer that is not what the API documents (not JSON, or not its model): usually
    something else listening at the base URL, or a proxy's error page."""


# Answers of one status that need different handling, told apart by the API's type.
_BY_TYPE: dict[tuple[int, str], type[MemqError]] = {(429, "quota_exceeded"): QuotaExceeded}


def _class_for(status: int, kind: str | None = None) -> type[MemqError]:
    if kind is not None and (status, kind) in _BY_TYPE:
        return _BY_TYPE[status, kind]
    exact: dict[int, type[MemqError]] = {
        400: BadRequest,
        401: AuthError,
        403: AuthError,
        404: NotFound,
        409: Conflict,
        413: RequestTooLarge,
        415: BadRequest,
        422: BadRequest,
        429: RateLimited,
        503: ServiceUnavailable,
    }
    if status in exact:
        return exact[status]
    return ServerError if status >= 500 else ClientError if status >= 400 else UnexpectedResponse


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: a number of seconds or an HTTP date (None:
    absent or unreadable; never negative)."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def error_from_response(response: httpx.Response) -> MemqError:
    """The exception for an error answer: the API's ``{"error": {...}}`` when it is one,
    else the status and the start of the body (a proxy's page, say)."""
    status = response.status_code
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    request = response.request if _has_request(response) else None
    where: dict[str, Any] = (
        {"method": request.method, "url": str(request.url)} if request is not None else {"method": None, "url": None}
    )
    try:
        payload = response.json()
        parsed = ErrorOut.model_validate(payload)
    except (ValueError, PydanticValidationError):
        text = response.text.strip()
        message = response.reason_phrase or "error"
        if text:
            message = f"{message}: {text[:300]}"
        return _class_for(status)(message, status=status, type="http_error", retry_after=retry_after, **where)
    error = parsed.error
    return _class_for(status, error.type)(
        error.message,
        status=status,
        type=error.type,
        field=error.field,
        detail=dict(payload["error"]),
        results=error.results,
        retry_after=retry_after,
        **where,
    )


def _has_request(response: httpx.Response) -> bool:
    try:
        _ = response.request  # raises when the response was built without one
    except RuntimeError:
        return False
    return True
