"""Forget a conversation: remove every trace of it from Redis and PostgreSQL, including
work in flight, idempotently.

1. Take the conversation's lock (waiting for a worker draining it to let go, at most
   ``MEMQ_FORGET_WAIT_SECONDS``), so no drain is between reading the state and writing it.
2. Delete its Redis keys (queue, open event, state, message ids, closed segments,
   quarantine, cached manifest) and its entries in the shard indexes.
3. In one transaction delete its rows: episodes, their messages, pending and applied
   reviews (also those of retrievals asked in it), facts and their history, sequence
   gaps, participants, and the conversation row with its fence.
4. Release the lock.

Work that began before and ends after: a drain finds its lock gone and its commits
refused; an episode creation finds no conversation row (or, when the conversation was
started again meanwhile, a fence that was never handed out before: fences come from one
sequence, migration 0006) and is refused; either writes nothing. A retrieval racing the
delete records no review note for a memory that is gone.

Used by the HTTP API's DELETE, ``memq forget``, the demo, the evaluation and the soak.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import psycopg

from shared.errors import Busy
from shared.mailbox.keys import ConversationKeys
from shared.mailbox.scripts import Scripts


@dataclass(frozen=True)
class Forgotten:
    episodes: int
    messages: int
    redis_keys: int

    @property
    def existed(self) -> bool:
        return bool(self.episodes or self.messages or self.redis_keys)


def forget_conversation(client, conn: psycopg.Connection, keys: ConversationKeys, *, wait_seconds: float = 90.0,
                        lease_seconds: float = 300.0) -> Forgotten:
    token = f"forget:{uuid.uuid4().hex}"
    deadline = time.monotonic() + wait_seconds
    while not client.set(keys.lock, token, nx=True, px=int(lease_seconds * 1000)):
        if time.monotonic() > deadline:
            raise Busy(f"a worker is processing conversation {keys.conversation_id!r}; nothing was deleted, try again")
        time.sleep(0.05)
    try:
        redis_keys = _forget_redis(client, keys)
        episodes, messages = _forget_database(conn, keys.tenant, keys.conversation_id)
    finally:
        Scripts.register(client).unlock(keys=[keys.lock], args=[token])
    return Forgotten(episodes, messages, redis_keys)


def _forget_redis(client, keys: ConversationKeys) -> int:
    pending = [f"{keys.member}/{eid}" for eid in client.hkeys(keys.segments)]
    others = [k for k in keys.all() if k != keys.lock]
    pipe = client.pipeline(transaction=False)
    for key in others:  # one DEL per key: a Redis Cluster pipeline refuses a multi-key DEL
        pipe.delete(key)
    pipe.zrem(keys.shard.active, keys.member)
    pipe.zrem(keys.shard.drains, keys.member)
    pipe.zrem(keys.shard.quarantined, keys.member)
    if pending:
        pipe.zrem(keys.shard.pending, *pending)
    return sum(pipe.execute()[: len(others)])


def _forget_database(conn: psycopg.Connection, tenant: str, conversation_id: str) -> tuple[int, int]:
    from shared.retrieval.review_notes import flush_review_notes

    where = "WHERE tenant_id = %s AND conversation_id = %s"
    args = (tenant, conversation_id)
    flush_review_notes(timeout=5.0)  # this process's notes in flight land before the deletes, not after them
    with conn.transaction():
        conn.execute(f"DELETE FROM pending_review {where}", args)
        conn.execute("DELETE FROM pending_review WHERE tenant_id = %s AND asked_in = %s", args)
        conn.execute(f"DELETE FROM memory_review {where}", args)
        conn.execute(f"DELETE FROM semantic_fact_history {where}", args)
        conn.execute(f"DELETE FROM semantic_fact {where}", args)
        messages = conn.execute(f"DELETE FROM episode_message {where}", args).rowcount
        episodes = conn.execute(f"DELETE FROM episodic_memory {where}", args).rowcount
        for table in ("seq_gap", "conversation_participant", "conversation"):
            conn.execute(f"DELETE FROM {table} {where}", args)
    return episodes, messages
