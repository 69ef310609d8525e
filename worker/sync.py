"""Keep a conversation's Redis state consistent with what PostgreSQL holds.

Redis with ``appendfsync everysec`` can come back from a crash without its last
second of writes: sequence numbers rewind, closed segments and committed steps vanish,
messages already stored in episodes reappear in the inbox or open event. Work started
before the crash (an episode creation holding a segment that no longer exists) may
still write to PostgreSQL afterwards.

So whenever a drainer finds that the conversation's state was last synced under
another Redis run id (the server restarted, failed over, or the state is new or
expired), before numbering anything it:

1. raises the conversation's fence in PostgreSQL, in one transaction under its row
   lock, reading the highest sequence number stored and recording as gaps the numbers
   Redis handed out in the lost window that PostgreSQL does not hold. From then on an
   episode cut under the old fence is refused (``StaleSegment``);
2. in one fenced Lua step, raises Redis' counter to at least PostgreSQL's (new numbers
   continue after what PostgreSQL holds), re-stamps the closed segments still waiting
   with the new fence, and records the run id.

Messages Redis still holds that PostgreSQL already stored are recognised by id when
their segment's episode is created and are not stored twice.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace

import psycopg
import structlog

from memq.shared.db.conversations import raise_fence
from memq.shared.mailbox.codec import to_micros
from memq.shared.users import record_owner, set_state_owner, state_owner
from memq.worker.conversation_store import ConversationStore, Snapshot

log = structlog.get_logger("memq.sync")


def sync_with_database(
    store: ConversationStore, snapshot: Snapshot, connect: Callable[[], AbstractContextManager[psycopg.Connection]]
) -> Snapshot:
    """Return the snapshot, synced (a no-op when it already is). ``connect()`` gives an
    autocommit PostgreSQL connection to use in a ``with`` block."""
    if snapshot.synced:
        return snapshot
    user = state_owner(store.client, store.settings, store.tenant, store.conversation_id)
    with connect() as conn, conn.transaction():
        plan = raise_fence(conn, store.tenant, store.conversation_id, snapshot.seq)
        # the conversation's user: Redis' onto a row without one; a returning conversation
        # (its state expired) gets PostgreSQL's back
        stored_user = record_owner(conn, store.tenant, store.conversation_id, user)
    if stored_user is not None and stored_user != user:
        set_state_owner(store.client, store.settings, store.tenant, store.conversation_id, stored_user)
    last_eff = to_micros(plan.last_message_at) if plan.last_message_at else None
    restamped = store.sync(run_id=snapshot.run_id, fence=plan.fence, seq_floor=plan.last_seq, last_eff_floor=last_eff)
    rewound = snapshot.rid is not None and plan.last_seq > snapshot.seq
    event = "redis_rewind_repaired" if rewound else "conversation_synced"
    (log.warning if rewound else log.info)(
        event,
        fence=plan.fence,
        redis_seq=snapshot.seq,
        stored_seq=plan.last_seq,
        retired=plan.retired,
        segments_restamped=restamped,
        previous_run_id=snapshot.rid,
    )
    return replace(
        snapshot,
        rid=snapshot.run_id,
        fence=plan.fence,
        seq=max(snapshot.seq, plan.last_seq),
        last_eff_us=max((x for x in (snapshot.last_eff_us, last_eff) if x is not None), default=None),
        version=store.version,
    )
