"""The ``memq-export`` format: JSON Lines, one record per line, each an object with a
``type``. The first line is the header (format name, version, embedding model and
dimension, tenant, time of export), the last is ``end`` (how many records came before
it, so a file cut at a line boundary is told from a whole one). In between, per
conversation: its ``conversation`` record, its ``gap`` records, each ``episode`` followed
by its ``message`` records, its ``review`` and ``pending_review`` records and its ``fact``
records (each with its history). Vectors are base64 of little-endian float32
(``memq.shared.vector_codec``).

Each record type is a pydantic model below (``RECORDS``): what a field holds, whether it
may be null (``X | None``) and whether a file may lack it (a default: a field added after
version 1, which files written before it lack). Values stay as JSON gives them
(timestamps and ids as strings, checked); the importer reads the checked dict.

Everything here is pure: building records, encoding a line, and parsing and checking a
line (``parse_line``), which raises ``FormatError`` naming the line and what is wrong."""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr
from pydantic import ValidationError as PydanticError

from memq.shared.errors import MemqError

FORMAT = "memq-export"
VERSION = 1


def _timestamp(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("an ISO-8601 timestamp") from None
    return value


def _day(value: str) -> str:
    try:
        date.fromisoformat(value)
    except ValueError:
        raise ValueError("an ISO-8601 date") from None
    return value


def _uuid(value: str) -> str:
    try:
        uuid.UUID(value)
    except ValueError:
        raise ValueError("a UUID") from None
    return value


Str = StrictStr
Int = StrictInt
Num = StrictFloat  # an integer too (strict float takes one), never a boolean
Timestamp = Annotated[StrictStr, AfterValidator(_timestamp)]  # ISO-8601, kept as the string
Day = Annotated[StrictStr, AfterValidator(_day)]
Uuid = Annotated[StrictStr, AfterValidator(_uuid)]
Vector = StrictStr  # base64 of little-endian float32
Obj = dict[str, Any]
Array = list[Any]


class _Record(BaseModel):
    """Fields a newer memq adds are ignored by this one (a record is read as a dict)."""

    model_config = ConfigDict(strict=True, extra="ignore")


class Header(_Record):
    type: Literal["header"]
    format: Str
    version: Int
    embedding_model: Str
    embedding_dim: Int
    tenant: Str
    conversation_id: Str | None
    user_id: Str | None = None
    exported_at: Timestamp


class Conversation(_Record):
    type: Literal["conversation"]
    tenant: Str
    conversation_id: Str
    fence: Int | None
    last_seq: Int | None
    last_message_at: Timestamp | None
    message_count: Int | None
    episode_count: Int | None
    created_at: Timestamp | None
    user_id: Str | None = None


class Gap(_Record):
    type: Literal["gap"]
    tenant: Str
    conversation_id: Str
    first_seq: Int
    last_seq: Int
    reason: Str
    message_id: Str | None
    recorded_at: Timestamp


class Episode(_Record):
    type: Literal["episode"]
    tenant: Str
    conversation_id: Str
    id: Uuid
    message_count: Int
    first_seq: Int
    last_seq: Int
    title: Str
    summary: Str
    embedding: Vector
    embedding_model: Str
    stability: Num
    difficulty: Num
    fsrs_card: Obj
    surprise: Num
    boundary_reason: Str
    boundary_source: Str
    detector: Str
    summary_source: Str
    summary_model: Str | None
    summary_error: Str | None
    tools_used: Array
    overlap: Array
    token_count: Int
    start_at: Timestamp
    end_at: Timestamp
    created_at: Timestamp
    last_reviewed_at: Timestamp | None
    consolidated_at: Timestamp | None


class Message(_Record):
    type: Literal["message"]
    tenant: Str
    conversation_id: Str
    episode_id: Uuid
    seq: Int
    id: Str
    role: Str
    content: Str
    timestamp: Timestamp
    sent_at: Timestamp | None
    metadata: Obj | None
    speaker: Str | None
    embedding: Vector | None


class Review(_Record):
    type: Literal["review"]
    tenant: Str
    conversation_id: Str
    memory_id: Uuid
    review_day: Day
    reviewed_at: Timestamp
    rating: Int
    source: Str
    detail: Obj
    card_before: Obj
    card_after: Obj
    reviews_merged: Int
    segment_id: Uuid | None
    created_at: Timestamp
    updated_at: Timestamp


class PendingReview(_Record):
    type: Literal["pending_review"]
    tenant: Str
    conversation_id: Str
    memory_id: Uuid
    query: Str
    rank: Int
    score: Num
    retrieved_at: Timestamp
    consumed_at: Timestamp | None
    asked_in: Str | None
    review_memory_id: Uuid | None
    review_day: Day | None


class FactChange(_Record):
    """One entry of a fact's history."""

    action: Str
    at: Timestamp
    run_id: Uuid
    episode_ids: Array
    detail: Obj


class Fact(_Record):
    type: Literal["fact"]
    tenant: Str
    conversation_id: Str
    id: Uuid
    category: Str
    content: Str
    embedding: Vector
    valid_at: Timestamp | None
    invalid_at: Timestamp | None
    created_at: Timestamp
    expired_at: Timestamp | None
    superseded_by: Uuid | None
    source_episode_ids: Array
    reinforcements: Int
    last_reinforced_at: Timestamp | None
    model: Str | None
    history: list[FactChange]


class End(_Record):
    type: Literal["end"]
    records: Int


RECORDS: dict[str, type[_Record]] = {
    "header": Header,
    "conversation": Conversation,
    "gap": Gap,
    "episode": Episode,
    "message": Message,
    "review": Review,
    "pending_review": PendingReview,
    "fact": Fact,
    "end": End,
}


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
    return Header(
        type="header",
        format=FORMAT,
        version=VERSION,
        embedding_model=embedding_model,
        embedding_dim=embedding_dim,
        tenant=tenant,
        conversation_id=conversation_id,
        user_id=user_id,
        exported_at=exported_at.isoformat(),
    ).model_dump()


def end(records: int) -> dict[str, Any]:
    return End(type="end", records=records).model_dump()


# -- reading ------------------------------------------------------------------------

# what a field must be, by pydantic's error type (a checked string says it itself)
_EXPECTED = {
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "dict_type": "an object",
    "list_type": "an array",
    "literal_error": "the record's type",
}


def _reason(kind: str, error: Any) -> str:
    """One pydantic error as memq words it: which field, and what it must be."""
    loc = tuple(error["loc"])
    what, name = f"the {kind} record", str(loc[0]) if loc else "?"
    if loc[:1] == ("history",) and len(loc) >= 2:  # an entry of a fact's history
        what = f"the fact record's history[{loc[1]}]"
        if len(loc) == 2:
            return f"{what} is not an object"
        name = str(loc[2])
    if error["type"] == "missing":
        return f"{what} has no field {name!r}"
    if error["type"] == "value_error":  # the checked strings (timestamp, date, UUID) name what they must be
        expected = str(error.get("ctx", {}).get("error", "valid"))
    else:
        expected = _EXPECTED.get(error["type"], "valid")
    shown = json.dumps(error.get("input"), default=str)[:60]
    return f"{what} field {name!r} must be {expected}, not {shown}"


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
    if kind not in RECORDS:
        known = ", ".join(RECORDS)
        raise FormatError(line, f"unknown record type {str(kind)[:40]!r} (known: {known})")
    try:
        RECORDS[kind].model_validate(record)
    except PydanticError as exc:
        raise FormatError(line, _reason(kind, exc.errors()[0])) from None
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
