"""Remove every trace of a conversation: its Redis queue state and index entries, and
its rows in PostgreSQL.

Used by the demo (to start clean) and the soak test; the HTTP API's forget endpoint
(roadmap) builds on it. PostgreSQL's conversation row goes too, so an episode creation
still in flight finds a fence of 0 and writes nothing.
"""

from __future__ import annotations

import psycopg

from shared.mailbox.keys import ConversationKeys


def forget_conversation(client, conn: psycopg.Connection, keys: ConversationKeys) -> int:
    """Returns the number of episodes deleted."""
    tenant, conversation_id = keys.tenant, keys.conversation_id
    pending = [f"{keys.member}/{eid}" for eid in client.hkeys(keys.segments)]
    pipe = client.pipeline(transaction=False)
    for key in keys.all():  # one DEL per key: a Redis Cluster pipeline refuses a multi-key DEL
        pipe.delete(key)
    pipe.zrem(keys.shard.active, keys.member)
    pipe.zrem(keys.shard.drains, keys.member)
    pipe.zrem(keys.shard.quarantined, keys.member)
    if pending:
        pipe.zrem(keys.shard.pending, *pending)
    pipe.execute()
    with conn.transaction():
        cur = conn.execute(
            "DELETE FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s", (tenant, conversation_id)
        )
        deleted = cur.rowcount
        for table in ("episode_message", "seq_gap", "conversation_participant", "conversation"):
            conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s AND conversation_id = %s", (tenant, conversation_id))
    return deleted
