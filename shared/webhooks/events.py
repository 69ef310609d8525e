"""Emitting webhook events: one call at each place memory changes, made inside the
transaction of the change (the outbox pattern): a pending ``webhook_delivery`` row is
written for each of the tenant's endpoints that wants the event, and commits or rolls back
with the change. The send task is then published (``kick``); should that fail, or run
before the commit, the rows are still there and the periodic sweep publishes them.

Payloads carry ids, times and counts; the title and summary of an episode, or a fact's
text, go under ``content`` only to endpoints registered with ``content``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
import structlog

from memq.shared.mailbox.keys import ConversationKeys
from memq.shared.mailbox.scripts import Scripts
from memq.shared.settings import Settings
from memq.shared.webhooks import deferred, deliveries, endpoints

log = structlog.get_logger("memq.webhooks")

KICK_DELAY_SECONDS = 1.0  # the sweep the emitter publishes runs after the change's commit, as a rule


def payload(event: str, tenant: str, data: dict[str, Any], at: datetime | None = None) -> dict[str, Any]:
    """The body of an event (without content): its id (the receiver's de-duplication key),
    name, time, tenant and data."""
    return {
        "id": str(uuid.uuid4()),
        "event": event,
        "created_at": (at or datetime.now(UTC)).isoformat(),
        "tenant": tenant,
        "data": data,
    }


def emit(
    conn: psycopg.Connection,
    event: str,
    tenant: str,
    data: dict[str, Any],
    *,
    conversation_id: str | None = None,
    content: dict[str, Any] | None = None,
) -> int:
    """Record the event's deliveries in the caller's transaction; returns how many."""
    body = payload(event, tenant, {"conversation_id": conversation_id, **data} if conversation_id else data)
    return record(conn, event, tenant, body, conversation_id=conversation_id, content=content)


def record(
    conn: psycopg.Connection,
    event: str,
    tenant: str,
    body: dict[str, Any],
    *,
    conversation_id: str | None = None,
    content: dict[str, Any] | None = None,
) -> int:
    """``emit`` of an event whose body (``payload``) is already made; returns how many
    deliveries were written."""
    written = deliveries.insert_deliveries(conn, tenant, event, conversation_id, body, content)
    if written:
        kick()
    return written


def kick() -> None:
    """Publish the outbox sweep soon (best effort: the periodic sweep covers a failure)."""
    from memq.shared import publisher
    from memq.shared.settings import get_settings

    try:
        publisher.webhook_sweep(publisher.publishing_app(get_settings()), countdown=KICK_DELAY_SECONDS)
    except Exception as exc:  # never fail the change for it
        log.warning("webhook_kick_failed", error=str(exc), hint="the periodic sweep publishes the deliveries")


def episode_created(
    conn: psycopg.Connection,
    tenant: str,
    conversation_id: str,
    episode_id: str,
    *,
    messages: int,
    first_seq: int,
    last_seq: int,
    title: str,
    summary: str,
) -> int:
    return emit(
        conn,
        endpoints.EPISODE_CREATED,
        tenant,
        {"episode_id": episode_id, "message_count": messages, "first_seq": first_seq, "last_seq": last_seq},
        conversation_id=conversation_id,
        content={"title": title, "summary": summary},
    )


def fact_created(
    conn: psycopg.Connection,
    tenant: str,
    conversation_id: str,
    fact_id: str,
    *,
    category: str,
    text: str,
    episode_ids: Sequence[str],
) -> int:
    return emit(
        conn,
        endpoints.FACT_CREATED,
        tenant,
        {"fact_id": fact_id, "category": category, "episode_ids": list(episode_ids)},
        conversation_id=conversation_id,
        content={"text": text},
    )


def fact_updated(
    conn: psycopg.Connection, tenant: str, conversation_id: str, fact_id: str, *, episode_ids: Sequence[str]
) -> int:
    """A fact reinforced by more episodes."""
    return emit(
        conn,
        endpoints.FACT_UPDATED,
        tenant,
        {"fact_id": fact_id, "episode_ids": list(episode_ids)},
        conversation_id=conversation_id,
        content=_fact_text(conn, fact_id),
    )


def fact_invalidated(
    conn: psycopg.Connection,
    tenant: str,
    conversation_id: str,
    fact_id: str,
    *,
    superseded_by: str | None,
    invalid_at: datetime | None,
) -> int:
    """A fact that stopped being true (invalidated, or superseded by ``superseded_by``)."""
    return emit(
        conn,
        endpoints.FACT_INVALIDATED,
        tenant,
        {
            "fact_id": fact_id,
            "superseded_by": superseded_by,
            "invalid_at": invalid_at.isoformat() if invalid_at else None,
        },
        conversation_id=conversation_id,
        content=_fact_text(conn, fact_id),
    )


def conversation_forgotten(
    conn: psycopg.Connection, tenant: str, conversation_id: str, *, episodes: int, messages: int
) -> int:
    """Call in the forget's transaction: the conversation's deliveries lose their content
    (those not yet sent, and the record of those sent), and the event carries ids only."""
    deliveries.scrub_conversation(conn, tenant, conversation_id)
    return emit(
        conn,
        endpoints.CONVERSATION_FORGOTTEN,
        tenant,
        {"episodes": episodes, "messages": messages},
        conversation_id=conversation_id,
    )


def user_forgotten(conn: psycopg.Connection, tenant: str, user_id: str, *, conversations: int, episodes: int) -> int:
    """For forgetting a user (ids and counts only); call in the forget's transaction,
    after the user's conversations were forgotten (each with ``conversation_forgotten``)."""
    return emit(
        conn,
        endpoints.USER_FORGOTTEN,
        tenant,
        {"user_id": user_id, "conversations": conversations, "episodes": episodes},
    )


def _fact_text(conn: psycopg.Connection, fact_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT content FROM semantic_fact WHERE id = %s", (fact_id,)).fetchone()
    return {"text": row[0]} if row else None


def record_quarantined(
    settings: Settings,
    tenant: str,
    conversation_id: str,
    *,
    kind: str,
    item: str,
    failures: int,
    deferred_to: tuple[Scripts, ConversationKeys] | None = None,
) -> None:
    """``conversation.quarantined`` (ids only: the error may quote the input) for the
    quarantine, which lives in Redis: in a transaction of its own. When PostgreSQL cannot
    take it (the quarantine itself may be due to a PostgreSQL outage), the event waits in
    Redis for the sweep (``deferred.py``; ``deferred_to``: the mailbox scripts and the
    conversation's keys), and is lost only when Redis fails too."""
    from memq.shared.connections import pg_connect

    data = {"conversation_id": conversation_id, "kind": kind, "item": item, "failures": failures}
    event = endpoints.CONVERSATION_QUARANTINED
    body = payload(event, tenant, data)
    try:
        with pg_connect(settings, tenant=tenant, autocommit=True) as conn, conn.transaction():
            record(conn, event, tenant, body, conversation_id=conversation_id)
        return
    except Exception as exc:
        error = str(exc)
    try:
        if deferred_to is None:
            raise RuntimeError("no Redis to keep it in")
        deferred.defer(*deferred_to, event, body)
        log.warning("webhook_event_deferred", webhook_event=event, error=error)
    except Exception as redis_exc:
        log.warning("webhook_event_lost", webhook_event=event, error=error, redis=str(redis_exc))
