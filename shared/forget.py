"""Remove every trace of a conversation: its Redis queue state and its episodes.

Used by the demo to start clean; the HTTP API's forget endpoint (roadmap) builds on it.
Do not call it while workers are still draining the conversation.
"""

from __future__ import annotations

import psycopg
import redis

from shared.mailbox.keys import ConversationKeys, GlobalKeys


def forget_conversation(client: redis.Redis, conn: psycopg.Connection, prefix: str, tenant: str, conversation_id: str) -> int:
    keys = ConversationKeys(prefix, tenant, conversation_id)
    g = GlobalKeys(prefix)
    pending = [m for m in client.zrange(g.pending, 0, -1) if m.startswith(keys.member + "/")]
    pipe = client.pipeline(transaction=True)
    pipe.delete(keys.inbox, keys.buffer, keys.state, keys.ids, keys.segments, keys.lock)
    pipe.zrem(g.active, keys.member)
    pipe.zrem(g.drains, keys.member)
    if pending:
        pipe.zrem(g.pending, *pending)
    pipe.execute()
    cur = conn.execute(
        "DELETE FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s", (tenant, conversation_id)
    )
    conn.commit()
    return cur.rowcount
