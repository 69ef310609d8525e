"""A tenant's webhook endpoints in PostgreSQL (``webhook_endpoint``, migration 0013). Given
its ``actor``, a registration or removal is written to the activity log in its transaction
(the endpoint's id only: a URL may carry a secret)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from memq.shared import activity
from memq.shared.db.activity import record
from memq.shared.errors import ValidationError
from memq.shared.ids import is_uuid
from memq.shared.webhooks.destinations import Destinations
from memq.shared.webhooks.signing import new_secret

EPISODE_CREATED = "episode.created"
FACT_CREATED = "fact.created"
FACT_UPDATED = "fact.updated"
FACT_INVALIDATED = "fact.invalidated"
CONVERSATION_FORGOTTEN = "conversation.forgotten"
USER_FORGOTTEN = "user.forgotten"
CONVERSATION_QUARANTINED = "conversation.quarantined"

EVENTS = (
    EPISODE_CREATED,
    FACT_CREATED,
    FACT_UPDATED,
    FACT_INVALIDATED,
    CONVERSATION_FORGOTTEN,
    USER_FORGOTTEN,
    CONVERSATION_QUARANTINED,
)


@dataclass(frozen=True)
class Endpoint:
    id: str
    tenant: str
    url: str
    events: tuple[str, ...]
    content: bool
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "url": self.url,
            "events": list(self.events),
            "content": self.content,
            "created_at": self.created_at.isoformat(),
        }


_COLUMNS = "id::text, tenant_id, url, events, content, created_at"


def check_events(events: Sequence[str] | None) -> tuple[str, ...]:
    """The events an endpoint wants: all of them when none are named."""
    if not events:
        return EVENTS
    unknown = sorted(set(events) - set(EVENTS))
    if unknown:
        raise ValidationError(f"unknown events {unknown}; choose from {', '.join(EVENTS)}", field="events")
    return tuple(dict.fromkeys(events))


def add_endpoint(
    conn: psycopg.Connection,
    tenant: str,
    url: str,
    destinations: Destinations,
    events: Sequence[str] | None = None,
    content: bool = False,
    *,
    actor: activity.Actor | None = None,
) -> tuple[Endpoint, str]:
    """Register an endpoint whose URL ``destinations`` allows (every address its host
    resolves to now is public, or opened for development); returns it and its secret
    (shown once, kept to sign). With ``actor``, logged as ``webhook.create``."""
    destinations.check(url)
    wanted, secret = check_events(events), new_secret()
    with conn.transaction():
        row = conn.execute(
            f"INSERT INTO webhook_endpoint (id, tenant_id, url, events, content, secret) "
            f"VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
            (str(uuid.uuid4()), tenant, url, list(wanted), content, secret),
        ).fetchone()
        assert row is not None
        if actor is not None:
            record(conn, tenant, activity.webhook_created(actor, row[0]))
    return _endpoint(row), secret


def list_endpoints(conn: psycopg.Connection, tenant: str) -> list[Endpoint]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM webhook_endpoint WHERE tenant_id = %s ORDER BY created_at, id", (tenant,)
    ).fetchall()
    return [_endpoint(r) for r in rows]


def remove_endpoint(
    conn: psycopg.Connection, tenant: str, endpoint_id: str, *, actor: activity.Actor | None = None
) -> bool:
    """Delete an endpoint and its deliveries; False when the tenant has no such endpoint.
    With ``actor``, a removal is logged as ``webhook.delete``."""
    if not is_uuid(endpoint_id):
        return False
    with conn.transaction():
        row = conn.execute(
            "DELETE FROM webhook_endpoint WHERE tenant_id = %s AND id = %s RETURNING id::text", (tenant, endpoint_id)
        ).fetchone()
        if row is not None and actor is not None:
            record(conn, tenant, activity.webhook_deleted(actor, row[0]))
    return row is not None


def _endpoint(row: Sequence[Any]) -> Endpoint:
    return Endpoint(row[0], row[1], row[2], tuple(row[3]), row[4], row[5])
