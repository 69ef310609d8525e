"""``episode_creation``: write the episodic memory of one closed segment.

Idempotent: the episode id is deterministic and the insert does nothing when the row
exists, so a retry or a redelivered task never makes a second episode. The segment
leaves Redis only after the row is committed."""

from __future__ import annotations

import structlog

from shared import tasks
from shared.connections import pg_connect
from shared.db.episodes import episode_exists, insert_episode
from worker import resources
from worker.app import app
from worker.episodes.builder import build_episode

log = structlog.get_logger("memq.tasks")


@app.task(
    name=tasks.EPISODE_CREATION,
    bind=True,
    acks_late=True,
    autoretry_for=(Exception,),
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=8,
)
def episode_creation(self, tenant: str, conversation_id: str, episode_id: str) -> dict:
    settings = resources.settings()
    store = resources.store(tenant, conversation_id)
    segment = store.segment(episode_id)
    if segment is None:
        log.info("episode_already_done", episode_id=episode_id)
        return {"status": "done_before"}
    with pg_connect(settings) as conn:
        if episode_exists(conn, episode_id):
            store.finish_segment(episode_id)
            return {"status": "exists"}
        row = build_episode(segment, settings, resources.embedder())
        inserted = insert_episode(conn, row)
        conn.commit()
    store.finish_segment(episode_id)
    log.info(
        "episode_created",
        episode_id=episode_id,
        inserted=inserted,
        messages=row.message_count,
        summary_source=row.summary_source,
        reason=row.boundary_reason,
        title=row.title,
    )
    return {"status": "created" if inserted else "exists", "summary_source": row.summary_source}
