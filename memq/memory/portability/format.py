"""The ``memq-export`` format: JSON Lines, one record per line, each an object with a
``type``. The first line is the header (format name, version, embedding model and
dimension, tenant, time of export), the last is ``end`` (how many records came before
it, so a file cut at a line boundary is told from a whole one). In between, per
conversation: its ``conversation`` record, its ``gap`` records, each ``episode`` followed
by its ``message`` records, its ``review`` and ``pending_review`` records and its ``fact``
records (each with its history). Vectors are base64 of little-endian float32.

Everything here is pure: building records, encoding a line, and parsing and checking a
line (``parse_line``), which raises ``FormatError`` naming the line and what is wrong."""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime
from typing import Any

from memq.shared.errors import MemqError

FORMAT = "memq-export"
VERSION = 1

# Field kinds: str, int, num, ts (ISO-8601 timestamp), day (ISO date), uuid, obj, list,
# vec (base64 float32), any; a trailing "?" allows null, a trailing "*" null or no field at
# all (a field added after version 1: files written before it lack it).
FIELDS: dict[str, dict[str, str]] = {
    "header": {
        "format": "str",
        "version": "int",
        "embedding_model": "str",
        "embedding_dim": "int",
        "tenant": "str",
        "conversation_id": "str?",
        "user_id": "str*",
        "exported_at": "ts",
    },
    "conversation": {
        "tenant": "str",
        "conversation_id": "str",
        "fence": "int?",
        "last_seq": "int?",
        "last_message_at": "ts?",
        "message_count": "int?",
        "episode_count": "int?",
        "created_at": "ts?",
        "user_id": "str*",
    },
    "gap": {
        "tenant": "str",
        "conversation_id": "str",
        "first_seq": "int",
        "last_seq": "int",
        "reason": "str",
        "message_id": "str?",
        "recorded_at": "ts",
    },
    "episode": {
        "tenant": "str",
        "conversation_id": "str",
        "id": "uuid",
        "message_count": "int",
        "first_seq": "int",
        "last_seq": "int",
        "title": "str",
        "summary": "str",
        "embedding": "vec",
        "embedding_model": "str",
        "stability": "num",
        "difficulty": "num",
        "fsrs_card": "obj",
        "surprise": "num",
        "boundary_reason": "str",
        "boundary_source": "str",
        "detector": "str",
        "summary_source": "str",
        "summary_model": "str?",
        "summary_error": "str?",
        "tools_used": "list",
        "overlap": "list",
        "token_count": "int",
        "start_at": "ts",
        "end_at": "ts",
        "created_at": "ts",
        "last_reviewed_at": "ts?",
        "consolidated_at": "ts?",
    },
    "message": {
        "tenant": "str",
        "conversation_id": "str",
        "episode_id": "uuid",
        "seq": "int",
        "id": "str",
        "role": "str",
        "content": "str",
        "timestamp": "ts",
        "sent_at": "ts?",
        "metadata": "obj?",
        "speaker": "str?",
        "embedding": "vec?",
    },
    "review": {
        "tenant": "str",
        "conversation_id": "str",
        "memory_id": "uuid",
        "review_day": "day",
        "reviewed_at": "ts",
        "rating": "int",
        "source": "str",
        "detail": "obj",
        "card_before": "obj",
        "card_after": "obj",
        "reviews_merged": "int",
        "segment_id": "uuid?",
        "created_at": "ts",
        "updated_at": "ts",
    },
    "pending_review": {
        "tenant": "str",
        "conversation_id": "str",
        "memory_id": "uuid",
        "query": "str",
        "rank": "int",
        "score": "num",
        "retrieved_at": "ts",
        "consumed_at": "ts?",
        "asked_in": "str?",
        "review_memory_id": "uuid?",
        "review_day": "day?",
    },
    "fact": {
        "tenant": "str",
        "conversation_id": "str",
        "id": "uuid",
        "category": "str",
        "content": "str",
        "embedding": "vec",
        "valid_at": "ts?",
        "invalid_at": "ts?",
        "created_at": "ts",
        "expired_at": "ts?",
        "superseded_by": "uuid?",
        "source_episode_ids": "list",
        "reinforcements": "int",
        "last_reinforced_at": "ts?",
        "model": "str?",
        "history": "list",
    },
    "end": {"records": "int"},
}
HISTORY_FIELDS = {"action": "str", "at": "ts", "run_id": "uuid", "episode_ids": "list", "detail": "obj"}


