"""A task's PostgreSQL session cannot leave a query running behind it.

Celery's soft time limit raises ``SoftTimeLimitExceeded`` from a signal handler, wherever
the task is, also in the middle of a query. psycopg cancels the server's query only for
KeyboardInterrupt; for anything else the query went on running on the server after the
connection was closed, holding the transaction's locks (the conversation's row lock),
and every retry of the same conversation queued behind it until its own soft limit: a
stall seen in the soak right after a Redis power loss. ``resources.database(tenant)`` cancels
the query on the way out, and the server's own limits end a lock wait before the soft
limit does.
"""

from __future__ import annotations

import signal
import threading

import psycopg
import pytest
from billiard.exceptions import SoftTimeLimitExceeded

from memq.shared.connections import pg_connect, pg_owner_connect
from memq.worker import resources


def _waiting_on(conn: psycopg.Connection, marker: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s AND pid <> pg_backend_pid()",
        (f"%{marker}%",),
    ).fetchone()
    assert row is not None
    return int(row[0])


def _ended_on_the_server(conn: psycopg.Connection, marker: str, within_s: float = 10.0) -> bool:
    """Whether no backend runs the query any more, waiting for it to end (a cancel request
    is acknowledged before the backend has ended the query: it is seen active a moment
    longer). A query left running, the failure this guards against, waits on its lock for
    minutes (the lock timeout is half the soft limit), far beyond ``within_s``."""
    for _ in range(int(within_s / 0.05)):
        if _waiting_on(conn, marker) == 0:
            return True
        conn.execute("SELECT pg_sleep(0.05)")
    return _waiting_on(conn, marker) == 0


@pytest.fixture
def locked_row(settings, tenant):
    """A conversation row locked by another session (a transaction left open) until the test ends."""
    holder = pg_connect(settings, tenant=tenant)
    holder.execute(
        "INSERT INTO conversation (tenant_id, conversation_id) VALUES (%s, 'locked') ON CONFLICT DO NOTHING", (tenant,)
    )
    holder.commit()
    holder.execute(
        "SELECT 1 FROM conversation WHERE tenant_id = %s AND conversation_id = 'locked' FOR UPDATE", (tenant,)
    )
    yield tenant
    holder.rollback()
    holder.close()


def test_a_query_interrupted_by_the_soft_limit_is_cancelled_on_the_server(locked_row, db):
    marker = "soft_limit_probe"
    fired = threading.Event()

    def soft_limit(signum, frame):
        fired.set()
        raise SoftTimeLimitExceeded()

    previous = signal.signal(signal.SIGALRM, soft_limit)
    try:
        with pytest.raises(SoftTimeLimitExceeded), resources.database(locked_row) as conn:
            # wait until the query is seen waiting on the lock, then interrupt it as Celery would
            def interrupt() -> None:
                with pg_owner_connect(autocommit=True) as watcher:
                    for _ in range(200):
                        if _waiting_on(watcher, marker):
                            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGALRM)
                            return
                        watcher.execute("SELECT pg_sleep(0.05)")

            threading.Thread(target=interrupt, daemon=True).start()
            conn.execute(
                f"SELECT 1 /* {marker} */ FROM conversation WHERE tenant_id = %s AND conversation_id = 'locked' "
                "FOR UPDATE",
                (locked_row,),
            )
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert fired.is_set()
    assert _ended_on_the_server(db, marker)  # nothing left running on the server


def test_a_lock_wait_ends_as_a_transient_error_before_the_soft_limit(locked_row, settings, monkeypatch):
    from memq.worker.failures import is_transient

    limits = resources.database_timeouts(settings)
    assert limits["lock_timeout"] < 1000 * (settings.task_time_limit_seconds - 1)
    monkeypatch.setattr(resources, "database_timeouts", lambda s: {**limits, "lock_timeout": 300})
    with resources.database(locked_row) as conn, pytest.raises(psycopg.errors.LockNotAvailable) as raised:
        conn.execute(
            "SELECT 1 FROM conversation WHERE tenant_id = %s AND conversation_id = 'locked' FOR UPDATE", (locked_row,)
        )
    assert is_transient(raised.value)  # retried with backoff, never counted against the segment


def _backend(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def _visible(conn: psycopg.Connection, tenants: tuple[str, ...]) -> set[str]:
    rows = conn.execute("SELECT tenant_id FROM conversation WHERE tenant_id = ANY(%s)", (list(tenants),)).fetchall()
    return {r[0] for r in rows}


@pytest.fixture
def two_tenants(settings):
    """Two tenants with a conversation row each, removed afterwards."""
    import uuid

    tenants = (f"ta{uuid.uuid4().hex[:10]}", f"tb{uuid.uuid4().hex[:10]}")
    with pg_owner_connect(settings, autocommit=True) as owner:
        for t in tenants:
            owner.execute("INSERT INTO conversation (tenant_id, conversation_id) VALUES (%s, 'c')", (t,))
    yield tenants
    with pg_owner_connect(settings, autocommit=True) as owner:
        owner.execute("DELETE FROM conversation WHERE tenant_id = ANY(%s)", (list(tenants),))


def test_a_kept_connection_serves_the_next_task_under_that_tasks_scope_alone(two_tenants):
    """Tasks reuse the process' connection (no connect per task), and each checkout puts it
    under the new task's tenant, or back to the owner: never the previous task's scope."""
    a, b = two_tenants
    with resources.database(a) as conn:
        first = _backend(conn)
        assert _visible(conn, two_tenants) == {a}
    with resources.database(b) as conn:
        assert _backend(conn) == first  # the same session, kept
        assert _visible(conn, two_tenants) == {b}
    with resources.owner_database() as conn:
        assert _backend(conn) == first
        assert _visible(conn, two_tenants) == {a, b}  # the owner, across tenants
    with resources.database(a) as conn:
        assert _backend(conn) == first
        assert _visible(conn, two_tenants) == {a}
        with resources.owner_database() as nested:  # a task holding two at once: a second session
            assert _backend(nested) != first and _visible(nested, two_tenants) == {a, b}
        assert _visible(conn, two_tenants) == {a}


def test_a_connection_a_task_failed_on_or_left_in_a_transaction_is_not_kept(two_tenants):
    a, _ = two_tenants
    with pytest.raises(RuntimeError), resources.database(a) as conn:
        failed = _backend(conn)
        raise RuntimeError("the task failed")
    with resources.database(a) as conn:
        assert _backend(conn) != failed
        left = _backend(conn)
        conn.execute("BEGIN")  # a transaction left open: its locks must not outlive the task
    with resources.database(a) as conn:
        assert _backend(conn) != left
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_a_kept_connection_the_server_closed_is_replaced_without_an_error(two_tenants, db):
    """PostgreSQL restarted, or ended the idle session: the next task gets a new one."""
    a, _ = two_tenants
    with resources.database(a) as conn:
        gone = _backend(conn)
    db.execute("SELECT pg_terminate_backend(%s)", (gone,))
    with resources.database(a) as conn:
        assert _backend(conn) != gone
        assert _visible(conn, two_tenants) == {a}
