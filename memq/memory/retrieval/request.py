"""What a caller may ask of retrieval, validated at the edge like the producer's input."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from memq.shared.errors import ValidationError
from memq.shared.ids import check_conversation_id, check_tenant, check_user_id
from memq.shared.settings import Settings

DETAILS = ("none", "low", "high", "auto")


@dataclass(frozen=True)
class TimeRange:
    start: datetime | None
    end: datetime | None

    def overlaps(self, start: datetime, end: datetime) -> bool:
        return (self.start is None or end >= self.start) and (self.end is None or start < self.end)


@dataclass(frozen=True)
class RetrievalRequest:
    tenant: str
    conversation_ids: tuple[str, ...] | None  # None: every conversation of the tenant
    query: str
    limit: int
    detail: str
    max_tokens: int
    time_range: TimeRange | None
    now: datetime  # the moment of the question: retrievability and relative times
    asked_in: str | None = None  # the conversation the retrieval serves: its next segment reviews what was returned
    user_id: str | None = None  # only this user's conversations (``shared/users.py``: ``scoped``)
    # the vector legs compare half-precision copies of this many dimensions, the expression
    # the HNSW indexes are built on (migration 0018; MEMQ_EMBEDDING_DIM); None compares the
    # stored single-precision vectors (no index serves that: the bench's exact scan)
    half_dim: int | None = 384


def _aware(value: Any, field: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(f"{value[:40]!r} is not an ISO-8601 time", field=field) from None
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(
            "must be a timezone-aware datetime or an ISO-8601 string with Z or an offset", field=field
        )
    return value.astimezone(UTC)


def build_request(
    settings: Settings,
    *,
    tenant: str | None,
    query: Any,
    conversation_id: str | None = None,
    conversation_ids: list[str] | tuple[str, ...] | None = None,
    limit: Any = None,
    detail: Any = "auto",
    max_tokens: Any = None,
    time_range: tuple[Any, Any] | list[Any] | TimeRange | None = None,  # [start, end] as a list too
    now: datetime | str | None = None,  # a datetime or an ISO-8601 string
    asked_in: str | None = None,
    user_id: str | None = None,
) -> RetrievalRequest:
    """``asked_in``: the conversation the retrieval serves (default: the one conversation
    searched, if only one is); reviews of what is returned wait for its next segment."""
    tenant = check_tenant(tenant or settings.tenant)
    if conversation_id is not None and conversation_ids is not None:
        raise ValidationError("give conversation_id or conversation_ids, not both", field="conversation_ids")
    scope: tuple[str, ...] | None = None
    if conversation_id is not None:
        scope = (check_conversation_id(conversation_id, settings.conversation_id_max_length),)
    elif conversation_ids is not None:
        if not isinstance(conversation_ids, list | tuple) or not conversation_ids:
            raise ValidationError(
                "must be a non-empty list (omit it to search every conversation)", field="conversation_ids"
            )
        if len(conversation_ids) > settings.retrieval_max_conversations:
            raise ValidationError(
                f"at most {settings.retrieval_max_conversations} conversations", field="conversation_ids"
            )
        scope = tuple(
            dict.fromkeys(check_conversation_id(c, settings.conversation_id_max_length) for c in conversation_ids)
        )

    if not isinstance(query, str):
        raise ValidationError("must be a string", field="query")
    query = " ".join(query.split())
    if not query:
        raise ValidationError("is empty: say what to remember", field="query")
    if len(query) > settings.query_max_chars:
        raise ValidationError(
            f"is {len(query)} characters; at most {settings.query_max_chars} (MEMQ_QUERY_MAX_CHARS)", field="query"
        )
    if "\x00" in query:
        raise ValidationError("contains a NUL character", field="query")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("contains an unpaired UTF-16 surrogate", field="query") from None

    limit = settings.retrieval_limit if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= settings.retrieval_limit_max:
        raise ValidationError(f"must be a whole number from 1 to {settings.retrieval_limit_max}", field="limit")
    if detail not in DETAILS:
        raise ValidationError(f"{str(detail)[:20]!r} is not one of {', '.join(DETAILS)}", field="detail")
    max_tokens = settings.retrieval_max_tokens if max_tokens is None else max_tokens
    if (
        isinstance(max_tokens, bool)
        or not isinstance(max_tokens, int)
        or not 50 <= max_tokens <= settings.retrieval_max_tokens_max
    ):
        raise ValidationError(
            f"must be a whole number from 50 to {settings.retrieval_max_tokens_max}", field="max_tokens"
        )

    window = None
    if time_range is not None:
        if isinstance(time_range, TimeRange):
            window = time_range
        else:
            if not isinstance(time_range, list | tuple) or len(time_range) != 2:
                raise ValidationError("must be [start, end] (either may be null)", field="time_range")
            window = TimeRange(_aware(time_range[0], "time_range.start"), _aware(time_range[1], "time_range.end"))
        if window.start and window.end and window.start >= window.end:
            raise ValidationError("start must be before end", field="time_range")
    now = cast(datetime, _aware(now, "now")) if now is not None else datetime.now(UTC)  # a time in, a time out
    if asked_in is not None:
        asked_in = check_conversation_id(asked_in, settings.conversation_id_max_length, field="asked_in")
    elif scope is not None and len(scope) == 1:
        asked_in = scope[0]
    if user_id is not None:
        user_id = check_user_id(user_id, settings.conversation_id_max_length)
    return RetrievalRequest(
        tenant, scope, query, limit, detail, max_tokens, window, now, asked_in, user_id, settings.embedding_dim
    )


def scoped(conn: Any, request: RetrievalRequest) -> RetrievalRequest:
    """The request with a user scope turned into the user's conversations (narrowed to the
    ones asked for): what the legs filter by. Unchanged without a user."""
    if request.user_id is None:
        return request
    from dataclasses import replace

    from memq.shared.users import within_user

    return replace(
        request, conversation_ids=within_user(conn, request.tenant, request.user_id, request.conversation_ids)
    )
