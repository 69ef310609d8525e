"""`memq forget --compact`: after a forget, the bytes storage still held are gone too.

A planted word goes through the real pipeline into episodes; the conversation is forgotten;
the word is then still in PostgreSQL's table and index files (dead tuples) and in Redis'
append-only file(s) — the test's own check that it looks in the right places — and after
the compaction in none of them. The write-ahead log is not checked: a CHECKPOINT lets its
old segments be recycled, it does not erase them (docs/api.md says so)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_forget_no_trace import planted

pytestmark = pytest.mark.integration


def pg_files(db) -> list[Path]:
    """The files of every table forget touches, their TOAST tables and indexes."""
    from memq.shared.forget import TOUCHED

    data = Path(db.execute("SHOW data_directory").fetchone()[0])
    paths = []
    for table in TOUCHED:
        rows = db.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.oid = %s::regclass "
            "OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = %s::regclass) "
            "OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = %s::regclass)",
            (table, table, table),
        ).fetchall()
        paths += [data / r[0] for r in rows if r[0]]
    return paths


def aof_files(servers) -> list[Path]:
    files = []
    for server in servers:
        folder = Path(server.config_get("dir")["dir"])
        name = server.config_get("appendfilename")["appendfilename"]
        found = folder / name
        # Redis 7 keeps a folder of parts (appenddirname); 6.2 one file
        files += sorted(found.parent.glob(f"{name}*")) if found.exists() else sorted(folder.rglob(f"{name}*"))
    return [f for f in files if f.is_file()]


def holding(paths: list[Path], word: str) -> list[str]:
    needle = word.encode()
    return [str(p) for p in paths if p.exists() and needle in p.read_bytes()]


def test_compaction_removes_the_bytes_a_forget_left_in_storage(producer, worker, db, settings, tenant):
    import redis

    from memq.shared.connections import pg_owner_connect, redis_url
    from memq.shared.forget import forget_conversation
    from memq.shared.forget_compact import compact, redis_servers

    word, conv = planted(), f"compact-{uuid.uuid4().hex[:8]}"
    t0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    said = [f"My neighbour {word} grows tomatoes.", f"Tell {word} to water them at dusk.", "I will."]
    producer.add_messages(
        [
            {"role": "user" if i % 2 == 0 else "assistant", "content": text, "timestamp": t0 + timedelta(seconds=i)}
            for i, text in enumerate(said)
        ],
        conversation_id=conv,
    )
    producer.flush(conv)
    producer.wait_idle(conv, timeout=120)
    servers = redis_servers(producer.redis, redis.Redis.from_url(redis_url(settings)))
    assert db.execute("SELECT count(*) FROM episode_message WHERE content LIKE %s", (f"%{word}%",)).fetchone()[0] == 2

    done = forget_conversation(producer.redis, db, producer.keys(conv), wait_seconds=settings.forget_wait_seconds)
    assert done.messages == 3
    db.execute("CHECKPOINT")  # the dead tuples' pages on disk, as they will be sooner or later
    assert holding(pg_files(db), word), "the dead tuples should still hold the word before compaction"
    assert holding(aof_files(servers), word), "the append-only file should still hold the word before compaction"

    with pg_owner_connect(settings, autocommit=True) as conn:
        result = compact(conn, servers)
    assert result.checkpoint and result.redis_rewritten == len(servers) and not result.notes
    assert holding(pg_files(db), word) == []
    assert holding(aof_files(servers), word) == []
