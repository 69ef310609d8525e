"""A PostgreSQL primary demoted by a failover and still running answers writes with
"cannot execute ... in a read-only transaction" on the connections a worker kept to it.
That says nothing about the message or segment being written: it must be retried (never
counted towards the quarantine), on a new connection, which a multi-host DATABASE_URL with
``target_session_attrs=read-write`` opens to the new primary. A session turned read-only
stands in for the demoted server: the same error, from a real server.
"""

from __future__ import annotations

import psycopg
import pytest

from memq.worker import resources
from memq.worker.failures import is_transient

pytestmark = pytest.mark.integration


def test_a_write_refused_by_a_read_only_server_is_retried_on_a_new_connection(settings, tenant):
    with resources.database(tenant) as conn:  # kept afterwards, as between a worker's tasks
        conn.execute("SET default_transaction_read_only = on")  # the server it reaches is a standby now
        demoted = conn.info.backend_pid
    with pytest.raises(psycopg.Error) as refused, resources.database(tenant) as conn:
        assert conn.info.backend_pid == demoted  # the kept connection
        conn.execute("CREATE TEMP TABLE written_by_a_task (x int)")
    assert isinstance(refused.value, psycopg.errors.ReadOnlySqlTransaction)
    assert is_transient(refused.value)  # retried with backoff, not counted against the input
    with resources.database(tenant) as conn:  # the retry's session: a new connection
        assert conn.info.backend_pid != demoted
        assert conn.execute("SHOW default_transaction_read_only").fetchone() == ("off",)
