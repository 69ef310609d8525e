"""Pure functions of webhook delivery: secrets and the signature header. Where a webhook may
be delivered is ``destinations.py``."""

from __future__ import annotations

import hashlib
import hmac
import secrets

SIGNATURE_HEADER = "memq-signature"
EVENT_ID_HEADER = "memq-event-id"
EVENT_HEADER = "memq-event"
REPLAY_WINDOW_SECONDS = 300  # receivers reject older timestamps (docs/webhooks.md)


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
