"""Repository for ``api_key`` (migration 0006): create, list, revoke, and load the
active keys for the HTTP service. Given its ``actor``, a creation or revocation is written
to the activity log in its own transaction (``memq.shared.db.activity``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from memq.shared import activity
from memq.shared.auth.api_keys import NewKey, generate
from memq.shared.db.activity import record


@dataclass(frozen=True)
class KeyRow:
    id: str
    tenant: str
    name: str
    created_at: datetime
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def create_key(
    conn: psycopg.Connection, tenant: str, name: str = "", *, actor: activity.Actor | None = None
) -> tuple[NewKey, KeyRow]:
    """A new key of ``tenant``; with ``actor``, logged as ``key.create`` (None: not logged,
    for the test suite's and the lab's own keys)."""
    new = generate()
    with conn.transaction():
        row = conn.execute(
            "INSERT INTO api_key (id, tenant_id, name, key_hash) VALUES (%s, %s, %s, %s) "
            "RETURNING id, tenant_id, name, created_at, revoked_at",
            (new.id, tenant, name, new.hash),
        ).fetchone()
        assert row is not None  # RETURNING gives the inserted row
        if actor is not None:
            record(conn, tenant, activity.key_created(actor, new.id))
    return new, KeyRow(*row)


def list_keys(conn: psycopg.Connection, tenant: str | None = None) -> list[KeyRow]:
    sql = "SELECT id, tenant_id, name, created_at, revoked_at FROM api_key"
    args: tuple[str, ...] = ()
    if tenant is not None:
        sql += " WHERE tenant_id = %s"
        args = (tenant,)
    return [KeyRow(*r) for r in conn.execute(sql + " ORDER BY tenant_id, created_at, id", args)]


def revoke_key(
    conn: psycopg.Connection, key_id: str, tenant: str | None = None, *, actor: activity.Actor | None = None
) -> KeyRow | None:
    """Revoke a key (idempotent: an already revoked key keeps its first revocation time).
    With ``tenant``, only that tenant's key. With ``actor``, logged as ``key.revoke`` in the
    key's tenant (None: not logged); nothing is logged when there is no such key."""
    sql = "UPDATE api_key SET revoked_at = coalesce(revoked_at, now()) WHERE id = %s"
    args: tuple[str, ...] = (key_id,)
    if tenant is not None:
        sql += " AND tenant_id = %s"
        args += (tenant,)
    with conn.transaction():
        row = conn.execute(sql + " RETURNING id, tenant_id, name, created_at, revoked_at", args).fetchone()
        if row is not None and actor is not None:
            record(conn, row[1], activity.key_revoked(actor, row[0]))
    return KeyRow(*row) if row else None


def active_keys(conn: psycopg.Connection) -> dict[str, tuple[bytes, str]]:
    """key id -> (hash, tenant) of every key not revoked."""
    return {
        r[0]: (bytes(r[1]), r[2])
        for r in conn.execute("SELECT id, key_hash, tenant_id FROM api_key WHERE revoked_at IS NULL")
    }


def active_key(conn: psycopg.Connection, key_id: str) -> tuple[bytes, str] | None:
    """(hash, tenant) of one key when it exists and is not revoked."""
    row = conn.execute(
        "SELECT key_hash, tenant_id FROM api_key WHERE id = %s AND revoked_at IS NULL", (key_id,)
    ).fetchone()
    return (bytes(row[0]), row[1]) if row else None
