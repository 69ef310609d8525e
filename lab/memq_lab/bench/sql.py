"""The SQL helpers the benchmark families share: the single row an aggregate answers, and
waiting for PostgreSQL to be quiet before a timed run."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def one_row(conn: Any, sql: str, args: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """The single row an aggregate query answers."""
    row = conn.execute(sql, args).fetchone()
    if row is None:
        raise RuntimeError(f"no row for {sql!r}")
    return tuple(row)


def table_messages(conn: Any) -> int:
    """Rows in ``episode_message``, every tenant's: the size of the HNSW index a stored
    message is inserted into and a search walks (one per table)."""
    return int(one_row(conn, "SELECT count(*) FROM episode_message")[0])


VACUUMING = "SELECT count(*) FROM pg_stat_progress_vacuum WHERE datname = current_database()"
#: Longest wait for a vacuum in progress before a timed run (seconds); past it the run starts
#: anyway.
SETTLE_WAIT = 300.0


def wait_quiet(conn: Any, timeout: float = SETTLE_WAIT, *, say: Callable[[str], object] | None = None) -> float:
    """Wait until no vacuum runs in this database (autovacuum's included), at most
    ``timeout`` seconds; how long it waited, told to ``say`` when it was more than a second.
    A vacuum of a table under an HNSW index repairs the graph around every deleted row:
    after 1,500 messages were forgotten among ~130,000, autovacuum took ~0.4 of a core for
    ~70 s (2026-12-05), across whatever the bench timed meanwhile."""
    started = time.monotonic()
    while one_row(conn, VACUUMING)[0] and time.monotonic() - started < timeout:
        time.sleep(0.5)  # polling PostgreSQL's progress view: it has no event to wait on
    waited = time.monotonic() - started
    if say is not None and waited > 1:
        say(f"  waited {waited:.0f} s for a vacuum in progress to end")
    return waited
