"""Repository for ``pending_review`` and ``memory_review``: what each retrieval returned
(recorded by the read side), and the reviews applied to memories' FSRS state by the
review stage (``worker/review``), one per memory per day."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb


@dataclass(frozen=True)
class Retrieved:
    conversation_id: str
    memory_id: str
    rank: int
    score: float


@dataclass(frozen=True)
class ReviewNote:
    """What one retrieval returned. ``asked_in``: the conversation whose next segment
    reviews it (None: each memory's own conversation)."""

    tenant: str
    query: str
    at: datetime
    hits: tuple[Retrieved, ...]
    asked_in: str | None = None


def record_pending_many(conn: psycopg.Connection, notes: Sequence[ReviewNote]) -> int:
    """Retrievals' notes, one row per returned memory, in one statement. A memory forgotten since it
    was returned is skipped. Returns the rows written.

    Committed without waiting for the WAL flush (``synchronous_commit = off`` for this
    statement's transaction only): a PostgreSQL crash can lose at most the last fraction
    of a second of review notes, never a memory."""
    rows = [(n, h) for n in notes for h in n.hits]
    if not rows:
        return 0
    cur = conn.execute(
        "WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true)) "
        "INSERT INTO pending_review "
        "(tenant_id, conversation_id, memory_id, query, rank, score, retrieved_at, asked_in) "
        "SELECT t, c, m, q, r, s, a, i FROM relaxed, "
        "unnest(%s::text[], %s::text[], %s::uuid[], %s::text[], %s::int[], %s::float8[], %s::timestamptz[], "
        "%s::text[]) WITH ORDINALITY AS u(t, c, m, q, r, s, a, i, n) "
        # in the notes' order whatever the plan (ids follow it; under row-level security the
        # planner may join episodic_memory the other way round)
        "WHERE EXISTS (SELECT 1 FROM episodic_memory e WHERE e.id = u.m) ORDER BY n",
        (
            [n.tenant for n, _ in rows],
            [h.conversation_id for _, h in rows],
            [h.memory_id for _, h in rows],
            [n.query for n, _ in rows],
            [h.rank for _, h in rows],
            [h.score for _, h in rows],
            [n.at for n, _ in rows],
            [n.asked_in for n, _ in rows],
        ),
    )
    return cur.rowcount


@dataclass(frozen=True)
class Pending:
    id: int
    memory_id: str
    conversation_id: str  # the memory's
    query: str
    retrieved_at: datetime


def pending_for(conn: psycopg.Connection, tenant: str, asked_in: str, until: datetime) -> list[Pending]:
    """Open reviews of retrievals served to ``asked_in`` up to ``until``."""
    rows = conn.execute(
        "SELECT id, memory_id::text, conversation_id, query, retrieved_at FROM pending_review "
        "WHERE tenant_id = %s AND coalesce(asked_in, conversation_id) = %s AND consumed_at IS NULL "
        "AND retrieved_at <= %s ORDER BY id",
        (tenant, asked_in, until),
    ).fetchall()
    return [Pending(*r) for r in rows]


def lock_open(conn: psycopg.Connection, ids: Sequence[int]) -> set[int]:
    """Of ``ids``, those still open, locked until the transaction ends (call inside one)."""
    rows = conn.execute(
        "SELECT id FROM pending_review WHERE id = ANY(%s) AND consumed_at IS NULL ORDER BY id FOR UPDATE", (list(ids),)
    ).fetchall()
    return {r[0] for r in rows}


def lock_cards(conn: psycopg.Connection, memory_ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """memory id -> (conversation, FSRS card), the rows locked (call inside a transaction)."""
    rows = conn.execute(
        "SELECT id::text, conversation_id, fsrs_card FROM episodic_memory WHERE id = ANY(%s::uuid[]) "
        "ORDER BY id FOR UPDATE",
        (list(memory_ids),),
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


@dataclass(frozen=True)
class DayReview:
    id: int
    card_before: dict[str, Any]
    rating: int
    merged: int


def review_of_day(conn: psycopg.Connection, memory_id: str, day: date) -> DayReview | None:
    row = conn.execute(
        "SELECT id, card_before, rating, reviews_merged FROM memory_review WHERE memory_id = %s AND review_day = %s",
        (memory_id, day),
    ).fetchone()
    return DayReview(*row) if row else None


def save_review(
    conn: psycopg.Connection,
    *,
    tenant: str,
    conversation_id: str,
    memory_id: str,
    at: datetime,
    rating: int,
    source: str,
    detail: dict[str, Any],
    card_before: dict[str, Any],
    card_after: dict[str, Any],
    merged: int,
    segment_id: str | None,
) -> int:
    """Insert the day's review, or replace it with the merged one; apply it to the memory."""
    row = conn.execute(
        "INSERT INTO memory_review (tenant_id, conversation_id, memory_id, review_day, reviewed_at, rating, "
        "source, detail, card_before, card_after, reviews_merged, segment_id) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (memory_id, review_day) DO UPDATE SET "
        "reviewed_at = EXCLUDED.reviewed_at, rating = EXCLUDED.rating, "
        "source = EXCLUDED.source, detail = EXCLUDED.detail, card_after = EXCLUDED.card_after, "
        "reviews_merged = EXCLUDED.reviews_merged, segment_id = EXCLUDED.segment_id, updated_at = now() RETURNING id",
        (
            tenant,
            conversation_id,
            memory_id,
            at.date(),
            at,
            rating,
            source,
            Jsonb(detail),
            Jsonb(card_before),
            Jsonb(card_after),
            merged,
            segment_id,
        ),
    ).fetchone()
    conn.execute(
        "UPDATE episodic_memory SET fsrs_card = %s, stability = %s, difficulty = %s, last_reviewed_at = %s "
        "WHERE id = %s",
        (Jsonb(card_after), card_after["stability"], card_after["difficulty"], at, memory_id),
    )
    assert row is not None  # the upsert's RETURNING gives a row
    review_id: int = row[0]
    return review_id


def consume(conn: psycopg.Connection, pending_ids: Sequence[int], review_id: int) -> None:
    conn.execute(
        "UPDATE pending_review SET consumed_at = now(), review_id = %s WHERE id = ANY(%s)",
        (review_id, list(pending_ids)),
    )
