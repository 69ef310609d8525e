"""Repository for the activity log (``activity``, ``activity_salt``: migration 0019): write
an entry, read a tenant's entries a page at a time, and put the hash of a forgotten id in
place of the id. The entries themselves are built by ``memq.shared.activity``.

An entry is written in the transaction of its action where the action is one (the caller
passes the connection inside it); ``tenant`` is the tenant the action was done in, which a
connection scoped to that tenant may write (row-level security) and an owner connection
writes as it is told (``memq keys revoke`` across tenants)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import psycopg
from psycopg.types.json import Jsonb

from memq.shared.activity import CONVERSATION_FORGET, USER_FORGET, Actor, Entry, Recorded, hashed_id, is_hashed
from memq.shared.paging import cut

_COLUMNS = "id, at, action, actor, actor_detail, conversation_id, user_id, key_id, webhook_id, counts"


def record(conn: psycopg.Connection, tenant: str, entry: Entry) -> None:
    with conn.transaction():  # (a savepoint inside the action's own transaction)
        entry = _forgotten_stay_hashed(conn, tenant, entry)
        conn.execute(
            "INSERT INTO activity (tenant_id, action, actor, actor_detail, conversation_id, user_id, key_id, "
            "webhook_id, counts) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                tenant,
                entry.action,
                entry.actor.name,
                entry.actor.detail,
                entry.conversation_id,
                entry.user_id,
                entry.key_id,
                entry.webhook_id,
                Jsonb(dict(entry.counts)),
            ),
        )


def _forgotten_stay_hashed(conn: psycopg.Connection, tenant: str, entry: Entry) -> Entry:
    """An id forgotten once stays forgotten: an entry naming a conversation or user that the
    tenant forgot before (an export asked for after the forget, to see that nothing is left)
    names its hash, as the forget's own entry does. An entry written while a forget of the
    same id commits (an export ending then) waits for it (``_hold``): it then sees the
    forget and writes the hash, or it came first and the forget's update hashes it."""
    return replace(
        entry,
        conversation_id=_as_forgotten(conn, tenant, "conversation_id", entry.conversation_id, CONVERSATION_FORGET),
        user_id=_as_forgotten(conn, tenant, "user_id", entry.user_id, USER_FORGET),
    )


def _as_forgotten(conn: psycopg.Connection, tenant: str, column: str, value: str | None, forget: str) -> str | None:
    """``value``'s hash when a ``forget`` entry of the tenant names it; else ``value``."""
    if value is None or is_hashed(value):
        return value
    _hold(conn, tenant, column, value)
    candidate = hash_of(conn, value)
    forgotten = conn.execute(
        f"SELECT 1 FROM activity WHERE tenant_id = %s AND action = %s AND {column} = %s LIMIT 1",
        (tenant, forget, candidate),
    ).fetchone()
    return value if forgotten is None else candidate


def _hold(conn: psycopg.Connection, tenant: str, column: str, value: str) -> None:
    """The id's lock until the transaction ends: a forget of it and an entry naming it
    written at the same time go one after the other (a transaction-level advisory lock)."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"memq:activity:{tenant}:{column}:{value}",))


def salt(conn: psycopg.Connection) -> bytes:
    row = conn.execute("SELECT salt FROM activity_salt").fetchone()
    if row is None:
        raise RuntimeError("the activity log has no salt: run `memq migrate` (migration 0019 makes it)")
    return bytes(row[0])


def hash_of(conn: psycopg.Connection, value: str) -> str:
    """What the log keeps of ``value`` once it is forgotten (to find its entries by)."""
    return hashed_id(salt(conn), value)


def forget_conversation_id(conn: psycopg.Connection, tenant: str, conversation_id: str) -> str:
    """Every entry of the tenant naming the conversation names its hash instead; returns the
    hash. Inside forget's transaction, which then holds the id's lock until it commits."""
    _hold(conn, tenant, "conversation_id", conversation_id)
    hashed = hash_of(conn, conversation_id)
    conn.execute(
        "UPDATE activity SET conversation_id = %s WHERE tenant_id = %s AND conversation_id = %s",
        (hashed, tenant, conversation_id),
    )
    return hashed


def forget_user_id(conn: psycopg.Connection, tenant: str, user_id: str) -> str:
    """Every entry of the tenant naming the user names its hash instead; returns the hash.
    Inside forget's transaction, which then holds the id's lock until it commits."""
    _hold(conn, tenant, "user_id", user_id)
    hashed = hash_of(conn, user_id)
    conn.execute("UPDATE activity SET user_id = %s WHERE tenant_id = %s AND user_id = %s", (hashed, tenant, user_id))
    return hashed


def prune(conn: psycopg.Connection, days: float, *, batch: int = 10_000) -> int:
    """Delete every tenant's entries older than ``days`` (an owner connection), ``batch`` at a
    time so that no statement holds the table long; returns how many. Forget's entries stay:
    they name only a hash, and they are what keeps a forgotten id forgotten (``record``)."""
    cutoff = conn.execute("SELECT now() - %s", (timedelta(days=days),)).fetchone()
    assert cutoff is not None
    deleted = 0
    while True:
        with conn.transaction():
            n = conn.execute(
                "DELETE FROM activity WHERE id IN (SELECT id FROM activity WHERE at < %s AND action <> ALL(%s) "
                "LIMIT %s)",
                (cutoff[0], [CONVERSATION_FORGET, USER_FORGET], batch),
            ).rowcount
        deleted += n
        if n < batch:
            return deleted


def activity_page(
    conn: psycopg.Connection,
    tenant: str,
    *,
    after: int | None = None,
    limit: int,
    action: str | None = None,
    since: datetime | None = None,
) -> tuple[list[Recorded], str | None]:
    """The tenant's entries, newest first, older than the cursor ``after`` (an entry's id),
    at most ``limit``, and the next page's cursor (None: the last page)."""
    where: list[str] = ["tenant_id = %s"]
    args: list[object] = [tenant]
    if after is not None:
        where.append("id < %s")
        args.append(after)
    if action is not None:
        where.append("action = %s")
        args.append(action)
    if since is not None:
        where.append("at >= %s")
        args.append(since)
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM activity WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT %s",
        (*args, limit + 1),
    ).fetchall()
    found = [Recorded(r[0], r[1], Entry(r[2], Actor(r[3], r[4]), r[5], r[6], r[7], r[8], dict(r[9]))) for r in rows]
    return cut(found, limit, lambda e: str(e.id))
