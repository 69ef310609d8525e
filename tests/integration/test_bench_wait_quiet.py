"""``memq_lab.bench.sql.wait_quiet``: a timed bench run starts only once no vacuum runs in its
database. Here a real VACUUM, slowed by its own cost settings so that it is seen in
progress, runs in another session while the bench waits."""

from __future__ import annotations

import os
import threading

import psycopg
import pytest

from memq_lab.bench.sql import VACUUMING, one_row, wait_quiet

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMQ_TEST_REDIS_CLUSTER") == "1", reason="PostgreSQL only; once is enough"
)


def test_it_returns_at_once_when_no_vacuum_runs(empty_database):
    with psycopg.connect(empty_database, autocommit=True) as conn:
        assert one_row(conn, VACUUMING)[0] == 0
        assert wait_quiet(conn) < 1.0


def test_it_waits_for_a_vacuum_in_progress_to_end(empty_database):
    with psycopg.connect(empty_database, autocommit=True) as setup:
        # ~500 pages: at a cost limit of 1, the vacuum pauses 2 ms after each (about a second)
        setup.execute("CREATE TABLE filler AS SELECT g AS id, repeat('x', 100) AS pad FROM generate_series(1, 30000) g")
        setup.execute("ALTER TABLE filler SET (autovacuum_enabled = false)")  # only the test's VACUUM
        setup.execute("DELETE FROM filler WHERE id % 2 = 0")
    started = threading.Event()
    failure: list[BaseException] = []

    def vacuum() -> None:
        try:
            with psycopg.connect(empty_database, autocommit=True) as conn:
                conn.execute("SET vacuum_cost_delay = 2")
                conn.execute("SET vacuum_cost_limit = 1")
                started.set()
                conn.execute("VACUUM filler")
        except BaseException as e:  # reported by the test, not lost in the thread
            failure.append(e)
            started.set()

    worker = threading.Thread(target=vacuum)
    worker.start()
    try:
        with psycopg.connect(empty_database, autocommit=True) as conn:
            assert started.wait(30)
            seen = False
            while worker.is_alive() and not seen:  # the vacuum's progress row, once it starts
                seen = one_row(conn, VACUUMING)[0] > 0
            assert seen, "the vacuum ended before it was seen in progress"
            wait_quiet(conn, timeout=120)
            # it returned only once that vacuum was done (an autovacuum of another table,
            # a catalog's, may start in the database right after: not this one's business)
            filler = "SELECT count(*) FROM pg_stat_progress_vacuum WHERE relid = 'filler'::regclass"
            assert one_row(conn, filler)[0] == 0
    finally:
        worker.join(timeout=120)
    assert not failure, failure
    assert not worker.is_alive()
