"""A forget and an activity entry naming the same id, written at the same time
(``shared/db/activity.py``): the entry waits for the forget's transaction and then names the
id's hash, so an export ending just as its conversation is forgotten leaves no trace of the
id either. Two real connections; the wait is seen in ``pg_locks``, not timed."""

from __future__ import annotations

import threading
import uuid

import pytest
from waiting import wait_until

pytestmark = pytest.mark.integration


def test_an_entry_written_while_its_id_is_forgotten_waits_and_names_the_hash(settings, tenant):
    from memq.shared import activity
    from memq.shared.connections import pg_owner_connect
    from memq.shared.db.activity import forget_conversation_id, record

    conversation = f"race-{uuid.uuid4().hex[:8]}"
    actor = activity.cli_actor("tester")
    written = threading.Event()
    failed: list[BaseException] = []

    def export_ends() -> None:
        try:
            with pg_owner_connect(settings, autocommit=True) as exporting:
                record(exporting, tenant, activity.exported(actor, conversation_id=conversation, user_id=None, lines=3))
            written.set()
        except BaseException as exc:  # (seen by the test, not lost in the thread)
            failed.append(exc)

    with pg_owner_connect(settings, autocommit=True) as forgetting:
        with forgetting.transaction():  # forget's transaction, not committed yet
            hashed = forget_conversation_id(forgetting, tenant, conversation)
            record(forgetting, tenant, activity.conversation_forgotten(actor, hashed, episodes=1, messages=2))
            ending = threading.Thread(target=export_ends)
            ending.start()
            wait_until(lambda: _lock_waiters(forgetting) > 0 or failed or written.is_set(), 30, interval=0.01)
            assert not failed and not written.is_set()  # the export's entry waits for the forget
        ending.join(30)
        assert not failed and written.is_set()
        stored = forgetting.execute(
            "SELECT action, conversation_id FROM activity WHERE tenant_id = %s ORDER BY id", (tenant,)
        ).fetchall()
    assert stored == [("conversation.forget", hashed), ("export", hashed)]
    assert conversation not in str(stored)


def _lock_waiters(conn) -> int:
    row = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchone()
    assert row is not None
    return int(row[0])
