"""Pure functions of webhook delivery: secrets, the signature header, URL validation."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from memq.shared.errors import ValidationError

SIGNATURE_HEADER = "memq-signature"
EVENT_ID_HEADER = "memq-event-id"
EVENT_HEADER = "memq-event"
REPLAY_WINDOW_SECONDS = 300  # receivers reject older timestamps (docs/webhooks.md)

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


def new_secret() -> str:
    return "whsec_" + secrets.token_hex(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """HMAC-SHA256 of ``<timestamp>.<body>`` with the endpoint's secret, in hex."""
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    return f"t={timestamp},v1={signature(secret, timestamp, body)}"


def verify(secret: str, header: str, body: bytes, now: float, tolerance: float = REPLAY_WINDOW_SECONDS) -> bool:
    """What a receiver does: the header's timestamp is recent and its v1 matches."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, timestamp, body), parts.get("v1", ""))


def check_url(url: str) -> str:
    """An endpoint's URL: HTTPS, or plain HTTP to this machine (127.0.0.1, localhost) only."""
    if len(url) > 2000:
        raise ValidationError("the URL is longer than 2000 characters", field="url")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError as exc:
        raise ValidationError(f"not a valid URL: {exc}", field="url") from None
    if not host:
        raise ValidationError(f"{url[:100]!r} is not an absolute URL (https://host/path)", field="url")
    if parts.scheme == "https":
        return url
    if parts.scheme == "http" and host in _LOCAL_HOSTS:
        return url
    raise ValidationError(
        f"{url[:100]!r}: webhook URLs must use https:// "
        "(plain http:// only to 127.0.0.1 or localhost, for development)",
        field="url",
    )
