"""An episode's messages are embedded once: the vectors segmentation carried over are used
as they are, and only the summary and the messages without one are embedded."""

from __future__ import annotations

import numpy as np
from strategies import FakeEmbedder, fake_unit_vector

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
    (texts,) = embedder.calls  # one call: the summary and the two messages without a vector
    assert texts[0] == row.summary and texts[1:] == [m["content"] for m in segment["messages"][3:]]
    assert row.message_embeddings is not None and row.message_embeddings.shape == (5, 384)
    for i, m in enumerate(segment["messages"]):
        expected = carried.get(m["id"], fake_unit_vector(m["content"], 384))
        assert np.array_equal(row.message_embeddings[i], expected)


def test_without_carried_vectors_every_message_is_embedded_as_before():
    segment, embedder = _segment(4), FakeEmbedder()
    row = build_episode(segment, Settings(), embedder)
    assert embedder.calls == [[row.summary, *(m["content"] for m in segment["messages"])]]


def test_a_vector_survives_its_trip_through_redis_exactly():
    v = fake_unit_vector("anything", 384)
    assert np.array_equal(decode_vector(encode_vector(v)), v)
