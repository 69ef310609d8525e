"""Webhook events PostgreSQL could not record when they happened, kept in Redis until it
can. Most events are written in the transaction of the change they announce (the outbox,
``events.py``), so they cannot be lost; a quarantine, though, happens in Redis, and
often because PostgreSQL is failing. Its event then waits in the conversation's
``webhooks`` hash (indexed per shard, ``mailbox/keys.py``) with its id and time, and
the webhook sweep records it once PostgreSQL answers again: the same event id, so a
receiver that saw an earlier attempt de-duplicates. Forgetting the conversation deletes
what waits with its other keys.
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

import psycopg
import structlog

from memq.shared.mailbox.keys import ConversationKeys, all_shards, conversation_keys, split_member
from memq.shared.mailbox.scripts import Scripts
from memq.shared.settings import Settings
from memq.shared.webhooks import deliveries

log = structlog.get_logger("memq.webhooks")


def defer(scripts: Scripts, keys: ConversationKeys, event: str, body: dict[str, Any]) -> None:
    """Keep ``body`` (an event's payload, ``events.payload``) for the sweep."""
    record = json.dumps({"event": event, "body": body})
    scripts.defer_event(
        keys=[keys.webhooks, keys.shard.webhooks], args=[body["id"], record, keys.member, int(time.time())]
    )


def record_deferred(client: Any, scripts: Scripts, conn: psycopg.Connection, settings: Settings) -> int:
    """Record every deferred event in PostgreSQL (each in a transaction of its own, then
    dropped from Redis); returns how many. ``conn``: a connection that may write for any
    tenant (the sweep's owner connection)."""
    recorded = 0
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        for raw_member in cast(list[Any], client.zrange(shard.webhooks, 0, -1)):
            member = raw_member.decode() if isinstance(raw_member, bytes) else raw_member
            tenant, conversation_id = split_member(member)
            keys = conversation_keys(settings, tenant, conversation_id)
            for event_id, raw in cast(dict[Any, Any], client.hgetall(keys.webhooks)).items():
                record = json.loads(raw)
                with conn.transaction():
                    deliveries.insert_deliveries(conn, tenant, record["event"], conversation_id, record["body"], None)
                scripts.settle_event(keys=[keys.webhooks, shard.webhooks], args=[event_id, member])
                recorded += 1
            if not client.exists(keys.webhooks):  # emptied by a forget: nothing left to index
                scripts.settle_event(keys=[keys.webhooks, shard.webhooks], args=["", member])
    if recorded:
        log.info("webhook_events_recorded", events=recorded)
    return recorded
