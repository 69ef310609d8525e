"""Request and response bodies, for validation of shapes and types and for the OpenAPI
document. What the values may be (lengths, characters, time ranges, budgets) is checked
by the same code as the library's (``producer/validation.py``,
``memq/memory/retrieval/request.py``), so HTTP and Python callers meet the same rules.

Every JSON answer has a model here (the route's ``response_model``). The models of what the
library renders as JSON (``RetrievalResult.to_json()``, ``RecentResult.records``, the
manifest's and the session context's ``to_json()``, ``Fact.to_json()``) declare its keys
in its order with its types, so the answer is the library's JSON unchanged
(``tests/integration/api/test_memory_chain.py`` compares them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memq.shared.activity import ACTIONS, HASH_PREFIX

Detail = Literal["none", "low", "high", "auto"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageIn(Strict):
    role: str = Field(description="user, assistant, system or tool", examples=["user"])
    content: str = Field(description="The text, 1 to 100,000 characters.", examples=["Can you book the 9:40 train?"])
    timestamp: str | None = Field(default=None, description="ISO-8601 with Z or an offset; default: arrival time.")
    message_id: str | None = Field(
        default=None, description="Idempotency key: a message re-sent with it is a duplicate."
    )
    metadata: dict[str, Any] | None = Field(
        default=None,
        description="Plain JSON object, at most 16 KiB; "
        "`name` is the speaker, `tool_calls` / `tool_name` are recorded.",
    )
    user_id: str | None = Field(
        default=None,
        description="The user the conversation belongs to: set by the first message naming one; "
        "another user for the same conversation is refused (409).",
    )


class MessagesIn(Strict):
    messages: list[MessageIn] = Field(
        min_length=1, description="In order; validated as a whole before anything is written."
    )
    user_id: str | None = Field(default=None, description="The user of every message (see MessageIn.user_id).")


class AddResultOut(BaseModel):
    index: int
    status: Literal["accepted", "clamped", "duplicate", "rejected", "unknown"]
    message_id: str


class MessagesOut(BaseModel):
    conversation_id: str
    results: list[AddResultOut]


class FlushOut(BaseModel):
    conversation_id: str
    flushed: bool = Field(description="False when nothing was waiting.")
    idle: bool | None = Field(
        default=None,
        description="With `wait`: whether every accepted message was in an episode before the wait ended "
        "(null without `wait`).",
    )
    warning: str | None = Field(
        default=None,
        description="Set when something was flushed but no worker answered a ping: the messages are kept, "
        "and no episode is made until a worker runs.",
    )


class TimeRangeIn(Strict):
    start: str | None = Field(default=None, description="ISO-8601 with Z or an offset")
    end: str | None = None


class RetrieveIn(Strict):
    query: str = Field(
        description="What to remember; at most MEMQ_QUERY_MAX_CHARS characters.", examples=["which train did we book?"]
    )
    conversation_id: str | None = Field(default=None, description="One conversation; omit both for every conversation.")
    conversation_ids: list[str] | None = None
    limit: int | None = Field(default=None, description="Most episodes returned (default MEMQ_RETRIEVAL_LIMIT).")
    detail: Detail = "auto"
    max_tokens: int | None = Field(default=None, description="Budget of the returned text in tokens (tiktoken).")
    time_range: TimeRangeIn | None = Field(default=None, description="Only episodes overlapping this range.")
    now: str | None = Field(default=None, description="The moment of the question (default: now).")
    record: bool = Field(default=True, description="Record the returned memories for review.")
    asked_in: str | None = Field(
        default=None,
        description="The conversation the agent asks from (default: the one "
        "searched): its next segment shows whether what is returned was used.",
    )
    user_id: str | None = Field(
        default=None, description="Only this user's conversations (of those given, if any); omit for the tenant."
    )


class FactSearchIn(Strict):
    query: str
    conversation_id: str | None = None
    conversation_ids: list[str] | None = None
    limit: int | None = Field(default=None, description="Most facts (default MEMQ_RETRIEVAL_LIMIT).")
    user_id: str | None = Field(
        default=None, description="Only this user's conversations (of those given, if any); omit for the tenant."
    )


class RecentIn(Strict):
    conversation_id: str | None = Field(default=None, description="The conversation; or give user_id.")
    user_id: str | None = Field(default=None, description="The user's conversations (or just conversation_id).")
    days: float = 7.0
    limit: int | None = None
    max_tokens: int | None = None
    now: str | None = None


class EpisodeOut(BaseModel):
    model_config = ConfigDict(extra="ignore")  # the stored row has more than the API shows (stability)

    id: str
    title: str
    summary: str
    start_at: str
    end_at: str
    message_count: int
    first_seq: int
    last_seq: int
    surprise: float
    boundary_reason: str
    boundary_source: str
    summary_source: str
    tools_used: list[str]


class EpisodesOut(BaseModel):
    conversation_id: str
    episodes: list[EpisodeOut]


class ForgetOut(BaseModel):
    conversation_id: str
    forgotten: bool = Field(description="False when there was nothing to forget (forgetting is idempotent).")
    episodes: int
    messages: int


class ErrorDetailOut(BaseModel):
    type: str = Field(description="validation, unauthorized, not_found, rejected, unsupported_media_type, busy, ...")
    message: str
    field: str | None = Field(description="The offending field (`messages[2].timestamp`), when there is one.")
    results: list[AddResultOut] | None = Field(
        default=None, description="Per message, with a refused or incomplete batch (409, 429 quota_exceeded, 503)."
    )
    limit: str | None = Field(
        default=None,
        description="429 rate_limited / quota_exceeded: the limit reached (`messages_per_day`, `stored_messages`, "
        "...).",
    )
    setting: str | None = Field(default=None, description="429: the setting that sets the limit reached.")
    cause: str | None = Field(
        default=None,
        description="503 storage_full: what has no room (`redis_out_of_memory`, `redis_cannot_persist`, "
        "`postgres_disk_full`).",
    )


class ErrorOut(BaseModel):
    error: ErrorDetailOut


ERRORS: dict[int | str, dict[str, Any]] = {
    "4XX": {
        "model": ErrorOut,
        "description": "400 bad input (naming the field), 401 a missing or wrong key, 404, 409, 413 too large, "
        "415 a body not sent as JSON",
    },
    429: {
        "model": ErrorOut,
        "description": "rate_limited: the key's request rate (retry after Retry-After); quota_exceeded: a tenant "
        "quota (no Retry-After: sending again does not help until the day turns or the limit is raised)",
    },
    503: {
        "model": ErrorOut,
        "description": "Redis or PostgreSQL cannot be reached, has no room (storage_full) or is busy: retry "
        "(Retry-After)",
    },
}


class QuotaOut(BaseModel):
    messages_per_day: int | None = Field(description="Messages the tenant may add a day (UTC); null: no limit.")
    used_today: int = Field(
        description="Messages added today, counting what the Redis shards hold reserved for the tenant (at most "
        "MEMQ_QUOTA_LEASE_MESSAGES each; given back before a refusal)."
    )
    stored_messages: int | None = Field(description="Messages the tenant may hold; null: no limit.")
    stored: int | None = Field(
        description="Messages the tenant holds (added, less forgotten), reservations counted; null without a "
        "stored limit (counted while one is set: `memq quota set --stored-messages` counts them first)."
    )


class HealthOut(BaseModel):
    status: Literal["ok"]


class Check(BaseModel):
    ok: bool
    detail: str | None = None


class ReadyOut(BaseModel):
    ready: bool
    checks: dict[str, Check]


# --- facts (``Fact.to_json()``, ``fact_record()``, ``fact_history()``) ----------------------


class FactOut(BaseModel):
    id: str
    conversation_id: str
    category: str = Field(
        description="identity, preference, interest, personality, relationship, experience, goal or guideline"
    )
    content: str
    valid_at: str | None
    invalid_at: str | None
    created_at: str
    expired_at: str | None = Field(description="When the fact was retired (superseded or invalidated).")
    superseded_by: str | None
    source_episode_ids: list[str]
    reinforcements: int
    last_reinforced_at: str | None
    active: bool


class FactScoresOut(BaseModel):
    model_config = ConfigDict(extra="allow")  # a rank per fact leg that found it: vector, lexical

    rrf: float
    vector: int | None = Field(default=None, description="Rank in the vector leg; absent when it did not find it.")
    lexical: int | None = Field(default=None, description="Rank in the lexical leg; absent when it did not find it.")


class ScoredFactOut(FactOut):
    scores: FactScoresOut


class ConversationFactsOut(BaseModel):
    conversation_id: str
    facts: list[FactOut]


class FactSearchOut(BaseModel):
    query: str
    facts: list[ScoredFactOut]


class FactChangeOut(BaseModel):
    action: Literal["created", "reinforced", "superseded", "invalidated"]
    at: str
    run_id: str
    episode_ids: list[str]
    detail: dict[str, Any]


class FactHistoryOut(BaseModel):
    fact: FactOut
    history: list[FactChangeOut] = Field(description="Every change, oldest first.")


# --- retrieval (``RetrievalResult.to_json()``, ``hit_record()``) -----------------------------


class MemoryScoresOut(BaseModel):
    lexical_rank: int | None
    vector_rank: int | None
    message_lexical_rank: int | None
    message_vector_rank: int | None
    rrf: float
    retrievability: float
    time_boost: float
    final: float


class MemoryMessageOut(BaseModel):
    seq: int
    role: str
    speaker: str | None
    content: str
    timestamp: str
    relevance: float
    vector_rank: int | None
    lexical_rank: int | None
    speaker_named: bool
    excerpt: bool = Field(
        default=False,
        description="content is an excerpt of a long message (its sentences nearest the query, … where text is "
        "left out); the whole message comes when the budget has room (MEMQ_MESSAGE_LONG_TOKENS)",
    )


class MemoryOut(BaseModel):
    id: str
    conversation_id: str
    rank: int
    title: str
    summary: str
    summary_source: str
    start_at: str
    end_at: str
    surprise: float
    message_count: int
    scores: MemoryScoresOut
    summary_shown: bool
    messages: list[MemoryMessageOut] = Field(description="The messages shown, in order.")


class TimeRangeOut(BaseModel):
    start: str | None
    end: str | None


class NamedTimeOut(BaseModel):
    phrase: str
    start: str | None
    end: str | None


class RetrieveOut(BaseModel):
    query: str
    tenant: str
    conversation_ids: list[str] | None = Field(description="null: every conversation of the tenant.")
    detail: str
    limit: int
    max_tokens: int
    now: str
    time_range: TimeRangeOut | None
    named_time: NamedTimeOut | None = Field(description="A time the query names, which boosts episodes in it.")
    participants_named: list[str]
    asked_in: str | None
    tokens: int
    facts: list[ScoredFactOut]
    memories: list[MemoryOut] = Field(description="Best first, with every score.")
    text: str = Field(description="The markdown (what format=markdown answers).")
    timings_ms: dict[str, float]


class RecentOut(BaseModel):
    conversation_id: str | None = Field(description="The conversation asked for (null: a user's conversations).")
    tokens: int
    text: str = Field(description="The markdown (what format=markdown answers).")
    memories: list[MemoryOut] = Field(description="Newest first.")


# --- the manifest and the session context (``memq/memory/context``) ----------------------------


class ConversationStatusOut(BaseModel):
    conversation_id: str
    idle: bool = Field(description="Every accepted message is in an episode (or quarantined): nothing waits.")
    accepted: int = Field(description="Messages accepted since the conversation's state was created.")
    inbox: int = Field(description="Accepted, not yet segmented.")
    open_event: int = Field(description="In the open event, not yet closed.")
    waiting_segments: int = Field(description="Closed events waiting for their episode.")
    quarantined: int = Field(description="Items set aside after repeated failures (`memq quarantine`).")


class ConversationOut(BaseModel):
    conversation_id: str
    user_id: str | None
    messages: int = Field(description="Messages stored in episodes.")
    episodes: int
    last_message_at: str | None
    stored: bool = Field(description="False: messages accepted, none in an episode yet.")


class ConversationsOut(BaseModel):
    conversations: list[ConversationOut] = Field(description="In id order.")
    next: str | None = Field(description="The cursor of the next page (`?after=`); null on the last page.")


class ActivityEntryOut(BaseModel):
    id: str = Field(description="The entry's id (entries are numbered in the order they were written).")
    at: str
    action: str = Field(description=f"One of {', '.join(ACTIONS)}.")
    actor: str = Field(
        description="The API key's id; `cli` for a command of the CLI (the OS user in `actor_detail`); `api` when "
        "the API runs without keys (MEMQ_API_AUTH=false)."
    )
    actor_detail: str | None
    conversation_id: str | None = Field(
        description=f"Once the conversation is forgotten: `{HASH_PREFIX}` and the id's salted hash (docs/isolation.md)."
    )
    user_id: str | None = Field(description=f"Once the user is forgotten: `{HASH_PREFIX}` and the id's salted hash.")
    key_id: str | None
    webhook_id: str | None
    counts: dict[str, int] = Field(description="What the action counted: episodes, messages, lines, rows imported.")


class ActivityOut(BaseModel):
    entries: list[ActivityEntryOut] = Field(description="Newest first.")
    next: str | None = Field(description="The cursor of the next page (`?after=`); null on the last page.")


class ManifestSegmentOut(BaseModel):
    id: str | None = Field(description="null for the open segment (not yet an episode).")
    title: str
    status: Literal["active", "collapsed"]
    start_at: str
    end_at: str
    message_count: int
    tools_used: list[str]


class ManifestGroupOut(BaseModel):
    label: str = Field(examples=["Today"])
    date: str
    segments: list[ManifestSegmentOut]


class ManifestChapterOut(BaseModel):
    id: str | None = Field(description="Its first event's id; null for the open segment (not yet an episode).")
    title: str
    title_source: str = Field(description="'episode' (its one event's title), 'extractive' or 'llm'; '' when open.")
    status: Literal["active", "collapsed"]
    date: str = Field(description="The day it began, in the manifest's time zone.")
    label: str = Field(examples=["Today"])
    start_at: str
    end_at: str
    message_count: int
    episode_ids: list[str] = Field(description="Its events, oldest first.")
    tools_used: list[str]


class ManifestOut(BaseModel):
    conversation_id: str
    generated_at: str
    timezone: str
    total_episodes: int
    groups: list[ManifestGroupOut] = Field(description="Every event (episode) by day, newest first.")
    chapters: list[ManifestChapterOut] = Field(
        description="Chapters, newest first: runs of events a reader would name as one topic (what `text` shows)."
    )
    text: str = Field(description="The markdown tree (what format=markdown answers).")
    cached: bool


class ContextSummaryOut(BaseModel):
    id: str
    title: str
    summary: str
    start_at: str
    end_at: str
    message_count: int


class SaidOut(BaseModel):
    role: str
    speaker: str | None
    content: str
    timestamp: str


class ContextOut(BaseModel):
    conversation_id: str
    timezone: str
    total_episodes: int
    summaries: list[ContextSummaryOut] = Field(description="The latest episode summaries, oldest first.")
    facts: list[str]
    chapters: list[str] = Field(description="The topics so far: the newest chapters, a line each, oldest first.")
    continuity: list[SaidOut] = Field(description="The last messages before the open segment.")
    gap_seconds: int | None
    open_segment: list[SaidOut] = Field(description="Messages not yet in an episode.")
    left_out: dict[str, int] = Field(description="What the budget did not hold, per part.")
    tokens: int
    text: str = Field(description="The markdown (what format=markdown answers).")
