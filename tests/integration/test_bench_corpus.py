"""The bench's compaction after removing a corpus (``memq_lab.bench.corpus.compact``) on the
real PostgreSQL: it rewrites the tables only when what was removed outnumbers what is
left, keeps every row, and gives way to a session holding the tables."""

from __future__ import annotations

import threading

import cluster_mode
import pytest

from memq_lab.bench.corpus import compact
from memq_lab.bench.sql import one_row

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(cluster_mode.enabled(), reason="PostgreSQL only; once is enough"),
]

COUNT = "SELECT count(*) FROM episode_message"


def count(db) -> int:
    return int(one_row(db, COUNT)[0])


def test_tables_are_rewritten_only_when_most_of_them_was_removed(db):
    left = count(db)
    said: list[str] = []
    assert not compact(db, left, said.append) and said == []
    assert compact(db, left + 1, said.append)
    assert count(db) == left and said and "compacted" in said[0]


def test_tables_in_use_are_left_as_they_are(db, settings):
    from memq.shared.connections import pg_owner_connect

    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with pg_owner_connect(settings) as other, other.transaction():
            other.execute("LOCK TABLE episode_message IN ACCESS SHARE MODE")
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        said: list[str] = []
        assert not compact(db, count(db) + 1, said.append)
        assert said == ["the tables are in use: not compacted"]
    finally:
        release.set()
        holder.join(10)
    assert db.execute("SHOW lock_timeout").fetchone()[0] == "0"  # the session's setting is back
