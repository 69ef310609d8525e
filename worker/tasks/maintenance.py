"""Periodic tasks, scheduled by one beat (RedBeat holds a Redis lock so a second
beat process does not duplicate them).

- ``collapse_idle`` (seed 002): every conversation whose newest message arrived longer
  ago than the segment timeout gets its open event closed into an episode, so a
  conversation that goes quiet still becomes memories. Idleness is measured on
  arrival time (the server's clock), so replaying old conversations is not mistaken
  for inactivity, and it survives restarts because the index lives in Redis.
- ``sweep_stalled``: re-publishes a drain whose task was lost (producer died between
  queueing the message and publishing, a worker was killed) and an episode creation
  whose segment waits too long. Duplicates are harmless: drains take a lock and
  episode creation is idempotent.
"""

from __future__ import annotations

import time

import structlog

from shared import tasks
from shared.mailbox.keys import ConversationKeys, GlobalKeys, split_member
from worker import resources
from worker.app import app

log = structlog.get_logger("memq.maintenance")


@app.task(name=tasks.COLLAPSE_IDLE, acks_late=True)
def collapse_idle() -> dict:
    settings = resources.settings()
    client, scripts = resources.redis_and_scripts()
    g = GlobalKeys(settings.key_prefix)
    now = time.time()
    idle = client.zrangebyscore(g.active, "-inf", now - settings.segment_timeout_minutes * 60)
    requested = 0
    for member in idle:
        tenant, conversation_id = split_member(member)
        keys = ConversationKeys(settings.key_prefix, tenant, conversation_id)
        schedule, has_work = scripts.request_flush(
            keys=[keys.state, g.drains, keys.inbox, keys.buffer], args=[repr(now), member, "inactivity"]
        )
        if not has_work:
            client.zrem(g.active, member)
            continue
        requested += 1
        if schedule:
            app.send_task(tasks.EVENT_SEGMENTATION, args=[tenant, conversation_id])
    if requested:
        log.info("collapse_idle", conversations=requested)
    return {"collapsed": requested}


@app.task(name=tasks.SWEEP_STALLED, acks_late=True)
def sweep_stalled() -> dict:
    settings = resources.settings()
    client, _ = resources.redis_and_scripts()
    g = GlobalKeys(settings.key_prefix)
    now = time.time()
    cutoff = now - settings.stalled_after_seconds
    drains = client.zrangebyscore(g.drains, "-inf", cutoff)
    for member in drains:
        tenant, conversation_id = split_member(member)
        client.zadd(g.drains, {member: now}, xx=True)
        app.send_task(tasks.EVENT_SEGMENTATION, args=[tenant, conversation_id])
    segments = client.zrangebyscore(g.pending, "-inf", cutoff)
    for entry in segments:
        conv_member, _, episode_id = entry.rpartition("/")
        tenant, conversation_id = split_member(conv_member)
        client.zadd(g.pending, {entry: now}, xx=True)
        app.send_task(tasks.EPISODE_CREATION, args=[tenant, conversation_id, episode_id])
    if drains or segments:
        log.warning("stalled_work_requeued", drains=len(drains), episodes=len(segments))
    return {"drains": len(drains), "episodes": len(segments)}
