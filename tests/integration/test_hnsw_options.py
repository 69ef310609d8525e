"""The vector indexes' build options (migrations 0017 and 0018), as the migrated schema
holds them: what an index built from its definition (a restore, REINDEX, the bench's bulk
load) gets."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from alembic import command

from memq.memory.retrieval.legs import distance_sql
from memq.memory.retrieval.request import build_request
from memq.shared.db.migrate import alembic_config, upgrade

pytestmark = pytest.mark.integration


def test_the_vector_indexes_link_each_vector_after_a_wide_search(db):
    definitions = dict(
        db.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%%USING hnsw%%'").fetchall()
    )
    assert set(definitions) == {
        "episodic_memory_embedding_hnsw",
        "episode_message_embedding_hnsw",
        "semantic_fact_embedding_hnsw",
    }
    for name, definition in definitions.items():
        assert "ef_construction='128'" in definition, (name, definition)


def test_episodes_and_messages_are_indexed_at_half_precision_and_searched_through_the_index(db, settings):
    """The index is on the expression the vector legs order by (``legs._distance``): a
    search in a scope too large to read exactly is planned on it."""
    definitions = dict(
        db.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%%USING hnsw%%'").fetchall()
    )
    dim = settings.embedding_dim
    for name in ("episodic_memory_embedding_hnsw", "episode_message_embedding_hnsw"):
        assert f"(embedding)::halfvec({dim})) halfvec_cosine_ops" in definitions[name], definitions[name]
    assert "vector_cosine_ops" in definitions["semantic_fact_embedding_hnsw"]

    request = build_request(settings, tenant="any", query="anything")
    vector = np.zeros(dim, dtype=np.float32)
    vector[0] = 1.0
    for table, alias, index in (
        ("episode_message", "m", "episode_message_embedding_hnsw"),
        ("episodic_memory", "e", "episodic_memory_embedding_hnsw"),
    ):
        with db.transaction():
            db.execute("SET LOCAL enable_seqscan = off")
            plan = db.execute(
                f"EXPLAIN SELECT 1 FROM {table} {alias} ORDER BY {distance_sql(request, alias)} LIMIT 10",
                {"vector": vector},
            ).fetchall()
        assert index in "\n".join(row[0] for row in plan), plan


def _hnsw(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%%USING hnsw%%'"
        ).fetchall()
    return {name: definition.split(" USING ", 1)[1] for name, definition in rows}


def test_migration_0018_builds_the_new_indexes_beside_the_old_and_goes_back(settings, empty_database):
    """Up from 0017 (over a wrong index left under one new index's name, and with the other
    built by hand beforehand, which it keeps), down to 0017 and up again: each time exactly
    the three vector indexes, on the expected expressions."""
    target = settings.model_copy(update={"database_url": empty_database})
    upgrade(target, "0017")
    single = "hnsw (embedding vector_cosine_ops) WITH (ef_construction='128')"
    half = f"hnsw (((embedding)::halfvec({settings.embedding_dim})) halfvec_cosine_ops) WITH (ef_construction='128')"
    assert set(_hnsw(empty_database).values()) == {single}
    with psycopg.connect(empty_database, autocommit=True) as conn:
        # what an interrupted or mistaken build by hand left: built again
        conn.execute("CREATE INDEX episode_message_embedding_hnsw_new ON episode_message (seq)")
        # the episodes' index built by hand beforehand, as docs/operations.md says: reused
        conn.execute(
            "CREATE INDEX CONCURRENTLY episodic_memory_embedding_hnsw_new ON episodic_memory USING hnsw "
            f"((embedding::halfvec({settings.embedding_dim})) halfvec_cosine_ops) WITH (ef_construction = 128)"
        )
        built = conn.execute("SELECT 'episodic_memory_embedding_hnsw_new'::regclass::oid").fetchone()

    for step in ("up", "down", "up"):
        if step == "up":
            upgrade(target)
        else:
            command.downgrade(alembic_config(target), "0017")
        indexes = _hnsw(empty_database)
        assert set(indexes) == {
            "episodic_memory_embedding_hnsw",
            "episode_message_embedding_hnsw",
            "semantic_fact_embedding_hnsw",
        }, (step, indexes)
        expected = half if step == "up" else single
        assert indexes["episode_message_embedding_hnsw"] == expected, (step, indexes)
        assert indexes["episodic_memory_embedding_hnsw"] == expected, (step, indexes)
        assert indexes["semantic_fact_embedding_hnsw"] == single, (step, indexes)
        if step == "up" and built is not None:
            with psycopg.connect(empty_database) as conn:
                assert conn.execute("SELECT 'episodic_memory_embedding_hnsw'::regclass::oid").fetchone() == built
            built = None
