"""Agent context (MIRA) settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ContextSettings(BaseModel):
    """Agent context (MIRA): the manifest and the session context."""

    manifest_depth: int = Field(
        default=100,
        ge=1,
        le=500,
        description="MIRA: the newest events (episodes) the manifest reads; it shows them grouped in chapters",
    )
    chapter_gap_minutes: float = Field(
        default=30.0,
        gt=0,
        description="Chapters: a pause this long (or longer) between two messages always starts a new chapter.",
    )
    chapter_min_messages: int = Field(
        default=4,
        ge=1,
        le=100,
        description="Chapters: the fewest messages between two chapter starts the learned scorer places.",
    )
    manifest_title_chars: int = Field(default=60, ge=10, le=500, description="MIRA: manifest title length")
    manifest_cache_seconds: float = Field(
        default=600.0,
        ge=0,
        description="MIRA: how long a conversation's manifest stays cached in Redis (0: never cached); it is "
        "invalidated when an episode is created or the conversation is forgotten.",
    )
    session_summary_count: int = Field(
        default=3, ge=0, le=50, description="MIRA: episode summaries in a session context"
    )
    session_chapter_count: int = Field(
        default=5, ge=0, le=50, description="Chapters (the topics so far, a line each) in a session context."
    )
    session_continuity_messages: int = Field(
        default=6, ge=0, le=100, description="MIRA: messages before the open segment shown for continuity"
    )
    session_max_tokens: int = Field(default=2000, ge=100, le=16_000, description="Token budget of a session context.")
    session_open_messages_max: int = Field(
        default=200, ge=1, le=5000, description="Newest messages of the open segment read for a session context."
    )
