"""API keys (pure): ``memq_<id>_<secret>``, where ``id`` (10 characters) names the key in
listings and ``secret`` is 32 random bytes (URL-safe base64). Only SHA-256 of the whole
key is stored: the key carries 256 random bits, so a fast hash cannot be brute-forced and
a slow one would only slow every request down. Comparison is constant-time."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

PREFIX = "memq"
_KEY = re.compile(rf"^{PREFIX}_([a-z0-9]{{10}})_([A-Za-z0-9_-]{{43}})$")


@dataclass(frozen=True)
class NewKey:
    id: str
    key: str  # shown once, never stored
    hash: bytes


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def generate() -> NewKey:
    key_id = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(10))
    key = f"{PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
    return NewKey(key_id, key, digest(key))


def key_id(key: str) -> str | None:
    """The id part of a well-formed key; None for anything else."""
    m = _KEY.fullmatch(key)
    return m.group(1) if m else None


def matches(key: str, stored_hash: bytes) -> bool:
    return hmac.compare_digest(digest(key), stored_hash)


def header_key_id(header: str | None) -> str | None:
    """The key id of an ``Authorization: Bearer <key>`` header; None without a well-formed key."""
    return key_id(bearer(header) or "")


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
