"""Every operation of the HTTP API the client calls, and the request each client method
sends: built here once, sent by :class:`memq.client.Client` (blocking) and
:class:`memq.client.AsyncClient` (asyncio) alike.

``OPERATIONS`` maps each client method to its route (method and OpenAPI path), whether a
retry is safe, the model of its answer and the query parameters it sends;
``NOT_CALLED`` names the routes of the OpenAPI document the client leaves out, each with
its reason. ``tests/unit/memq/client/test_client_drift.py`` holds both against the app's OpenAPI
document: every operation is in one of them, and each entry matches its route."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memq.api.models import Detail
from memq.client.errors import BadRequest, UnexpectedResponse
from memq.client.models import (
    ActivityOut,
    AddResultOut,
    ContextOut,
    ConversationFactsOut,
    ConversationsOut,
    ConversationStatusOut,
    DeliveryListOut,
    DeliveryRetriedOut,
    EpisodesOut,
    FactHistoryOut,
    FactSearchIn,
    FactSearchOut,
    FlushOut,
    ForgetOut,
    HealthOut,
    ImportOut,
    ManifestOut,
    MessageIn,
    MessagesOut,
    MoveOut,
    QuotaOut,
    ReadyOut,
    RecentIn,
    RecentOut,
    RetrieveIn,
    RetrieveOut,
    TimeRangeIn,
    UserConversationsOut,
    UserForgetOut,
    WebhookCreatedOut,
    WebhookDeletedOut,
    WebhookListOut,
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

Message = Mapping[str, Any] | MessageIn
"""A message to add: a mapping with the API's keys (``role``, ``content``, optional
``timestamp``, ``message_id``, ``metadata``, ``user_id``) or a :class:`MessageIn`."""
Moment = str | datetime
"""A time: ISO-8601 text with ``Z`` or an offset, or an aware ``datetime``."""

FLUSH_WAIT_MAX = 60.0
"""The longest ``wait`` the API takes on one flush (its ``wait`` parameter's maximum);
the client waits longer by asking again."""
JSONL = "application/x-ndjson"


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    """The path as the OpenAPI document writes it (``{conversation_id}`` ...)."""
    retry_safe: bool
    """Sending it again after a failure cannot do anything twice (see ``memq.client.retry``)."""
    result: type[BaseModel] | None
    """The model of the JSON answer; None: not JSON (the export's JSON Lines)."""
    query: tuple[str, ...] = ()
    """The query parameters the client may send (``format`` aside)."""
    json_format: bool = False
    """The route answers markdown or JSON: the client always asks for ``format=json`` (the
    markdown is the answer's ``text``)."""


_C = "/v1/conversations/{conversation_id}"

OPERATIONS: dict[str, Operation] = {
    # ingest
    "add_messages": Operation("POST", f"{_C}/messages", True, MessagesOut),
    "add_message": Operation("POST", f"{_C}/messages", True, MessagesOut),
    "flush": Operation("POST", f"{_C}/flush", True, FlushOut, ("wait",)),
    "status": Operation("GET", f"{_C}/status", True, ConversationStatusOut),
    # conversations
    "list_conversations": Operation("GET", "/v1/conversations", True, ConversationsOut, ("after", "limit")),
    "iter_conversations": Operation("GET", "/v1/conversations", True, ConversationsOut, ("after", "limit")),
    "episodes": Operation("GET", f"{_C}/episodes", True, EpisodesOut),
    "manifest": Operation(
        "GET", f"{_C}/manifest", True, ManifestOut, ("depth", "timezone", "user_id"), json_format=True
    ),
    "context": Operation(
        "GET",
        f"{_C}/context",
        True,
        ContextOut,
        ("max_tokens", "summaries", "continuity", "timezone", "user_id"),
        json_format=True,
    ),
    "forget": Operation("DELETE", _C, True, ForgetOut),
    # memory
    "retrieve": Operation("POST", "/v1/memory/retrieve", True, RetrieveOut, json_format=True),
    "recent": Operation("POST", "/v1/memory/recent", True, RecentOut, json_format=True),
    # facts
    "facts": Operation("GET", f"{_C}/facts", True, ConversationFactsOut, ("include_retired",)),
    "search_facts": Operation("POST", "/v1/facts/search", True, FactSearchOut),
    "fact_history": Operation("GET", "/v1/facts/{fact_id}/history", True, FactHistoryOut),
    # users
    "move_conversation": Operation("POST", f"{_C}/user", True, MoveOut),
    "user_conversations": Operation(
        "GET", "/v1/users/{user_id}/conversations", True, UserConversationsOut, ("changes",)
    ),
    "forget_user": Operation("DELETE", "/v1/users/{user_id}", True, UserForgetOut),
    # portability
    "export": Operation("GET", "/v1/export", True, None, ("conversation_id", "user_id")),
    "export_to": Operation("GET", "/v1/export", True, None, ("conversation_id", "user_id")),
    "import_": Operation("POST", "/v1/import", True, ImportOut),
    # webhooks
    "create_webhook": Operation("POST", "/v1/webhooks", False, WebhookCreatedOut),
    "list_webhooks": Operation("GET", "/v1/webhooks", True, WebhookListOut),
    "delete_webhook": Operation("DELETE", "/v1/webhooks/{webhook_id}", True, WebhookDeletedOut),
    "webhook_deliveries": Operation("GET", "/v1/webhooks/deliveries", True, DeliveryListOut, ("failed", "limit")),
    "retry_delivery": Operation("POST", "/v1/webhooks/deliveries/{delivery_id}/retry", False, DeliveryRetriedOut),
    # activity
    "list_activity": Operation("GET", "/v1/activity", True, ActivityOut, ("action", "since", "after", "limit")),
    "iter_activity": Operation("GET", "/v1/activity", True, ActivityOut, ("action", "since", "after", "limit")),
    # quota
    "quota": Operation("GET", "/v1/quota", True, QuotaOut),
    # health
    "health": Operation("GET", "/healthz", True, HealthOut),
    "ready": Operation("GET", "/readyz", True, ReadyOut),
}

NOT_CALLED: dict[tuple[str, str], str] = {
    ("POST", "/v1/memory/retrieve/raw"): "deprecated alias of POST /v1/memory/retrieve?format=json (retrieve)",
    ("POST", "/v1/memory/recent/raw"): "deprecated alias of POST /v1/memory/recent?format=json (recent)",
}
"""Routes of the OpenAPI document without a client method, and why. (``/mcp``, ``/inspect``,
``/metrics`` and the docs pages are not in the document: MCP has its own clients, the
inspector is for browsers, the metrics for Prometheus.)"""


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request, ready to send, and how to read its answer."""

    operation: Operation
    path: str
    parse: Callable[[httpx.Response], T]
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    extra_read_timeout: float = 0.0
    """Seconds the server may take on purpose (a flush's wait): added to the read timeout."""
    answers: frozenset[int] = frozenset()
    """Statuses besides 2xx that are answers, not errors (``/readyz``'s 503)."""


# --- helpers ----------------------------------------------------------------------------------


def new_message_id() -> str:
    """An id for a message the caller gave none: random (uuid4), fixed before the first attempt."""
    return str(uuid.uuid4())


def _segment(name: str, value: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest("must be a non-empty string", type="validation", field=name)
    return quote(value, safe="")


def _path(operation: Operation, **values: str) -> str:
    return operation.path.format(**{k: _segment(k, v) for k, v in values.items()})


def _moment(value: Moment | None) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def _query(operation: Operation, **values: Any) -> dict[str, Any]:
    unknown = set(values) - set(operation.query)
    assert not unknown, f"{operation.path} takes no {unknown}"  # the table and the builders agree
    params = {k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in values.items() if v is not None}
    if operation.json_format:
        params["format"] = "json"
    return params


def _body(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)


def model_parser(model: type[M]) -> Callable[[httpx.Response], M]:
    def parse(response: httpx.Response) -> M:
        try:
            return model.model_validate(response.json())
        except (ValueError, PydanticValidationError) as exc:
            raise _unexpected(response, f"the answer is not {model.__name__}: {str(exc)[:300]}") from exc

    return parse


def _unexpected(response: httpx.Response, message: str) -> UnexpectedResponse:
    return UnexpectedResponse(
        message,
        status=response.status_code,
        type="unexpected_response",
        method=response.request.method,
        url=str(response.request.url),
    )


def with_ids(messages: Iterable[Message], new_id: Callable[[], str] = new_message_id) -> list[dict[str, Any]]:
    """The messages as the API takes them, each with a ``message_id``: the caller's, or one
    made here. Fixed before the first attempt, so a retry of the batch is answered
    ``duplicate`` for what the first attempt stored, never stored twice."""
    out = []
    for m in messages:
        item = m.model_dump(mode="json", exclude_none=True) if isinstance(m, MessageIn) else dict(m)
        if isinstance(item.get("timestamp"), datetime):
            item["timestamp"] = item["timestamp"].isoformat()
        if item.get("message_id") is None:
            item["message_id"] = new_id()
        out.append(item)
    return out


def check_export(tail: bytes, response: httpx.Response) -> None:
    """The export ended with its end record (a stream cut short by the server does not)."""
    lines = tail.rstrip(b"\n").rsplit(b"\n", 1)
    try:
        last = json.loads(lines[-1]) if lines[-1] else None
    except ValueError:
        last = None
    if not isinstance(last, dict) or last.get("type") != "end":
        raise _unexpected(response, "the export ended without its end record: it is incomplete; export again")


def _export_bytes(response: httpx.Response) -> bytes:
    check_export(response.content[-4096:], response)
    return response.content


def _first_result(response: httpx.Response) -> AddResultOut:
    return model_parser(MessagesOut)(response).results[0]


# --- the requests -----------------------------------------------------------------------------


def add_messages(
    conversation_id: str,
    messages: Sequence[Message],
    *,
    user_id: str | None = None,
    new_id: Callable[[], str] = new_message_id,
) -> Call[MessagesOut]:
    op = OPERATIONS["add_messages"]
    if isinstance(messages, Mapping | MessageIn | str):
        raise TypeError("messages: a sequence of messages (use add_message for one)")
    body: dict[str, Any] = {"messages": with_ids(messages, new_id)}
    if user_id is not None:
        body["user_id"] = user_id
    return Call(op, _path(op, conversation_id=conversation_id), model_parser(MessagesOut), json=body)


def add_message(
    conversation_id: str,
    role: str,
    content: str,
    *,
    timestamp: Moment | None = None,
    message_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    user_id: str | None = None,
    new_id: Callable[[], str] = new_message_id,
) -> Call[AddResultOut]:
    op = OPERATIONS["add_message"]
    message: dict[str, Any] = {"role": role, "content": content, "message_id": message_id}
    if timestamp is not None:
        message["timestamp"] = _moment(timestamp)
    if metadata is not None:
        message["metadata"] = dict(metadata)
    if user_id is not None:
        message["user_id"] = user_id
    body = {"messages": with_ids([message], new_id)}
    return Call(op, _path(op, conversation_id=conversation_id), _first_result, json=body)


def flush(conversation_id: str, *, wait: float | None = None) -> Call[FlushOut]:
    op = OPERATIONS["flush"]
    if wait is not None and not 0 <= wait <= FLUSH_WAIT_MAX:  # longer waits: the client asks again
        raise BadRequest(f"must be from 0 to {FLUSH_WAIT_MAX:g} seconds", type="validation", field="wait")
    return Call(
        op,
        _path(op, conversation_id=conversation_id),
        model_parser(FlushOut),
        params=_query(op, wait=wait or None),
        extra_read_timeout=wait or 0.0,
    )


def status(conversation_id: str) -> Call[ConversationStatusOut]:
    op = OPERATIONS["status"]
    return Call(op, _path(op, conversation_id=conversation_id), model_parser(ConversationStatusOut))


def list_conversations(*, after: str | None = None, limit: int | None = None) -> Call[ConversationsOut]:
    op = OPERATIONS["list_conversations"]
    return Call(op, op.path, model_parser(ConversationsOut), params=_query(op, after=after, limit=limit))


def episodes(conversation_id: str) -> Call[EpisodesOut]:
    op = OPERATIONS["episodes"]
    return Call(op, _path(op, conversation_id=conversation_id), model_parser(EpisodesOut))


def manifest(
    conversation_id: str, *, depth: int | None = None, timezone: str | None = None, user_id: str | None = None
) -> Call[ManifestOut]:
    op = OPERATIONS["manifest"]
    params = _query(op, depth=depth, timezone=timezone, user_id=user_id)
    return Call(op, _path(op, conversation_id=conversation_id), model_parser(ManifestOut), params=params)


def context(
    conversation_id: str,
    *,
    max_tokens: int | None = None,
    summaries: int | None = None,
    continuity: int | None = None,
    timezone: str | None = None,
    user_id: str | None = None,
) -> Call[ContextOut]:
    op = OPERATIONS["context"]
    params = _query(
        op, max_tokens=max_tokens, summaries=summaries, continuity=continuity, timezone=timezone, user_id=user_id
    )
    return Call(op, _path(op, conversation_id=conversation_id), model_parser(ContextOut), params=params)


def forget(conversation_id: str) -> Call[ForgetOut]:
    op = OPERATIONS["forget"]
    return Call(op, _path(op, conversation_id=conversation_id), model_parser(ForgetOut))


def retrieve(
    query: str,
    *,
    conversation_id: str | None = None,
    conversation_ids: Sequence[str] | None = None,
    user_id: str | None = None,
    limit: int | None = None,
    detail: Detail = "auto",
    max_tokens: int | None = None,
    time_range: tuple[Moment | None, Moment | None] | None = None,
    now: Moment | None = None,
    record: bool = True,
    asked_in: str | None = None,
) -> Call[RetrieveOut]:
    op = OPERATIONS["retrieve"]
    body = RetrieveIn.model_construct(
        query=query,
        conversation_id=conversation_id,
        conversation_ids=None if conversation_ids is None else list(conversation_ids),
        user_id=user_id,
        limit=limit,
        detail=detail,
        max_tokens=max_tokens,
        time_range=None
        if time_range is None
        else TimeRangeIn.model_construct(start=_moment(time_range[0]), end=_moment(time_range[1])),
        now=_moment(now),
        record=record,
        asked_in=asked_in,
    )
    return Call(op, op.path, model_parser(RetrieveOut), params=_query(op), json=_body(body))


def recent(
    conversation_id: str | None = None,
    *,
    user_id: str | None = None,
    days: float = 7.0,
    limit: int | None = None,
    max_tokens: int | None = None,
    now: Moment | None = None,
) -> Call[RecentOut]:
    op = OPERATIONS["recent"]
    body = RecentIn.model_construct(
        conversation_id=conversation_id,
        user_id=user_id,
        days=days,
        limit=limit,
        max_tokens=max_tokens,
        now=_moment(now),
    )
    return Call(op, op.path, model_parser(RecentOut), params=_query(op), json=_body(body))


def facts(conversation_id: str, *, include_retired: bool = False) -> Call[ConversationFactsOut]:
    op = OPERATIONS["facts"]
    params = _query(op, include_retired=include_retired or None)
    return Call(op, _path(op, conversation_id=conversation_id), model_parser(ConversationFactsOut), params=params)


def search_facts(
    query: str,
    *,
    conversation_id: str | None = None,
    conversation_ids: Sequence[str] | None = None,
    user_id: str | None = None,
    limit: int | None = None,
) -> Call[FactSearchOut]:
    op = OPERATIONS["search_facts"]
    body = FactSearchIn.model_construct(
        query=query,
        conversation_id=conversation_id,
        conversation_ids=None if conversation_ids is None else list(conversation_ids),
        user_id=user_id,
        limit=limit,
    )
    return Call(op, op.path, model_parser(FactSearchOut), json=_body(body))


def fact_history(fact_id: str) -> Call[FactHistoryOut]:
    op = OPERATIONS["fact_history"]
    return Call(op, _path(op, fact_id=fact_id), model_parser(FactHistoryOut))


def move_conversation(conversation_id: str, user_id: str | None) -> Call[MoveOut]:
    op = OPERATIONS["move_conversation"]
    return Call(op, _path(op, conversation_id=conversation_id), model_parser(MoveOut), json={"user_id": user_id})


def user_conversations(user_id: str, *, changes: bool = False) -> Call[UserConversationsOut]:
    op = OPERATIONS["user_conversations"]
    params = _query(op, changes=changes or None)
    return Call(op, _path(op, user_id=user_id), model_parser(UserConversationsOut), params=params)


def forget_user(user_id: str) -> Call[UserForgetOut]:
    op = OPERATIONS["forget_user"]
    return Call(op, _path(op, user_id=user_id), model_parser(UserForgetOut))


def export(*, conversation_id: str | None = None, user_id: str | None = None) -> Call[bytes]:
    op = OPERATIONS["export"]
    return Call(op, op.path, _export_bytes, params=_query(op, conversation_id=conversation_id, user_id=user_id))


def import_(data: bytes | str | IO[bytes]) -> Call[ImportOut]:
    op = OPERATIONS["import_"]
    if isinstance(data, str):
        body = data.encode()
    elif isinstance(data, bytes | bytearray | memoryview):
        body = bytes(data)
    else:
        body = data.read()  # read once: a retry sends the same bytes
    return Call(op, op.path, model_parser(ImportOut), content=body, headers={"content-type": JSONL})


def create_webhook(url: str, *, events: Sequence[str] | None = None, content: bool = False) -> Call[WebhookCreatedOut]:
    op = OPERATIONS["create_webhook"]
    body: dict[str, Any] = {"url": url, "content": content}
    if events is not None:
        body["events"] = list(events)
    return Call(op, op.path, model_parser(WebhookCreatedOut), json=body)


def list_webhooks() -> Call[WebhookListOut]:
    op = OPERATIONS["list_webhooks"]
    return Call(op, op.path, model_parser(WebhookListOut))


def delete_webhook(webhook_id: str) -> Call[WebhookDeletedOut]:
    op = OPERATIONS["delete_webhook"]
    return Call(op, _path(op, webhook_id=webhook_id), model_parser(WebhookDeletedOut))


def webhook_deliveries(*, failed: bool = False, limit: int | None = None) -> Call[DeliveryListOut]:
    op = OPERATIONS["webhook_deliveries"]
    return Call(op, op.path, model_parser(DeliveryListOut), params=_query(op, failed=failed or None, limit=limit))


def retry_delivery(delivery_id: str) -> Call[DeliveryRetriedOut]:
    op = OPERATIONS["retry_delivery"]
    return Call(op, _path(op, delivery_id=delivery_id), model_parser(DeliveryRetriedOut))


def list_activity(
    *, action: str | None = None, since: Moment | None = None, after: str | None = None, limit: int | None = None
) -> Call[ActivityOut]:
    op = OPERATIONS["list_activity"]
    params = _query(op, action=action, since=_moment(since), after=after, limit=limit)
    return Call(op, op.path, model_parser(ActivityOut), params=params)


def quota() -> Call[QuotaOut]:
    op = OPERATIONS["quota"]
    return Call(op, op.path, model_parser(QuotaOut))


def health() -> Call[HealthOut]:
    op = OPERATIONS["health"]
    return Call(op, op.path, model_parser(HealthOut))


def ready() -> Call[ReadyOut]:
    op = OPERATIONS["ready"]
    return Call(op, op.path, model_parser(ReadyOut), answers=frozenset({503}))
