"""One delivery attempt over HTTP, and what its outcome means (``classify``, pure)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from memq.shared.webhooks.signing import EVENT_HEADER, EVENT_ID_HEADER, SIGNATURE_HEADER, signature_header


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not followed: the URL checked at registration is the one called."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


@dataclass(frozen=True)
class Attempt:
    status: int | None  # the HTTP status, None when no response came
    error: str | None  # None on a 2xx


def body_of(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


def headers(secret: str, event: str, event_id: str, body: bytes, now: float) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "user-agent": "memq-webhooks",
        SIGNATURE_HEADER: signature_header(secret, int(now), body),
        EVENT_ID_HEADER: event_id,
        EVENT_HEADER: event,
    }


def send(url: str, secret: str, event: str, event_id: str, payload: dict[str, Any], timeout: float) -> Attempt:
    body = body_of(payload)
    request = urllib.request.Request(
        url, data=body, method="POST", headers=headers(secret, event, event_id, body, time.time())
    )
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return Attempt(response.status, None)
    except urllib.error.HTTPError as exc:
        return Attempt(exc.code, f"HTTP {exc.code} {exc.reason}")
    except (OSError, ValueError) as exc:  # refused, unreachable, timed out, TLS
        reason = getattr(exc, "reason", exc)
        return Attempt(None, f"{type(reason).__name__}: {reason}"[:500])


def classify(attempt: Attempt) -> str:
    """``delivered`` (2xx), ``permanent`` (a 4xx other than 408 and 429: retrying cannot
    help) or ``retry`` (no response, 408, 429, 5xx, anything else)."""
    status = attempt.status
    if status is not None and 200 <= status < 300:
        return "delivered"
    if status is not None and 400 <= status < 500 and status not in (408, 429):
        return "permanent"
    return "retry"
