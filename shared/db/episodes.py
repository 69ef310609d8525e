"""Repository for ``episodic_memory`` rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb


@dataclass(frozen=True)
class EpisodeRow:
    id: str
    tenant_id: str
    conversation_id: str
    messages: list[dict[str, Any]]
    first_seq: int
    last_seq: int
    title: str
    summary: str
    embedding: np.ndarray
    stability: float
    difficulty: float
    fsrs_card: dict[str, Any]
    surprise: float
    boundary_reason: str
    boundary_source: str
    detector: str
    summary_source: str
    summary_model: str | None
    summary_error: str | None
    embedding_model: str
    start_at: datetime
    end_at: datetime
    tools_used: list[str] = field(default_factory=list)
    overlap: list[dict[str, Any]] = field(default_factory=list)
    token_count: int = 0
    last_reviewed_at: datetime | None = None

    @property
    def message_count(self) -> int:
        return len(self.messages)


_COLUMNS = (
    "id, tenant_id, conversation_id, messages, message_count, first_seq, last_seq, title, summary, "
    "embedding, stability, difficulty, fsrs_card, surprise, boundary_reason, boundary_source, detector, "
    "summary_source, summary_model, summary_error, embedding_model, tools_used, overlap, token_count, "
    "start_at, end_at, last_reviewed_at"
)


def insert_episode(conn: psycopg.Connection, e: EpisodeRow) -> bool:
    """Insert unless an episode with this id exists. True when this call inserted it."""
    cur = conn.execute(
        f"INSERT INTO episodic_memory ({_COLUMNS}) VALUES "
        "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
        "ON CONFLICT (id) DO NOTHING",
        (
            e.id, e.tenant_id, e.conversation_id, Jsonb(e.messages), e.message_count, e.first_seq, e.last_seq,
            e.title, e.summary, e.embedding, e.stability, e.difficulty, Jsonb(e.fsrs_card), e.surprise,
            e.boundary_reason, e.boundary_source, e.detector, e.summary_source, e.summary_model, e.summary_error,
            e.embedding_model, Jsonb(e.tools_used), Jsonb(e.overlap), e.token_count, e.start_at, e.end_at,
            e.last_reviewed_at,
        ),
    )
    return cur.rowcount == 1


def episode_exists(conn: psycopg.Connection, episode_id: str) -> bool:
    return conn.execute("SELECT 1 FROM episodic_memory WHERE id = %s", (episode_id,)).fetchone() is not None


@dataclass(frozen=True)
class EpisodeSummary:
    id: str
    title: str
    summary: str
    start_at: datetime
    end_at: datetime
    message_count: int
    first_seq: int
    last_seq: int
    surprise: float
    boundary_reason: str
    boundary_source: str
    summary_source: str
    tools_used: list[str]
    stability: float


def list_episodes(conn: psycopg.Connection, tenant_id: str, conversation_id: str) -> list[EpisodeSummary]:
    rows = conn.execute(
        "SELECT id::text, title, summary, start_at, end_at, message_count, first_seq, last_seq, surprise, "
        "boundary_reason, boundary_source, summary_source, tools_used, stability "
        "FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s ORDER BY first_seq",
        (tenant_id, conversation_id),
    ).fetchall()
    return [EpisodeSummary(*row) for row in rows]


def message_seqs(conn: psycopg.Connection, tenant_id: str, conversation_id: str) -> list[int]:
    """Every message seq stored in the conversation's episodes, in episode order."""
    rows = conn.execute(
        "SELECT (m->>'seq')::bigint FROM episodic_memory e, jsonb_array_elements(e.messages) WITH ORDINALITY AS t(m, i) "
        "WHERE e.tenant_id = %s AND e.conversation_id = %s ORDER BY e.first_seq, t.i",
        (tenant_id, conversation_id),
    ).fetchall()
    return [r[0] for r in rows]
