"""Retrieval reaches PostgreSQL before it loads the embedding model: with the database
down, the caller hears so at once instead of after seconds of loading a model."""

from __future__ import annotations

import psycopg
import pytest

import memq.shared.embeddings as embeddings
from memq.memory.retrieval.service import retrieve_memory
from memq.shared.settings import Settings
from memq_lab.testing.tcp_proxy import free_port


def test_an_unreachable_database_is_reported_before_the_model_loads(monkeypatch):
    def no_model(settings):
        raise AssertionError("the embedding model was loaded before PostgreSQL answered")

    monkeypatch.setattr(embeddings, "get_embedder", no_model)
    nobody = Settings(database_url=f"postgresql://memq@127.0.0.1:{free_port()}/memq", redis_url="redis://127.0.0.1:1")
    with pytest.raises(psycopg.OperationalError):
        retrieve_memory("which seat did I get?", tenant="t1", conversation_id="c1", settings=nobody, record=False)
