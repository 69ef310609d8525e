"""Forget a conversation: remove every trace of it from Redis and PostgreSQL, including
work in flight, idempotently.

1. Take the conversation's lock (waiting for a worker draining it to let go, at most
   ``MEMQ_FORGET_WAIT_SECONDS``), so no drain is between reading the state and writing it.
2. Delete its Redis keys (queue, open event, state, message ids, closed segments,
   quarantine, cached manifest) and its entries in the shard indexes.
3. In one transaction delete its rows: episodes, their messages, the pending and applied
   reviews of its memories, the pending reviews of retrievals asked in it (whichever
   conversation's memories they returned), facts and their history, sequence gaps,
   participants, and the conversation row with its fence; scrub what it left in the
   reviews of other conversations' memories (below); and in the activity log put the
   conversation's salted hash in place of its id in every entry naming it, then add the
   forget's own entry, naming the hash alone (``memq.shared.activity``). Facts span a
   user's conversations: a fact learnt here that another conversation also supports
   stays, moved to that conversation; the support this conversation gave to other facts
   (its episodes among their sources, its reinforcements, its retirements) is taken out.
4. Release the lock.

Reviews of other conversations' memories. A segment of this conversation rates the
memories of any conversation of the tenant that were retrieved in it (``asked_in``), and
the ``memory_review`` row it writes belongs to that memory's conversation; its ``detail``
holds the queries asked here, this segment's words the memory shared (``taken_up``,
without an LLM), the LLM's reason (which may quote this segment) or its error, and
``asked_in``; its ``segment_id`` is one of this conversation's episodes. Such a row is
scrubbed, not deleted: ``detail`` keeps only the rating's name, the closeness and the
model's name (numbers and configuration, no text of this conversation) and is marked
``scrubbed``, and ``segment_id`` is cleared. Deleting it instead would leave the other
memory's FSRS state inconsistent: the rating is already in its card, and the card each
later review of it started from (``card_before``) was computed from it; the card would
describe a review with no record, and rewinding the card would discard the later reviews
built on it. Kept, the memory's review history still adds up to its card.

When a review of another conversation rated this conversation's memories alongside other
memories, the LLM was shown this conversation's titles and summaries, so the reasons (and
any LLM error) it gave for the other memories rated in the same run are removed too (that
run is told by the ``segment_id`` of the review of this conversation's memory, and by the
``consumed_at`` its pending reviews share with the others it consumed); their queries,
asked in the other conversation, stay.

The pending reviews are deleted first: a review job locks the pending reviews it consumes
before anything else, so the delete waits for a job applying reviews of or in this
conversation, and the scrub that follows sees what it wrote.

Work that began before and ends after: a drain finds its lock gone and its commits
refused; an episode creation finds no conversation row (or, when the conversation was
started again meanwhile, a fence that was never handed out before: fences come from one
sequence, migration 0006) and is refused; either writes nothing. A review job of this
conversation's segment finds its pending reviews gone and applies nothing. A retrieval
racing the delete records no review note for a memory that is gone. Two races are not
closed here: this process's review notes are written before the delete, but a note queued
by a retrieval asked in this conversation in *another* process (another API worker) and
written after the delete keeps its query in ``pending_review``; and a review job of
another conversation that showed this conversation's memories to the LLM before the
delete and applies its ratings after it keeps the reasons it got for the other memories.

Used by the HTTP API's DELETE, ``memq forget``, the demo, the evaluation and the soak.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import psycopg

from memq.shared import activity
from memq.shared.db.activity import forget_conversation_id, record
from memq.shared.errors import Busy
from memq.shared.mailbox import quota
from memq.shared.mailbox.keys import ConversationKeys
from memq.shared.mailbox.scripts import Scripts
from memq.shared.mailbox.status import queued_messages
from memq.shared.webhooks import events as webhook_events

if TYPE_CHECKING:
    from memq.shared.connections import MailboxClient


# Every table forget deletes from or scrubs, children before parents (``memq forget
# --compact`` rewrites exactly these: shared/forget_compact.py).
TOUCHED = (
    "pending_review",
    "memory_review",
    "semantic_fact_history",
    "semantic_fact",
    "episode_message",
    "episodic_memory",
    "seq_gap",
    "conversation_participant",
    "conversation_user_change",
    "conversation",
    "webhook_delivery",  # scrubbed by webhook_events.conversation_forgotten
    "activity",  # its entries' conversation id replaced by its hash: the old row versions hold it
)


@dataclass(frozen=True)
class Forgotten:
    episodes: int
    messages: int
    redis_keys: int

    @property
    def existed(self) -> bool:
        return bool(self.episodes or self.messages or self.redis_keys)


def forget_conversation(
    client: MailboxClient,
    conn: psycopg.Connection,
    keys: ConversationKeys,
    *,
    wait_seconds: float = 90.0,
    lease_seconds: float = 300.0,
    actor: activity.Actor | None = None,
) -> Forgotten:
    """``actor``: who forgets, for the activity log's ``conversation.forget`` entry (None:
    no entry of its own; the entries naming the conversation are hashed all the same)."""
    token = f"forget:{uuid.uuid4().hex}"
    deadline = time.monotonic() + wait_seconds
    while not client.set(keys.lock, token, nx=True, px=int(lease_seconds * 1000)):
        if time.monotonic() > deadline:
            raise Busy(f"a worker is processing conversation {keys.conversation_id!r}; nothing was deleted, try again")
        time.sleep(0.05)
    scripts = Scripts.register(client)
    try:
        queued = queued_messages(client, keys)
        redis_keys = _forget_redis(client, keys)
        episodes, messages = _forget_database(conn, keys.tenant, keys.conversation_id, actor)
    finally:
        scripts.unlock(keys=[keys.lock], args=[token])
    quota.give_back_stored(scripts, keys.prefix, keys.tenant, messages + queued)
    return Forgotten(episodes, messages, redis_keys)


def _forget_redis(client: MailboxClient, keys: ConversationKeys) -> int:
    pending = [f"{keys.member}/{eid}" for eid in cast(list[str], client.hkeys(keys.segments))]
    others = [k for k in keys.all() if k != keys.lock]
    pipe = client.pipeline(transaction=False)
    for key in others:  # one DEL per key: a Redis Cluster pipeline refuses a multi-key DEL
        pipe.delete(key)
    pipe.zrem(keys.shard.active, keys.member)
    pipe.zrem(keys.shard.drains, keys.member)
    pipe.zrem(keys.shard.quarantined, keys.member)
    pipe.zrem(keys.shard.webhooks, keys.member)
    if pending:
        pipe.zrem(keys.shard.pending, *pending)
    return sum(pipe.execute()[: len(others)])


def _forget_database(
    conn: psycopg.Connection, tenant: str, conversation_id: str, actor: activity.Actor | None
) -> tuple[int, int]:
    from memq.shared.review_notes import flush_review_notes

    where = "WHERE tenant_id = %s AND conversation_id = %s"
    args = (tenant, conversation_id)
    flush_review_notes(timeout=5.0)  # this process's notes in flight land before the deletes, not after them
    with conn.transaction():
        # First: waits for a review job holding any of these (it locks them before it writes).
        deleted = conn.execute(
            "DELETE FROM pending_review WHERE tenant_id = %s AND (conversation_id = %s OR asked_in = %s) "
            "RETURNING conversation_id, coalesce(asked_in, conversation_id), consumed_at",
            (tenant, conversation_id, conversation_id),
        ).fetchall()
        # Review runs elsewhere that rated this conversation's memories: (conversation asked in, when consumed).
        runs = {
            (asked, at)
            for conv, asked, at in deleted
            if conv == conversation_id and at is not None and asked != conversation_id
        }
        conn.execute(
            "UPDATE memory_review SET detail = detail - 'reason' - 'llm_error', updated_at = now() "
            "WHERE tenant_id = %s AND conversation_id <> %s AND (detail ? 'reason' OR detail ? 'llm_error') AND ("
            " segment_id IN (SELECT segment_id FROM memory_review WHERE tenant_id = %s AND conversation_id = %s"
            "  AND segment_id IS NOT NULL)"
            " OR id IN (SELECT p.review_id FROM pending_review p"
            "  JOIN unnest(%s::text[], %s::timestamptz[]) AS r(asked, at)"
            "  ON coalesce(p.asked_in, p.conversation_id) = r.asked AND p.consumed_at = r.at"
            "  WHERE p.tenant_id = %s AND p.review_id IS NOT NULL))",
            (tenant, conversation_id, tenant, conversation_id, [a for a, _ in runs], [t for _, t in runs], tenant),
        )
        conn.execute(
            "UPDATE memory_review SET segment_id = NULL, updated_at = now(), detail = '{\"scrubbed\": true}'::jsonb || "
            " (SELECT coalesce(jsonb_object_agg(key, value), '{}'::jsonb) FROM jsonb_each(detail)"
            "  WHERE key IN ('rating', 'closeness', 'model')) "
            "WHERE tenant_id = %s AND conversation_id <> %s AND (detail ->> 'asked_in' = %s"
            " OR segment_id IN (SELECT id FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s))",
            (tenant, conversation_id, conversation_id, tenant, conversation_id),
        )
        conn.execute(f"DELETE FROM memory_review {where}", args)
        reopened = _unlink_facts(conn, tenant, conversation_id)
        conn.execute(f"DELETE FROM semantic_fact_history {where}", args)
        _settle_facts(conn, tenant, reopened)
        conn.execute(f"DELETE FROM semantic_fact {where}", args)
        messages = conn.execute(f"DELETE FROM episode_message {where}", args).rowcount
        episodes = conn.execute(f"DELETE FROM episodic_memory {where}", args).rowcount
        for table in ("seq_gap", "conversation_participant", "conversation_user_change", "conversation"):
            conn.execute(f"DELETE FROM {table} {where}", args)
        webhook_events.conversation_forgotten(conn, tenant, conversation_id, episodes=episodes, messages=messages)
        hashed = forget_conversation_id(conn, tenant, conversation_id)
        if actor is not None:
            record(conn, tenant, activity.conversation_forgotten(actor, hashed, episodes=episodes, messages=messages))
    return episodes, messages


def _unlink_facts(conn: psycopg.Connection, tenant: str, conversation_id: str) -> list[str]:
    """Take this conversation's support out of the facts that outlive it (a user's facts
    span their conversations, ``worker/consolidation/job.py``), before its history rows
    and its own facts are deleted:

    - a fact learnt here that episodes of another conversation also support moves to the
      earliest of those conversations, without this conversation's episodes;
    - a fact of another conversation that episodes here reinforced loses them.

    Returns the facts of other conversations that this conversation retired (superseded
    or invalidated): with its reason gone they may be true again (``_settle_facts``)."""
    gone = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s", (tenant, conversation_id)
        )
    ]
    retired = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT h.fact_id::text FROM semantic_fact_history h JOIN semantic_fact f ON f.id = h.fact_id "
            "WHERE h.tenant_id = %s AND h.conversation_id = %s AND h.action IN ('superseded', 'invalidated') "
            "AND f.conversation_id <> %s",
            (tenant, conversation_id, conversation_id),
        )
    ]
    kept = "ARRAY(SELECT x FROM unnest(f.source_episode_ids) x WHERE x <> ALL(%(gone)s::uuid[]))"
    params = {"t": tenant, "c": conversation_id, "gone": gone}
    conn.execute(
        f"UPDATE semantic_fact f SET source_episode_ids = {kept}, conversation_id = ("
        " SELECT e.conversation_id FROM episodic_memory e"
        " WHERE e.tenant_id = %(t)s AND e.id = ANY(f.source_episode_ids) AND e.conversation_id <> %(c)s"
        " ORDER BY e.start_at, e.id LIMIT 1) "
        "WHERE f.tenant_id = %(t)s AND f.conversation_id = %(c)s AND EXISTS ("
        " SELECT 1 FROM episodic_memory e WHERE e.tenant_id = %(t)s AND e.id = ANY(f.source_episode_ids)"
        " AND e.conversation_id <> %(c)s)",
        params,
    )
    conn.execute(
        f"UPDATE semantic_fact f SET source_episode_ids = {kept} "
        "WHERE f.tenant_id = %(t)s AND f.conversation_id <> %(c)s AND f.source_episode_ids && %(gone)s::uuid[]",
        params,
    )
    return retired


def _settle_facts(conn: psycopg.Connection, tenant: str, retired: list[str]) -> None:
    """After this conversation's history rows are gone: every fact's reinforcement count is
    what its remaining history says, and a fact this conversation retired that no other
    conversation retired is active again."""
    conn.execute(
        "UPDATE semantic_fact f SET reinforcements = h.n, last_reinforced_at = h.last FROM ("
        " SELECT f2.id, count(h2.*) FILTER (WHERE h2.action = 'reinforced') AS n,"
        " max(h2.at) FILTER (WHERE h2.action = 'reinforced') AS last"
        " FROM semantic_fact f2 LEFT JOIN semantic_fact_history h2 ON h2.fact_id = f2.id"
        " WHERE f2.tenant_id = %s GROUP BY f2.id) h "
        "WHERE f.id = h.id AND (f.reinforcements <> h.n OR f.last_reinforced_at IS DISTINCT FROM h.last)",
        (tenant,),
    )
    if retired:
        conn.execute(
            "UPDATE semantic_fact f SET expired_at = NULL, invalid_at = NULL, superseded_by = NULL "
            "WHERE f.id = ANY(%s::uuid[]) AND NOT EXISTS (SELECT 1 FROM semantic_fact_history h "
            "WHERE h.fact_id = f.id AND h.action IN ('superseded', 'invalidated'))",
            (retired,),
        )
