"""Periodic tasks, scheduled by one beat (RedBeat holds a Redis lock so a second beat
process does not duplicate them). Both walk the mailbox shard by shard, and every
time comparison happens inside Redis, on its own clock.

- ``collapse_idle`` (MIRA): every conversation whose newest message arrived longer
  ago than the segment timeout gets its open event closed into an episode, so a
  conversation that goes quiet still becomes memories. ``request_flush.lua`` re-checks
  idleness atomically, so a message arriving during the scan is never collapsed away.
- ``sweep_stalled``: re-publishes the drain of a conversation whose "drain queued" mark
  has seen no heartbeat for ``MEMQ_STALLED_AFTER_SECONDS`` (its task was lost: the
  producer died before publishing, a worker was killed, a hard time limit, a broker
  that lost the message) and the episode creation of a segment waiting as long.
  Duplicates are harmless: drains take a lock and episode creation is idempotent.
  After a worker reconnects to the broker (``memq.worker.broker_recovery``) the same sweep runs
  at once with age 0, once per reconnection wave across the fleet: what died in a broker
  outage is picked up as soon as the broker is back, not ``MEMQ_STALLED_AFTER_SECONDS`` later.
- ``prune_activity``: hourly when ``MEMQ_ACTIVITY_RETENTION_DAYS`` is set, the activity log's
  entries older than that, every tenant's (forget's own entries stay).
"""

from __future__ import annotations

from typing import Any

import structlog

from memq.shared import publisher, tasks
from memq.shared.mailbox.keys import all_shards, conversation_keys, split_member
from memq.shared.mailbox.replies import decode_items, decode_request_flush
from memq.worker import resources
from memq.worker.app import app

log = structlog.get_logger("memq.maintenance")

SCAN_LIMIT = 1000  # entries per shard and run; the rest are found on the next run
RECOVERY_SWEEP_KEY = "{prefix}:recovery-sweep"


@app.task(name=tasks.COLLAPSE_IDLE, acks_late=True)
def collapse_idle() -> dict[str, Any]:
    settings = resources.settings()
    _, scripts = resources.mailbox()
    timeout = settings.segment_timeout_minutes * 60
    requested = 0
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        for member in decode_items(scripts.due(keys=[shard.active], args=[timeout, SCAN_LIMIT, 0])):
            tenant, conversation_id = split_member(member)
            keys = conversation_keys(settings, tenant, conversation_id)
            flush = decode_request_flush(
                scripts.request_flush(
                    keys=[keys.state, shard.drains, keys.inbox, keys.buffer, shard.active],
                    args=[member, "inactivity", timeout],
                )
            )
            requested += int(flush.has_work)
            if flush.publish_drain:
                publisher.drain(app, tenant, conversation_id)
    if requested:
        log.info("collapse_idle", conversations=requested)
    return {"collapsed": requested}


@app.task(name=tasks.SWEEP_STALLED, acks_late=True)
def sweep_stalled(age: float | None = None, once_per_seconds: float = 0.0) -> dict[str, Any]:
    """``age``: re-publish what waited at least this long (default MEMQ_STALLED_AFTER_SECONDS).
    ``once_per_seconds``: skip when another sweep so marked ran within that time (the
    sweeps every reconnecting worker asks for: the first one does the work)."""
    settings = resources.settings()
    client, scripts = resources.mailbox()
    if once_per_seconds > 0 and not client.set(
        RECOVERY_SWEEP_KEY.format(prefix=settings.key_prefix), "1", nx=True, px=int(once_per_seconds * 1000)
    ):
        return {"drains": 0, "episodes": 0, "skipped": True}
    age = settings.stalled_after_seconds if age is None else max(0.0, float(age))
    drains = episodes = 0
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        for member in decode_items(scripts.due(keys=[shard.drains], args=[age, SCAN_LIMIT, 1])):
            tenant, conversation_id = split_member(member)
            publisher.drain(app, tenant, conversation_id)
            drains += 1
        for entry in decode_items(scripts.due(keys=[shard.pending], args=[age, SCAN_LIMIT, 1])):
            conv_member, _, segment_id = entry.rpartition("/")
            tenant, conversation_id = split_member(conv_member)
            publisher.episode(app, tenant, conversation_id, segment_id)
            episodes += 1
    if drains or episodes:
        log.warning("stalled_work_requeued", drains=drains, episodes=episodes, age=age)
    return {"drains": drains, "episodes": episodes}


@app.task(name=tasks.PRUNE_ACTIVITY, acks_late=True)
def prune_activity(days: float | None = None) -> dict[str, Any]:
    """The activity log's entries older than ``days`` (default: MEMQ_ACTIVITY_RETENTION_DAYS;
    0 keeps them all) deleted, every tenant's."""
    from memq.shared.db.activity import prune

    days = resources.settings().activity_retention_days if days is None else days
    if days <= 0:
        return {"status": "kept", "deleted": 0}
    with resources.owner_database() as conn:
        deleted = prune(conn, days)
    log.info("activity_pruned", deleted=deleted, older_than_days=days)
    return {"status": "pruned", "deleted": deleted}
