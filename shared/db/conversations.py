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
    return ConversationRow(*row)


@dataclass(frozen=True)
class SyncPlan:
    fence: int  # the new fence
    last_seq: int  # highest sequence number PostgreSQL holds
    last_message_at: datetime | None
    retired: list[tuple[int, int]]  # sequence ranges recorded as gaps by this sync


def raise_fence(conn: psycopg.Connection, tenant: str, conversation_id: str, redis_seq: int | None) -> SyncPlan:
    """Raise the conversation's fence (refusing any episode cut before now) and say where
    numbering must resume. ``redis_seq`` is Redis' counter, None when Redis has no state
    for the conversation (new, or expired at rest: nothing of it is in Redis).

    When Redis' counter is below what PostgreSQL holds, Redis lost writes (restarted
    from an older copy): numbers in between that PostgreSQL does not hold were given to
    messages whose numbering was lost. Those messages are back in the inbox (or were
    accepted within the lost window) and get new numbers; the old ones are recorded as
    gaps. Call inside a transaction; it commits with the caller's."""
    row = lock_conversation(conn, tenant, conversation_id)
    fence = row.fence + 1
    retired: list[tuple[int, int]] = []
    if redis_seq is not None and redis_seq < row.last_seq:
        missing = [
            r[0]
            for r in conn.execute(
                "SELECT s FROM generate_series(%s::bigint, %s::bigint) AS s WHERE NOT EXISTS "
                "(SELECT 1 FROM episode_message m WHERE m.tenant_id = %s AND m.conversation_id = %s AND m.seq = s) "
                "AND NOT EXISTS (SELECT 1 FROM seq_gap g WHERE g.tenant_id = %s AND g.conversation_id = %s "
                "AND s BETWEEN g.first_seq AND g.last_seq) ORDER BY s",
                (redis_seq + 1, row.last_seq, tenant, conversation_id, tenant, conversation_id),
            )
        ]
        retired = ranges(missing)
        for first, last in retired:
            record_gap(conn, tenant, conversation_id, first, last, "rewind")
    conn.execute(
        "UPDATE conversation SET fence = %s, synced_at = now(), updated_at = now() WHERE tenant_id = %s AND conversation_id = %s",
        (fence, tenant, conversation_id),
    )
    return SyncPlan(fence, row.last_seq, row.last_message_at, retired)


def record_gap(
    conn: psycopg.Connection, tenant: str, conversation_id: str, first: int, last: int, reason: str, message_id: str | None = None
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
            "SELECT first_seq, last_seq, reason FROM seq_gap WHERE tenant_id = %s AND conversation_id = %s ORDER BY first_seq",
            (tenant, conversation_id),
        )
    ]


def ranges(numbers: list[int]) -> list[tuple[int, int]]:
    """[3, 4, 5, 9] -> [(3, 5), (9, 9)] (input sorted)."""
    out: list[tuple[int, int]] = []
    for n in numbers:
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out