class FormatError(MemqError):
    """A line that is not a valid record of this format (``line`` counts from 1)."""

    def __init__(self, line: int, reason: str):
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


class FormatTooNew(FormatError):
    """The file was written by a newer memq, in a format version this one does not read."""


# -- writing ------------------------------------------------------------------------


def _default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def encode(record: dict[str, Any]) -> str:
    """One record as one line (with its newline)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_default) + "\n"


def header(
    *,
    tenant: str,
    conversation_id: str | None,
    embedding_model: str,
    embedding_dim: int,
    exported_at: datetime,
    user_id: str | None = None,
) -> dict[str, Any]:
    return {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "embedding_model": embedding_model,
        "embedding_dim": embedding_dim,
        "tenant": tenant,
        "conversation_id": conversation_id,
        "user_id": user_id,
        "exported_at": exported_at.isoformat(),
    }


def end(records: int) -> dict[str, Any]:
    return {"type": "end", "records": records}


# -- reading ------------------------------------------------------------------------


def _kind_ok(kind: str, value: Any) -> bool:
    if value is None:
        return kind.endswith(("?", "*"))
    kind = kind.rstrip("?*")
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "num":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind in ("str", "vec"):
        return isinstance(value, str)
    if kind == "obj":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    if kind in ("ts", "day", "uuid"):
        if not isinstance(value, str):
            return False
        try:
            if kind == "ts":
                datetime.fromisoformat(value)
            elif kind == "day":
                date.fromisoformat(value)
            else:
                uuid.UUID(value)
        except ValueError:
            return False
        return True
    return True  # any


_KIND_NAMES = {
    "int": "an integer",
    "num": "a number",
    "str": "a string",
    "vec": "a base64 vector",
    "obj": "an object",
    "list": "an array",
    "ts": "an ISO-8601 timestamp",
    "day": "an ISO-8601 date",
    "uuid": "a UUID",
}


def check_fields(record: dict[str, Any], fields: dict[str, str], what: str, line: int) -> None:
    for name, kind in fields.items():
        if name not in record:
            if kind.endswith("*"):
                continue
            raise FormatError(line, f"{what} has no field {name!r}")
        if not _kind_ok(kind, record[name]):
            shown = json.dumps(record[name], default=str)[:60]
            expected = _KIND_NAMES.get(kind.rstrip("?*"), kind)
            raise FormatError(line, f"{what} field {name!r} must be {expected}, not {shown}")


def parse_line(raw: str | bytes, line: int) -> dict[str, Any]:
    """One line as a checked record; ``FormatError`` says what is wrong with it."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(line, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        record = json.loads(raw)
    except json.JSONDecodeError as exc:
        cut = " (the file was cut in the middle of it?)" if not raw.endswith("\n") else ""
        raise FormatError(line, f"not valid JSON ({exc.msg} at column {exc.colno}){cut}") from None
    if not isinstance(record, dict):
        raise FormatError(line, "not a JSON object")
    kind = record.get("type")
    if kind not in FIELDS:
        known = ", ".join(FIELDS)
        raise FormatError(line, f"unknown record type {str(kind)[:40]!r} (known: {known})")
    check_fields(record, FIELDS[kind], f"the {kind} record", line)
    if kind == "fact":
        for i, change in enumerate(record["history"]):
            if not isinstance(change, dict):
                raise FormatError(line, f"the fact record's history[{i}] is not an object")
            check_fields(change, HISTORY_FIELDS, f"the fact record's history[{i}]", line)
    return record


def check_header(record: dict[str, Any], line: int = 1) -> None:
    """The first record must be this format's header, in a version this memq reads."""
    if record.get("type") != "header" or record.get("format") != FORMAT:
        raise FormatError(line, f"not a {FORMAT} file: its first line must be the header record")
    if record["version"] > VERSION:
        raise FormatTooNew(
            line,
            f"the file is {FORMAT} version {record['version']}, written by a newer memq; this memq reads versions "
            f"up to {VERSION}: upgrade memq here (pip install -U memq) and import again, or export the data again "
            f"with this memq's version",
        )
    if record["version"] < 1:
        raise FormatError(line, f"version {record['version']} is not a {FORMAT} version")
