"""Validation of incoming messages at the edge. Pure: no Redis, no clock but the
``now`` passed in. Anything refused raises ``ValidationError`` naming the field and,
in a batch, the message's index; nothing is written for a refused batch.

The rules are those under which every later stage (decoding, token counting,
segmentation, tool extraction, episode building, PostgreSQL's text and jsonb types)
is known to succeed, so an accepted message can always be processed: the property
test in ``tests/unit/producer/test_processable.py`` checks exactly that.
"""

from __future__ import annotations

import functools
import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, TypeGuard

from memq.shared.errors import ValidationError
from memq.shared.ids import check_conversation_id as _check_conversation_id
from memq.shared.ids import check_tenant
from memq.shared.settings import Settings

ROLES = ("user", "assistant", "system", "tool")
FIELDS = frozenset({"conversation_id", "role", "content", "timestamp", "message_id", "metadata", "tenant"})
FUTURE_TOLERANCE = timedelta(minutes=5)
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
METADATA_MAX_DEPTH = 32
# Python's json refuses to read (or write) integers with more digits than this (its
# default int/str conversion limit), so a worker could never decode such a message.
JSON_INT_MAX_DIGITS = 4300
_INT_LIMIT = 10**JSON_INT_MAX_DIGITS
_DEFAULT: Any = object()  # a field the message does not give: the caller's default applies
_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,39}")


class ValidMessage(NamedTuple):
    """A message that passed validation (immutable; a named tuple: constructing a frozen
    dataclass cost a third of validating a message)."""

    tenant: str
    conversation_id: str
    role: str
    content: str
    timestamp: datetime | None  # None: stamped with the arrival time (Redis' clock)
    message_id: str | None
    metadata: dict[str, Any] | None


# ValidMessage's own __new__ is a Python function; tuple's makes the same tuple in half the time
_new_message = tuple.__new__


