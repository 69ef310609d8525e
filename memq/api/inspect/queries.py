"""What the inspector reads from PostgreSQL, always within one tenant: read-only queries,
one or two per page (no query per row). Episodes are read as ``EpisodeListing`` (the shape
``memq episodes`` and the API list), facts as ``db.facts.Fact``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from memq.memory.retrieval.legs import fsrs_state
from memq.shared.db.facts import _FACT as FACT_COLUMNS  # the repository's column list for ``Fact``
from memq.shared.db.facts import Fact
from memq.shared.episode_listing import COLUMNS as LISTING_COLUMNS
from memq.shared.episode_listing import EpisodeListing

# the FSRS state retrieval reads, after the listing's columns
_FSRS = fsrs_state("")
MESSAGE_LIMIT = 5000  # messages a conversation page lists (the newest)


@dataclass(frozen=True)
class ConversationSummary:
    conversation_id: str
    message_count: int
    episode_count: int
    last_message_at: datetime | None
    updated_at: datetime
    facts: int


@dataclass(frozen=True)
class Episode:
    listing: EpisodeListing
    stability: float | None  # from the FSRS card, as retrieval reads it
    last_review: datetime | None


@dataclass(frozen=True)
class Message:
    seq: int
    episode_id: str
    role: str
    speaker: str | None
    content: str
    ts: datetime


@dataclass(frozen=True)
class EpisodeDetail:
    episode: Episode
    conversation_id: str
    difficulty: float
    detector: str
    summary_model: str | None
    summary_error: str | None
    embedding_model: str
    token_count: int
    consolidated_at: datetime | None
    created_at: datetime


def _episode(row: tuple[Any, ...]) -> Episode:
    return Episode(EpisodeListing.from_row(row), row[14], row[15])


def conversations(conn: psycopg.Connection, tenant: str, limit: int = 1000) -> list[ConversationSummary]:
    """The tenant's conversations PostgreSQL knows, most recently active first."""
    rows = conn.execute(
        "SELECT c.conversation_id, c.message_count, c.episode_count, c.last_message_at, c.updated_at, "
        "(SELECT count(*) FROM semantic_fact f WHERE f.tenant_id = c.tenant_id "
        "AND f.conversation_id = c.conversation_id AND f.expired_at IS NULL) "
        "FROM conversation c WHERE c.tenant_id = %s "
        "ORDER BY coalesce(c.last_message_at, c.updated_at) DESC, c.conversation_id LIMIT %s",
        (tenant, limit),
    ).fetchall()
    return [ConversationSummary(*r) for r in rows]


def timeline(conn: psycopg.Connection, tenant: str, conversation_id: str) -> list[Episode]:
    """The conversation's episodes, oldest first, with their FSRS state."""
    rows = conn.execute(
        f"SELECT {LISTING_COLUMNS}, {_FSRS} FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s "
        "ORDER BY first_seq",
        (tenant, conversation_id),
    ).fetchall()
    return [_episode(r) for r in rows]


def conversation_messages(
    conn: psycopg.Connection, tenant: str, conversation_id: str, limit: int = MESSAGE_LIMIT
) -> list[Message]:
    """The conversation's stored messages, the newest ``limit`` of them, in order."""
    rows = conn.execute(
        "SELECT * FROM (SELECT seq, episode_id::text, role, speaker, content, ts FROM episode_message "
        "WHERE tenant_id = %s AND conversation_id = %s ORDER BY seq DESC LIMIT %s) m ORDER BY seq",
        (tenant, conversation_id, limit),
    ).fetchall()
    return [Message(*r) for r in rows]


def _uuid(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def episode(conn: psycopg.Connection, tenant: str, episode_id: str) -> EpisodeDetail | None:
    """One episode of the tenant (None: no such episode, or another tenant's)."""
    if (key := _uuid(episode_id)) is None:
        return None
    row = conn.execute(
        f"SELECT {LISTING_COLUMNS}, {_FSRS}, conversation_id, difficulty, detector, summary_model, summary_error, "
        "embedding_model, token_count, consolidated_at, created_at FROM episodic_memory "
        "WHERE tenant_id = %s AND id = %s::uuid",
        (tenant, key),
    ).fetchone()
    return None if row is None else EpisodeDetail(_episode(row), *row[16:])


def episode_messages(conn: psycopg.Connection, tenant: str, episode_id: str) -> list[Message]:
    rows = conn.execute(
        "SELECT seq, episode_id::text, role, speaker, content, ts FROM episode_message "
        "WHERE episode_id = %s::uuid AND tenant_id = %s ORDER BY seq",
        (episode_id, tenant),
    ).fetchall()
    return [Message(*r) for r in rows]


@dataclass(frozen=True)
class Review:
    reviewed_at: datetime
    rating: int
    source: str
    merged: int
    detail: dict[str, Any]
    stability_before: float | None
    stability_after: float | None


@dataclass(frozen=True)
class Retrieval:
    """A retrieval that returned the episode, its review still to come."""

    query: str
    rank: int
    score: float
    retrieved_at: datetime


def reviews(conn: psycopg.Connection, tenant: str, episode_id: str) -> tuple[list[Review], list[Retrieval]]:
    """The reviews applied to the episode's FSRS card, and the retrievals waiting for one."""
    done = conn.execute(
        "SELECT reviewed_at, rating, source, reviews_merged, detail, (card_before->>'stability')::double precision, "
        "(card_after->>'stability')::double precision FROM memory_review WHERE memory_id = %s::uuid "
        "AND tenant_id = %s ORDER BY reviewed_at, id",
        (episode_id, tenant),
    ).fetchall()
    waiting = conn.execute(
        "SELECT query, rank, score, retrieved_at FROM pending_review WHERE memory_id = %s::uuid AND tenant_id = %s "
        "AND consumed_at IS NULL ORDER BY retrieved_at, id LIMIT 200",
        (episode_id, tenant),
    ).fetchall()
    return [Review(*r) for r in done], [Retrieval(*r) for r in waiting]


@dataclass(frozen=True)
class FactChange:
    fact_id: str
    action: str
    at: datetime
    episode_ids: list[str]
    detail: dict[str, Any]


def facts(
    conn: psycopg.Connection, tenant: str, conversation_id: str | None = None, limit: int = 500
) -> tuple[list[Fact], dict[str, list[FactChange]]]:
    """The tenant's facts (of one conversation, or all), retired ones included, newest first,
    and each one's history (oldest change first)."""
    where, args = "tenant_id = %s", [tenant]
    if conversation_id is not None:
        where += " AND conversation_id = %s"
        args.append(conversation_id)
    found = [
        Fact(*r)
        for r in conn.execute(
            f"SELECT {FACT_COLUMNS} FROM semantic_fact WHERE {where} ORDER BY created_at DESC, id LIMIT %s",
            (*args, limit),
        )
    ]
    history: dict[str, list[FactChange]] = {f.id: [] for f in found}
    if found:
        for r in conn.execute(
            "SELECT fact_id::text, action, at, episode_ids::text[], detail FROM semantic_fact_history "
            "WHERE tenant_id = %s AND fact_id = ANY(%s::uuid[]) ORDER BY at, id",
            (tenant, list(history)),
        ):
            history[r[0]].append(FactChange(*r))
    return found, history
