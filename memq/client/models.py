"""The types the client returns and takes: the API's own pydantic models
(``memq.api.models``, which imports no FastAPI, so the thin install has them), and, for the
answers whose models live beside their routes in ``memq.api.routes`` (users, webhooks,
portability: modules that need FastAPI), copies of those models with the same names and
fields. ``tests/unit/memq/client/test_client_drift.py`` compares the copies with the OpenAPI
document, so they cannot drift apart unnoticed.

An answer with a key the client does not know yet (a newer server) still parses: the key
is ignored."""

from __future__ import annotations

from pydantic import BaseModel

from memq.api.models import (
    ActivityEntryOut,
    ActivityOut,
    AddResultOut,
    Check,
    ContextOut,
    ContextSummaryOut,
    ConversationFactsOut,
    ConversationOut,
    ConversationsOut,
    ConversationStatusOut,
    EpisodeOut,
    EpisodesOut,
    FactChangeOut,
    FactHistoryOut,
    FactOut,
    FactScoresOut,
    FactSearchIn,
    FactSearchOut,
    FlushOut,
    ForgetOut,
    HealthOut,
    ManifestChapterOut,
    ManifestGroupOut,
    ManifestOut,
    ManifestSegmentOut,
    MemoryMessageOut,
    MemoryOut,
    MemoryScoresOut,
    MessageIn,
    MessagesIn,
    MessagesOut,
    NamedTimeOut,
    QuotaOut,
    ReadyOut,
    RecentIn,
    RecentOut,
    RetrieveIn,
    RetrieveOut,
    SaidOut,
    ScoredFactOut,
    TimeRangeIn,
    TimeRangeOut,
)

__all__ = [
    "ActivityEntryOut",
    "ActivityOut",
    "AddResultOut",
    "Check",
    "ContextOut",
    "ContextSummaryOut",
    "ConversationFactsOut",
    "ConversationOut",
    "ConversationStatusOut",
    "ConversationsOut",
    "DeliveryListOut",
    "DeliveryOut",
    "DeliveryRetriedOut",
    "EpisodeOut",
    "EpisodesOut",
    "FactChangeOut",
    "FactHistoryOut",
    "FactOut",
    "FactScoresOut",
    "FactSearchIn",
    "FactSearchOut",
    "FlushOut",
    "ForgetOut",
    "HealthOut",
    "ImportOut",
    "ManifestChapterOut",
    "ManifestGroupOut",
    "ManifestOut",
    "ManifestSegmentOut",
    "MemoryMessageOut",
    "MemoryOut",
    "MemoryScoresOut",
    "MessageIn",
    "MessagesIn",
    "MessagesOut",
    "MoveOut",
    "NamedTimeOut",
    "QuotaOut",
    "ReadyOut",
    "RecentIn",
    "RecentOut",
    "RetrieveIn",
    "RetrieveOut",
    "SaidOut",
    "ScoredFactOut",
    "TimeRangeIn",
    "TimeRangeOut",
    "UserChangeOut",
    "UserConversationsOut",
    "UserForgetOut",
    "WebhookCreatedOut",
    "WebhookDeletedOut",
    "WebhookListOut",
    "WebhookOut",
]


# --- users (memq.api.routes.users) ------------------------------------------------------------


class MoveOut(BaseModel):
    conversation_id: str
    from_user_id: str | None
    user_id: str | None
    changed: bool


class UserChangeOut(BaseModel):
    conversation_id: str
    from_user_id: str | None
    user_id: str | None
    at: str
    actor: str | None


class UserConversationsOut(BaseModel):
    user_id: str
    conversations: list[str]
    changes: list[UserChangeOut] | None = None


class UserForgetOut(BaseModel):
    user_id: str
    conversations: list[str]
    episodes: int
    messages: int
    audit_rows: int


# --- portability (memq.api.routes.portability) --------------------------------------------------


class ImportOut(BaseModel):
    tenant: str
    source_tenant: str
    complete: bool
    lines: int
    reembedded: bool
    inserted: dict[str, int]
    skipped: dict[str, int]
    stopped_at_line: int | None
    stopped_reason: str | None


# --- webhooks (memq.api.routes.webhooks) ----------------------------------------------------------


class WebhookOut(BaseModel):
    id: str
    url: str
    events: list[str]
    content: bool
    created_at: str


class WebhookCreatedOut(WebhookOut):
    secret: str


class WebhookListOut(BaseModel):
    webhooks: list[WebhookOut]


class DeliveryOut(BaseModel):
    id: str
    endpoint_id: str
    event_id: str
    event: str
    conversation_id: str | None
    status: str
    attempts: int
    last_error: str | None
    last_status: int | None
    created_at: str
    finished_at: str | None


class DeliveryListOut(BaseModel):
    deliveries: list[DeliveryOut]


class DeliveryRetriedOut(BaseModel):
    id: str
    status: str


class WebhookDeletedOut(BaseModel):
    id: str
    deleted: bool
