"""Repository for the ``conversation`` row (fence and high-water mark) and the
sequence-number gaps (``seq_gap``). See migration 0002 for what they guard."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg


@dataclass(frozen=True)
class ConversationRow:
    fence: int
    last_seq: int
    last_message_at: datetime | None
    message_count: int
    episode_count: int


def lock_conversation(conn: psycopg.Connection, tenant: str, conversation_id: str) -> ConversationRow:
    """The conversation's row, created if missing, locked until the transaction ends."""
    conn.execute(
        "INSERT INTO conversation (tenant_id, conversation_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (tenant, conversation_id),
    )
    row = conn.execute(
        "SELECT fence, last_seq, last_message_at, message_count, episode_count FROM conversation "
        "WHERE tenant_id = %s AND conversation_id = %s FOR UPDATE",
        (tenant, conversation_id),
    ).fetchone()
    assert row is not None  # inserted just above if it was missing
    return ConversationRow(*row)


@dataclass(frozen=True)
class SyncPlan:
    fence: int  # the new fence
    last_seq: int  # highest sequence number PostgreSQL holds
    last_message_at: datetime | None
    retired: list[tuple[int, int]]  # sequence ranges recorded as gaps by this sync


def raise_fence(conn: psycopg.Connection, tenant: str, conversation_id: str, redis_seq: int) -> SyncPlan:
    """Raise the conversation's fence (refusing any episode cut before now) and say where
    numbering must resume. ``redis_seq`` is Redis' counter (0 when Redis has no state for
    the conversation: new, or expired at rest).

    Numbers up to what PostgreSQL holds that it neither stores nor knows as gaps were
    handed out in a Redis state that is gone (Redis restarted from an older copy, or the
    state expired): their messages are back in the inbox, or were accepted in the lost
    window, and get new numbers. They are recorded as gaps. Call inside a transaction."""
    row = lock_conversation(conn, tenant, conversation_id)
    # from one sequence for all conversations: a fence is never handed out twice, even to
    # a conversation forgotten and started again under the same id (migration 0006)
    fence_row = conn.execute("SELECT nextval('conversation_fence')").fetchone()
    assert fence_row is not None  # nextval always answers
    fence = fence_row[0]
    retired: list[tuple[int, int]] = []
    if redis_seq < row.last_seq:
        # One ordered pass over what is known above Redis' counter; a hole is a gap.
        retired = [
            (r[0], r[1])
            for r in conn.execute(
                """
                WITH known AS (
                    SELECT seq FROM episode_message
                     WHERE tenant_id = %(t)s AND conversation_id = %(c)s AND seq > %(lo)s
                    UNION
                    SELECT generate_series(greatest(first_seq, %(lo)s + 1), last_seq) FROM seq_gap
                     WHERE tenant_id = %(t)s AND conversation_id = %(c)s AND last_seq > %(lo)s
                    UNION SELECT %(lo)s
                    UNION SELECT %(hi)s + 1
                ), ordered AS (SELECT seq, lead(seq) OVER (ORDER BY seq) AS next FROM known)
                SELECT seq + 1, next - 1 FROM ordered WHERE next > seq + 1 AND seq < %(hi)s ORDER BY seq
                """,
                {"t": tenant, "c": conversation_id, "lo": redis_seq, "hi": row.last_seq},
            )
        ]
        for first, last in retired:
            record_gap(conn, tenant, conversation_id, first, last, "rewind")
    conn.execute(
        "UPDATE conversation SET fence = %s, synced_at = now(), updated_at = now() "
        "WHERE tenant_id = %s AND conversation_id = %s",
        (fence, tenant, conversation_id),
    )
    return SyncPlan(fence, row.last_seq, row.last_message_at, retired)


def record_gap(
    conn: psycopg.Connection,
    tenant: str,
    conversation_id: str,
    first: int,
    last: int,
    reason: str,
    message_id: str | None = None,
) -> None:
    conn.execute(
        "INSERT INTO seq_gap (tenant_id, conversation_id, first_seq, last_seq, reason, message_id) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (tenant, conversation_id, first, last, reason, message_id),
    )


def gaps(conn: psycopg.Connection, tenant: str, conversation_id: str) -> list[tuple[int, int, str]]:
    return [
        (r[0], r[1], r[2])
        for r in conn.execute(
            "SELECT first_seq, last_seq, reason FROM seq_gap WHERE tenant_id = %s AND conversation_id = %s "
            "ORDER BY first_seq",
            (tenant, conversation_id),
        )
    ]
