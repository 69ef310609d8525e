"""An episode's messages are embedded once: the vectors segmentation carried over are used
as they are, and only the summary and the messages without one are embedded. The
episode's vector blends the summary's with its messages' mean."""

from __future__ import annotations

import numpy as np
from strategies import FakeEmbedder, fake_unit_vector

from memq.shared.embeddings import episode_vector
from memq.shared.settings import Settings
from memq.worker.conversation_store import decode_vector, encode_vector
from memq.worker.episodes.builder import build_episode


def _segment(n: int) -> dict:
    return {
        "episode_id": "00000000-0000-4000-8000-000000000007",
        "tenant": "t1",
        "conversation_id": "c1",
        "reason": "flush",
        "surprise": 0.2,
        "messages": [
            {
                "id": f"m{i}",
                "seq": i + 1,
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"message {i} about the train to Hamburg and seat {i}",
                "timestamp": f"2026-03-01T08:{i:02d}:00+00:00",
            }
            for i in range(n)
        ],
    }


def test_carried_vectors_are_used_and_only_the_rest_is_embedded():
    segment, embedder = _segment(5), FakeEmbedder()
    carried = {m["id"]: fake_unit_vector("carried " + m["id"], 384) for m in segment["messages"][:3]}
    row = build_episode(segment, Settings(), embedder, carried)
    # the two messages without a vector (the extractive title and summary weigh messages by
    # their vectors), then the summary
    assert embedder.calls == [[m["content"] for m in segment["messages"][3:]], [row.summary]]
    assert row.message_embeddings is not None and row.message_embeddings.shape == (5, 384)
    for i, m in enumerate(segment["messages"]):
        expected = carried.get(m["id"], fake_unit_vector(m["content"], 384))
        assert np.array_equal(row.message_embeddings[i], expected)


def test_without_carried_vectors_every_message_is_embedded_as_before():
    segment, embedder = _segment(4), FakeEmbedder()
    row = build_episode(segment, Settings(), embedder)
    assert embedder.calls == [[m["content"] for m in segment["messages"]], [row.summary]]


def test_the_episode_vector_blends_summary_and_messages():
    segment = _segment(4)
    carried = {m["id"]: fake_unit_vector(m["content"], 384) for m in segment["messages"]}
    settings = Settings(episode_summary_weight=0.5)
    row = build_episode(segment, settings, FakeEmbedder(), carried)
    assert row.message_embeddings is not None
    expected = episode_vector(fake_unit_vector(row.summary, 384), row.message_embeddings, 0.5)
    assert np.allclose(row.embedding, expected) and abs(float(np.linalg.norm(row.embedding)) - 1) < 1e-5
    only_summary = build_episode(segment, Settings(episode_summary_weight=1.0), FakeEmbedder(), carried)
    assert np.allclose(only_summary.embedding, fake_unit_vector(only_summary.summary, 384))


def test_a_vector_survives_its_trip_through_redis_exactly():
    v = fake_unit_vector("anything", 384)
    assert np.array_equal(decode_vector(encode_vector(v)), v)
