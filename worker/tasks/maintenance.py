"""Periodic tasks, scheduled by one beat (RedBeat holds a Redis lock so a second beat
process does not duplicate them). Both walk the mailbox shard by shard, and every
time comparison happens inside Redis, on its own clock.

- ``collapse_idle`` (seed 002): every conversation whose newest message arrived longer
  ago than the segment timeout gets its open event closed into an episode, so a
  conversation that goes quiet still becomes memories. ``request_flush.lua`` re-checks
  idleness atomically, so a message arriving during the scan is never collapsed away.
- ``sweep_stalled``: re-publishes the drain of a conversation whose "drain queued" mark
  has seen no heartbeat for ``MEMQ_STALLED_AFTER_SECONDS`` (its task was lost: the
  producer died before publishing, a worker was killed, a hard time limit, a broker
  that lost the message) and the episode creation of a segment waiting as long.
  Duplicates are harmless: drains take a lock and episode creation is idempotent.
"""

from __future__ import annotations

import structlog

from shared import tasks
from shared.mailbox.keys import all_shards, conversation_keys, split_member
from worker import resources
from worker.app import app
from worker.tasks import publish

log = structlog.get_logger("memq.maintenance")

SCAN_LIMIT = 1000  # entries per shard and run; the rest are found on the next run


@app.task(name=tasks.COLLAPSE_IDLE, acks_late=True)
def collapse_idle() -> dict:
    settings = resources.settings()
    _, scripts = resources.mailbox()
    timeout = settings.segment_timeout_minutes * 60
    requested = 0
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        for member in scripts.due(keys=[shard.active], args=[timeout, SCAN_LIMIT, 0]):
            tenant, conversation_id = split_member(member)
            keys = conversation_keys(settings, tenant, conversation_id)
            schedule, has_work = scripts.request_flush(
                keys=[keys.state, shard.drains, keys.inbox, keys.buffer, shard.active],
                args=[member, "inactivity", timeout],
            )
            requested += int(bool(has_work))
            if schedule:
                publish.drain(tenant, conversation_id)
    if requested:
        log.info("collapse_idle", conversations=requested)
    return {"collapsed": requested}


@app.task(name=tasks.SWEEP_STALLED, acks_late=True)
def sweep_stalled() -> dict:
    settings = resources.settings()
    _, scripts = resources.mailbox()
    age = settings.stalled_after_seconds
    drains = episodes = 0
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        for member in scripts.due(keys=[shard.drains], args=[age, SCAN_LIMIT, 1]):
            tenant, conversation_id = split_member(member)
            publish.drain(tenant, conversation_id)
            drains += 1
        for entry in scripts.due(keys=[shard.pending], args=[age, SCAN_LIMIT, 1]):
            conv_member, _, episode_id = entry.rpartition("/")
            tenant, conversation_id = split_member(conv_member)
            publish.episode(tenant, conversation_id, episode_id)
            episodes += 1
    if drains or episodes:
        log.warning("stalled_work_requeued", drains=drains, episodes=episodes)
    return {"drains": drains, "episodes": episodes}
