"""What PostgreSQL holds, read by the tests as their reference: plain queries written apart
from the code under test, so that a test checks what was stored rather than trusting the
repository it tests."""

from __future__ import annotations

from typing import Any

import psycopg


def open_reviews(conn: psycopg.Connection, tenant: str, conversation_id: str | None = None) -> list[tuple[Any, ...]]:
    """Pending reviews not yet consumed (memory id, query, rank, score, retrieved at), oldest
    first; with ``conversation_id``, those its next segment reviews."""
    sql = (
        "SELECT memory_id::text, query, rank, score, retrieved_at FROM pending_review "
        "WHERE tenant_id = %s AND consumed_at IS NULL"
    )
    args: list[str] = [tenant]
    if conversation_id is not None:
        sql += " AND coalesce(asked_in, conversation_id) = %s"
        args.append(conversation_id)
    return conn.execute(sql + " ORDER BY retrieved_at, id", args).fetchall()


def reviews_of(conn: psycopg.Connection, memory_id: str) -> list[tuple[Any, ...]]:
    """(day, rating, source, merged, detail) of every review applied to a memory, oldest first."""
    return conn.execute(
        "SELECT review_day, rating, source, reviews_merged, detail FROM memory_review WHERE memory_id = %s "
        "ORDER BY review_day",
        (memory_id,),
    ).fetchall()


def message_seqs(conn: psycopg.Connection, tenant_id: str, conversation_id: str) -> list[int]:
    """Every message seq stored in the conversation's episodes, in episode order."""
    rows = conn.execute(
        "SELECT m.seq FROM episode_message m JOIN episodic_memory e ON e.id = m.episode_id "
        "WHERE m.tenant_id = %s AND m.conversation_id = %s ORDER BY e.first_seq, m.seq",
        (tenant_id, conversation_id),
    ).fetchall()
    return [r[0] for r in rows]


def stored_message_ids(conn: psycopg.Connection, tenant_id: str, conversation_id: str) -> list[str]:
    """Message ids stored for the conversation, in sequence order."""
    rows = conn.execute(
        "SELECT message_id FROM episode_message WHERE tenant_id = %s AND conversation_id = %s ORDER BY seq",
        (tenant_id, conversation_id),
    ).fetchall()
    return [r[0] for r in rows]
