"""The vector indexes' build options (migration 0017), as the migrated schema holds them:
what an index built from its definition (a restore, REINDEX, the bench's bulk load) gets."""

from __future__ import annotations

import pytest

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
