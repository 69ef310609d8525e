"""Repository for ``pending_review``: what each retrieval returned, kept for the review
stage, which later grades every memory by how it was actually used and updates its FSRS
state. Retrieval only records; reading and consuming belong to the review stage."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg


@dataclass(frozen=True)
class Retrieved:
    conversation_id: str
    memory_id: str
    rank: int
    score: float


def record_pending(conn: psycopg.Connection, tenant: str, query: str, at: datetime, hits: Sequence[Retrieved]) -> int:
    """One row per returned memory, in one statement; returns how many were recorded.

    Committed without waiting for the WAL flush (``synchronous_commit = off`` for this
    statement's transaction only): a retrieval does not wait on the disk for its review
    notes, and a PostgreSQL crash can lose at most the last fraction of a second of
    them, never a memory. When ``conn`` is inside a transaction, the setting applies to
    that transaction."""
    if not hits:
        return 0
    conn.execute(
        "WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true)) "
        "INSERT INTO pending_review (tenant_id, conversation_id, memory_id, query, rank, score, retrieved_at) "
        "SELECT %s, c, m, %s, r, s, %s FROM relaxed, unnest(%s::text[], %s::uuid[], %s::int[], %s::float8[]) AS u(c, m, r, s)",
        (tenant, query, at, [h.conversation_id for h in hits], [h.memory_id for h in hits], [h.rank for h in hits],
         [h.score for h in hits]),
    )
    return len(hits)


def open_reviews(conn: psycopg.Connection, tenant: str, conversation_id: str | None = None) -> list[tuple]:
    """Pending reviews not yet consumed (memory id, query, rank, score, retrieved at), oldest first."""
    sql = ("SELECT memory_id::text, query, rank, score, retrieved_at FROM pending_review "
           "WHERE tenant_id = %s AND consumed_at IS NULL")
    args: list = [tenant]
    if conversation_id is not None:
        sql += " AND conversation_id = %s"
        args.append(conversation_id)
    return conn.execute(sql + " ORDER BY retrieved_at, id", args).fetchall()
