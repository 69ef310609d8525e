"""Validation of incoming messages at the edge. Pure: no Redis, no clock but the
``now`` passed in. Anything refused raises ``ValidationError`` naming the field and,
in a batch, the message's index; nothing is written for a refused batch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from shared.errors import ValidationError
from shared.settings import CONVERSATION_ID_PATTERN, Settings

ROLES = ("user", "assistant", "system", "tool")
FIELDS = {"conversation_id", "role", "content", "timestamp", "message_id", "metadata", "tenant"}
_CONVERSATION_RE = re.compile(CONVERSATION_ID_PATTERN)
_MESSAGE_ID_RE = re.compile(r"^[\x21-\x7e]{1,200}$")
FUTURE_TOLERANCE = timedelta(minutes=5)


@dataclass(frozen=True)
class ValidMessage:
    conversation_id: str
    role: str
    content: str
    timestamp: datetime | None  # None: stamped with the arrival time
    message_id: str | None
    metadata: dict[str, Any] | None


def check_conversation_id(value: Any, settings: Settings, index: int | None = None) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError("must be a non-empty string", field="conversation_id", index=index)
    if len(value) > settings.conversation_id_max_length:
        raise ValidationError(
            f"is {len(value)} characters; at most {settings.conversation_id_max_length} are allowed",
            field="conversation_id",
            index=index,
        )
    if not _CONVERSATION_RE.match(value):
        raise ValidationError(
            f"{value!r} has characters outside letters, digits and . _ : - (or does not start with a letter or digit)",
            field="conversation_id",
            index=index,
        )
    return value


def parse_timestamp(value: Any, index: int | None = None) -> datetime:
    if isinstance(value, datetime):
        ts = value
    elif isinstance(value, str):
        try:
            ts = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(
                f"{value!r} is not an ISO-8601 timestamp (example: 2026-03-02T09:15:00Z)",
                field="timestamp",
                index=index,
            ) from None
    else:
        raise ValidationError(
            "must be a timezone-aware datetime or an ISO-8601 string", field="timestamp", index=index
        )
    if ts.tzinfo is None or ts.utcoffset() is None:
        raise ValidationError(
            "has no timezone; pass an aware datetime (datetime.now(timezone.utc)) or an "
            "ISO-8601 string ending in Z or an offset such as +02:00",
            field="timestamp",
            index=index,
        )
    return ts


def validate_message(raw: dict[str, Any], settings: Settings, now: datetime, index: int | None = None) -> ValidMessage:
    """Check one message given as a mapping of the public field names."""
    unknown = set(raw) - FIELDS
    if unknown:
        raise ValidationError(
            f"unknown field(s) {sorted(unknown)}; allowed: {sorted(FIELDS - {'tenant'})}", index=index
        )
    conversation_id = check_conversation_id(raw.get("conversation_id"), settings, index)

    role = raw.get("role")
    if role not in ROLES:
        raise ValidationError(f"{role!r} is not one of {', '.join(ROLES)}", field="role", index=index)

    content = raw.get("content")
    if not isinstance(content, str):
        raise ValidationError("must be a string", field="content", index=index)
    if not content.strip():
        raise ValidationError("is empty", field="content", index=index)
    if len(content) > settings.message_max_chars:
        raise ValidationError(
            f"is {len(content)} characters; at most {settings.message_max_chars} are allowed "
            "(MEMQ_MESSAGE_MAX_CHARS)",
            field="content",
            index=index,
        )
    if "\x00" in content:
        raise ValidationError("contains a NUL character, which PostgreSQL cannot store", field="content", index=index)

    timestamp = None
    if raw.get("timestamp") is not None:
        timestamp = parse_timestamp(raw["timestamp"], index)
        if timestamp - now > FUTURE_TOLERANCE:
            raise ValidationError(
                f"{timestamp.isoformat()} is more than {FUTURE_TOLERANCE} in the future; check the sender's clock",
                field="timestamp",
                index=index,
            )

    message_id = raw.get("message_id")
    if message_id is not None:
        if not isinstance(message_id, str) or not _MESSAGE_ID_RE.match(message_id):
            raise ValidationError(
                "must be 1-200 printable ASCII characters without spaces", field="message_id", index=index
            )

    metadata = raw.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise ValidationError("must be a JSON object (dict)", field="metadata", index=index)
        try:
            encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"is not JSON-serialisable: {exc}", field="metadata", index=index) from None
        if "\\u0000" in encoded:
            raise ValidationError("contains a NUL character", field="metadata", index=index)
        if len(encoded.encode()) > settings.metadata_max_bytes:
            raise ValidationError(
                f"is {len(encoded.encode())} bytes as JSON; at most {settings.metadata_max_bytes} "
                "(MEMQ_METADATA_MAX_BYTES)",
                field="metadata",
                index=index,
            )

    return ValidMessage(conversation_id, role, content, timestamp, message_id, metadata or None)
