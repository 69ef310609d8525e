"""Request and response bodies, for validation of shapes and types and for the OpenAPI
document. What the values may be (lengths, characters, time ranges, budgets) is checked
by the same code as the library's (``producer/validation.py``,
``shared/retrieval/request.py``), so HTTP and Python callers meet the same rules."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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


class MessagesIn(Strict):
    messages: list[MessageIn] = Field(
        min_length=1, description="In order; validated as a whole before anything is written."
    )


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


class FactSearchIn(Strict):
    query: str
    conversation_id: str | None = None
    conversation_ids: list[str] | None = None
    limit: int | None = Field(default=None, description="Most facts (default MEMQ_RETRIEVAL_LIMIT).")


class RecentIn(Strict):
    conversation_id: str
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


class Check(BaseModel):
    ok: bool
    detail: str | None = None


class ReadyOut(BaseModel):
    ready: bool
    checks: dict[str, Check]
