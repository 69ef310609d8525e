"""The outbox of webhook deliveries in PostgreSQL (``webhook_delivery``, migration 0013).

A delivery is ``pending`` until its endpoint answered 2xx (``delivered``) or its last
attempt failed (``failed``, kept with the last error until retried by hand). Its
``published_at`` is when its send task was last published for (or, for a retry, when that
task is due): the sweep publishes again what was never published, or whose task is
``MEMQ_WEBHOOK_REPUBLISH_AFTER_SECONDS`` overdue.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from memq.shared.ids import is_uuid


@dataclass(frozen=True)
class Delivery:
    id: str
    endpoint_id: str
    tenant: str
    event_id: str
    event: str
    conversation_id: str | None
    status: str
    attempts: int
    last_error: str | None
    last_status: int | None
    created_at: datetime
    finished_at: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "endpoint_id": self.endpoint_id,
            "event_id": self.event_id,
            "event": self.event,
            "conversation_id": self.conversation_id,
            "status": self.status,
            "attempts": self.attempts,
            "last_error": self.last_error,
            "last_status": self.last_status,
            "created_at": self.created_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }


@dataclass(frozen=True)
class Sending:
    """What one attempt needs: the delivery's body and its endpoint's URL and secret."""

    id: str
    event_id: str
    event: str
    payload: dict[str, Any]
    attempts: int
    url: str
    secret: str


_COLUMNS = (
    "id::text, endpoint_id::text, tenant_id, event_id::text, event, conversation_id, status, attempts, "
    "last_error, last_status, created_at, finished_at"
)


def insert_deliveries(
    conn: psycopg.Connection,
    tenant: str,
    event: str,
    conversation_id: str | None,
    payload: dict[str, Any],
    content: dict[str, Any] | None,
) -> int:
    """One pending delivery of the event for each of the tenant's endpoints that wants it;
    ``content`` goes only to endpoints that opted in. Returns how many were written."""
    extra = Jsonb(content) if content is not None else None
    cur = conn.execute(
        "INSERT INTO webhook_delivery (id, endpoint_id, tenant_id, event_id, event, conversation_id, payload) "
        "SELECT gen_random_uuid(), e.id, e.tenant_id, %s, %s, %s, "
        " CASE WHEN e.content AND %s::jsonb IS NOT NULL THEN %s::jsonb || jsonb_build_object('content', %s::jsonb) "
        " ELSE %s::jsonb END "
        "FROM webhook_endpoint e WHERE e.tenant_id = %s AND %s = ANY(e.events)",
        (
            payload["id"],
            event,
            conversation_id,
            extra,
            Jsonb(payload),
            extra,
            Jsonb(payload),
            tenant,
            event,
        ),
    )
    return cur.rowcount


def scrub_conversation(conn: psycopg.Connection, tenant: str, conversation_id: str) -> int:
    """For a forgotten conversation: its finished deliveries (the record of what was sent)
    are deleted, its pending ones lose their content and are sent with ids only."""
    where = "WHERE tenant_id = %s AND conversation_id = %s"
    conn.execute(f"DELETE FROM webhook_delivery {where} AND status <> 'pending'", (tenant, conversation_id))
    cur = conn.execute(
        f"UPDATE webhook_delivery SET payload = payload - 'content' {where} AND payload ? 'content'",
        (tenant, conversation_id),
    )
    return cur.rowcount


def take_due(conn: psycopg.Connection, republish_after: float, limit: int = 500) -> list[str]:
    """The pending deliveries whose task must be published (never published, or overdue),
    marked as published now."""
    rows = conn.execute(
        "UPDATE webhook_delivery SET published_at = now() WHERE id IN ("
        " SELECT id FROM webhook_delivery WHERE status = 'pending' AND next_attempt_at <= now()"
        " AND (published_at IS NULL OR published_at < now() - make_interval(secs => %s))"
        " ORDER BY next_attempt_at LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING id::text",
        (republish_after, limit),
    ).fetchall()
    return [r[0] for r in rows]


def claim(conn: psycopg.Connection, delivery_id: str) -> Sending | None:
    """Lock a pending delivery for one attempt (inside a transaction); None when it is not
    pending or another attempt holds it."""
    row = conn.execute(
        "SELECT d.id::text, d.event_id::text, d.event, d.payload, d.attempts, e.url, e.secret "
        "FROM webhook_delivery d JOIN webhook_endpoint e ON e.id = d.endpoint_id "
        "WHERE d.id = %s AND d.status = 'pending' FOR UPDATE OF d SKIP LOCKED",
        (delivery_id,),
    ).fetchone()
    return Sending(*row) if row else None


def mark_delivered(conn: psycopg.Connection, delivery_id: str, status: int) -> None:
    conn.execute(
        "UPDATE webhook_delivery SET status = 'delivered', attempts = attempts + 1, last_status = %s, "
        "last_error = NULL, finished_at = now() WHERE id = %s",
        (status, delivery_id),
    )


def mark_retry(conn: psycopg.Connection, delivery_id: str, error: str, status: int | None, delay: float) -> None:
    conn.execute(
        "UPDATE webhook_delivery SET attempts = attempts + 1, last_error = %s, last_status = %s, "
        "next_attempt_at = now() + make_interval(secs => %s), published_at = now() + make_interval(secs => %s) "
        "WHERE id = %s",
        (error, status, delay, delay, delivery_id),
    )


def mark_failed(conn: psycopg.Connection, delivery_id: str, error: str, status: int | None) -> None:
    conn.execute(
        "UPDATE webhook_delivery SET status = 'failed', attempts = attempts + 1, last_error = %s, last_status = %s, "
        "finished_at = now() WHERE id = %s",
        (error, status, delivery_id),
    )


def reopen(conn: psycopg.Connection, delivery_id: str, tenant: str | None = None) -> bool:
    """Put a delivery back to pending for another round of attempts (``memq webhooks
    retry``), published now by the caller; False when there is no such delivery."""
    if not is_uuid(delivery_id):
        return False
    cur = conn.execute(
        "UPDATE webhook_delivery SET status = 'pending', attempts = 0, next_attempt_at = now(), "
        "published_at = now(), finished_at = NULL WHERE id = %s AND (%s::text IS NULL OR tenant_id = %s)",
        (delivery_id, tenant, tenant),
    )
    return cur.rowcount > 0


def list_deliveries(
    conn: psycopg.Connection, tenant: str | None, *, failed_only: bool = False, limit: int = 100
) -> list[Delivery]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM webhook_delivery WHERE (%s::text IS NULL OR tenant_id = %s) "
        "AND (NOT %s OR status = 'failed') ORDER BY created_at DESC, id LIMIT %s",
        (tenant, tenant, failed_only, limit),
    ).fetchall()
    return [Delivery(*r) for r in rows]


def payload_of(conn: psycopg.Connection, delivery_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT payload FROM webhook_delivery WHERE id = %s", (delivery_id,)).fetchone()
    return row[0] if row else None