def _valid_message_id(value: Any) -> bool:
    """1-200 printable ASCII characters without spaces, by string methods in C (the regular
    expression this replaces was slower, and its ``$`` let one trailing newline through,
    which would have split the id's line in the enqueue script's batch)."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= 200
        and value.isascii()
        and value.isprintable()
        and " " not in value
    )


def check_conversation_id(value: Any, settings: Settings, index: int | None = None) -> str:
    return _check_conversation_id(value, settings.conversation_id_max_length, index)


def _check_text(value: str, field: str, index: int | None) -> None:
    if "\x00" in value:
        raise ValidationError("contains a NUL character, which PostgreSQL cannot store", field=field, index=index)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(
            "contains an unpaired UTF-16 surrogate (not valid Unicode text); decode your input as UTF-8",
            field=field,
            index=index,
        ) from None


def parse_timestamp(value: Any, index: int | None = None) -> datetime:
    if type(value) is datetime and value.tzinfo is UTC and value >= EARLIEST:
        return value  # already what the checks below return (the common case: no copy)
    if isinstance(value, datetime):
        ts = value
    elif isinstance(value, str):
        try:
            ts = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(
                f"{value[:60]!r} is not an ISO-8601 timestamp (example: 2026-03-02T09:15:00Z)",
                field="timestamp",
                index=index,
            ) from None
    else:
        raise ValidationError("must be a timezone-aware datetime or an ISO-8601 string", field="timestamp", index=index)
    try:
        offset = ts.utcoffset()
    except (ValueError, TypeError, OverflowError) as exc:  # a tzinfo of the caller's own making
        raise ValidationError(f"has an unusable time zone ({exc})", field="timestamp", index=index) from None
    if ts.tzinfo is None or offset is None:
        raise ValidationError(
            "has no timezone; pass an aware datetime (datetime.now(timezone.utc)) or an "
            "ISO-8601 string ending in Z or an offset such as +02:00",
            field="timestamp",
            index=index,
        )
    try:
        utc = ts.astimezone(UTC)
    except (OverflowError, ValueError):  # before year 1 or after year 9999 in UTC
        utc = None
    if utc is None and ts.year > EARLIEST.year:
        raise ValidationError(
            f"{value!s:.40} is more than {FUTURE_TOLERANCE} in the future; check the sender's clock",
            field="timestamp",
            index=index,
        )
    if utc is None or utc < EARLIEST:
        raise ValidationError(f"{value!s:.40} is before {EARLIEST:%Y-%m-%d}", field="timestamp", index=index)
    return utc


def _child(path: str, key: str) -> str:
    """``metadata.key`` for a plain key, else ``metadata['odd key']`` (quoted, shortened)."""
    return f"{path}.{key}" if _SIMPLE_KEY.fullmatch(key) else f"{path}[{key[:40]!r}]"


def _plain_json(value: Any, index: int | None, path: str = "metadata", depth: int = 0) -> None:
    """Only what JSON (and PostgreSQL's jsonb) hold: objects with string keys, arrays,
    strings without NUL or lone surrogates, finite numbers, booleans and null."""
    if depth > METADATA_MAX_DEPTH:
        raise ValidationError(f"is nested deeper than {METADATA_MAX_DEPTH} levels", field=path, index=index)
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) >= _INT_LIMIT:
            raise ValidationError(
                f"is an integer of more than {JSON_INT_MAX_DIGITS} digits; send it as a string", field=path, index=index
            )
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{value} is not a finite number", field=path, index=index)
        return
    if isinstance(value, str):
        _check_text(value, path, index)
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _plain_json(item, index, f"{path}[{i}]", depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"key {key!r} is not a string", field=path, index=index)
            _check_text(key, path, index)
            _plain_json(item, index, _child(path, key), depth + 1)
        return
    raise ValidationError(f"a {type(value).__name__} is not a JSON value", field=path, index=index)


def _check_name(value: Any, field: str, index: int | None) -> None:
    if value is not None and not isinstance(value, str):
        raise ValidationError(
            f"must be a string (the tool's name), not a {type(value).__name__}", field=field, index=index
        )


def check_metadata(metadata: Any, settings: Settings, index: int | None = None) -> dict[str, Any] | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise ValidationError("must be a JSON object (dict)", field="metadata", index=index)
    _plain_json(metadata, index)
    size = len(json.dumps(metadata, ensure_ascii=False).encode())
    if size > settings.metadata_max_bytes:
        raise ValidationError(
            f"is {size} bytes as JSON; at most {settings.metadata_max_bytes} (MEMQ_METADATA_MAX_BYTES)",
            field="metadata",
            index=index,
        )
    # The fields memq reads itself (tools used by a segment) must have the documented shapes.
    calls = metadata.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
            raise ValidationError(
                'must be a list of objects like {"name": ...}', field="metadata.tool_calls", index=index
            )
        for i, call in enumerate(calls):
            _check_name(call.get("name"), f"metadata.tool_calls[{i}].name", index)
            function = call.get("function")
            if function is not None:
                if not isinstance(function, dict):
                    raise ValidationError(
                        'must be an object like {"name": "search", "arguments": "..."} '
                        '(or leave it out and give "name")',
                        field=f"metadata.tool_calls[{i}].function",
                        index=index,
                    )
                _check_name(function.get("name"), f"metadata.tool_calls[{i}].function.name", index)
    for name in ("tool_name", "name"):
        _check_name(metadata.get(name), f"metadata.{name}", index)
    return metadata or None


def validate_message(
    raw: dict[str, Any],
    settings: Settings,
    now: datetime,
    index: int | None = None,
    tenant: str | None = None,
    conversation_id: str | None = None,
    *,
    defaults_checked: bool = False,
) -> ValidMessage:
    """Check one message given as a mapping of the public field names. ``tenant`` and
    ``conversation_id`` are the caller's defaults; a message may name its own (validated
    the same way). ``defaults_checked``: the caller has validated both defaults already
    (once per batch, not once per message). ``raw`` is only read."""
    if not FIELDS.issuperset(raw):
        unknown = set(raw) - FIELDS
        raise ValidationError(f"unknown field(s) {sorted(map(str, unknown))}; allowed: {sorted(FIELDS)}", index=index)
    named = raw.get("tenant")
    if named is None and defaults_checked and tenant is not None:
        message_tenant = tenant
    else:
        message_tenant = named if named is not None else (tenant or settings.tenant)
        if not _known_id(message_tenant, 0):
            message_tenant = check_tenant(message_tenant, index)
    conversation = raw.get("conversation_id", _DEFAULT)
    if conversation is _DEFAULT and defaults_checked and conversation_id is not None:
        conversation = conversation_id
    else:
        if conversation is _DEFAULT:
            conversation = conversation_id
        if not _known_id(conversation, settings.conversation_id_max_length):
            conversation = check_conversation_id(conversation, settings, index)

    role = raw.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise ValidationError(f"{role!r:.40} is not one of {', '.join(ROLES)}", field="role", index=index)

    content = raw.get("content")
    if not isinstance(content, str):
        raise ValidationError("must be a string", field="content", index=index)
    if not content or content.isspace():  # what strip() would empty, without copying
        raise ValidationError("is empty", field="content", index=index)
    if len(content) > settings.message_max_chars:
        raise ValidationError(
            f"is {len(content)} characters; at most {settings.message_max_chars} are allowed (MEMQ_MESSAGE_MAX_CHARS)",
            field="content",
            index=index,
        )
    if not content.isascii() or "\x00" in content:  # ASCII without NUL passes _check_text
        _check_text(content, "content", index)

    timestamp = raw.get("timestamp")
    if timestamp is not None:
        timestamp = parse_timestamp(timestamp, index)
        if timestamp - now > FUTURE_TOLERANCE:
            raise ValidationError(
                f"{timestamp.isoformat()} is more than {FUTURE_TOLERANCE} in the future; check the sender's clock",
                field="timestamp",
                index=index,
            )

    message_id = raw.get("message_id")
    if message_id is not None and not _valid_message_id(message_id):
        raise ValidationError(
            "must be 1-200 printable ASCII characters without spaces", field="message_id", index=index
        )

    metadata = raw.get("metadata")
    if metadata is not None:
        metadata = check_metadata(metadata, settings, index)
    return _new_message(ValidMessage, (message_tenant, conversation, role, content, timestamp, message_id, metadata))


@functools.lru_cache(maxsize=4096)
def _known_valid(value: str, max_length: int) -> bool:
    """Whether ``value`` passes ``check_tenant`` (``max_length`` 0) or
    ``check_conversation_id`` with ``max_length``: a batch names the same few ids over and
    over, so each is checked once (a refused one is checked again, to raise with its index)."""
    try:
        if max_length:
            _check_conversation_id(value, max_length)
        else:
            check_tenant(value)
    except ValidationError:
        return False
    return True


def _known_id(value: Any, max_length: int) -> TypeGuard[str]:
    return type(value) is str and _known_valid(value, max_length)


def valid_conversation_id(value: Any, settings: Settings) -> bool:
    """Whether ``value`` passes ``check_conversation_id`` (each id checked once per process)."""
    return _known_id(value, settings.conversation_id_max_length)
