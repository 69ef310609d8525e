"""What waits in PostgreSQL for the later stages (metrics: memq_pending_reviews,
memq_unconsolidated_episodes). Both counts read a partial index of exactly those rows."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg


@dataclass(frozen=True)
class MemoryBacklog:
    pending_reviews: int  # retrievals noted for review, not yet reviewed
    unconsolidated_episodes: int  # episodes semantic consolidation has not yet read


def memory_backlog(conn: psycopg.Connection) -> MemoryBacklog:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM pending_review WHERE consumed_at IS NULL), "
        "(SELECT count(*) FROM episodic_memory WHERE consolidated_at IS NULL)"
    ).fetchone()
    assert row is not None  # a SELECT of two scalars always answers a row
    return MemoryBacklog(int(row[0]), int(row[1]))
