"""Episode creation, orchestrated: from a closed segment in Redis to an episode in
PostgreSQL, exactly once.

1. Ask PostgreSQL which of the segment's messages it already holds (a redelivered
   task, a segment re-cut after a Redis restart, a message id accepted twice).
2. Build the episode (title, summary, embedding, FSRS state) from the rest; its id is
   derived from the messages it covers, so a retry builds the same id.
3. Store it in one transaction that re-checks 1 under the conversation's row lock and
   refuses a segment cut under an older fence (``StaleSegment``).
4. Only then forget the segment in Redis.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import psycopg
import structlog

from memq.shared.db.episodes import StoredChanged, check_stored, store_episode
from memq.shared.embeddings import Embedder
from memq.shared.mailbox.segment import segment_id_for
from memq.shared.metrics import metrics
from memq.shared.settings import Settings
from memq.shared.users import record_owner, state_owner
from memq.worker.conversation_store import ConversationStore
from memq.worker.episodes.builder import build_episode

log = structlog.get_logger("memq.episodes")


@dataclass(frozen=True)
class Created:
    status: str  # "created" | "already_stored" | "gone"
    episode_id: str | None = None
    summary_source: str | None = None
    duplicates: int = 0


def create_episode(
    store: ConversationStore, conn: psycopg.Connection, segment_id: str, settings: Settings, embedder: Embedder
) -> Created:
    segment = store.segment(segment_id)
    if segment is None:
        return Created("gone")
    tenant, conversation_id = store.tenant, store.conversation_id
    messages = segment.messages
    for attempt in range(3):
        expected = check_stored(conn, tenant, conversation_id, messages)
        keep = expected.keep(messages)
        row = None
        if keep:
            # the episode of the messages still to store: its id is theirs (all of them: the segment's)
            episode_id = segment_id_for(tenant, conversation_id, keep[0]["seq"], keep[-1]["seq"])
            known = store.vectors([m["id"] for m in keep])  # segmentation's, when carried
            row = build_episode(replace(segment, id=episode_id, messages=keep), settings, embedder, known)
        try:
            outcome = store_episode(
                conn,
                tenant=tenant,
                conversation_id=conversation_id,
                fence=segment.fence,
                messages=messages,
                expected=expected,
                row=row,
            )
            break
        except StoredChanged:
            log.info("episode_rebuild", segment_id=segment_id, attempt=attempt)
    else:
        raise StoredChanged(f"segment {segment_id}: what PostgreSQL holds kept changing; will retry")
    # the conversation's user (the producer's, in the Redis state) onto its row, if it has none yet
    user = state_owner(store.client, store.settings, tenant, conversation_id)
    if user is not None:
        record_owner(conn, tenant, conversation_id, user)
    store.finish_segment(segment_id)
    store.forget_vectors([m["id"] for m in messages])
    if outcome.inserted:
        store.invalidate_manifest()
        if row is not None:
            metrics().episodes.labels(summary_source=row.summary_source).inc()
    if outcome.duplicates:
        log.warning("duplicate_messages_not_stored", segment_id=segment_id, duplicates=outcome.duplicates)
    if row is None:
        return Created("already_stored", duplicates=outcome.duplicates)
    log.info(
        "episode_created" if outcome.inserted else "episode_already_stored",
        episode_id=row.id,
        messages=row.message_count,
        summary_source=row.summary_source,
        reason=row.boundary_reason,
    )
    return Created("created" if outcome.inserted else "already_stored", row.id, row.summary_source, outcome.duplicates)
