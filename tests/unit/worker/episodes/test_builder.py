"""An episode's messages are embedded once: the vectors segmentation carried over are used
as they are, and only the messages without one are embedded. An extractive summary quotes
the messages and is not embedded again: the episode's vector is its messages' mean (an
LLM's summary is blended in: tests/integration/test_llm_summaries.py)."""

from __future__ import annotations

import numpy as np
import pytest
from strategies import FakeEmbedder, fake_unit_vector

from memq.shared.embeddings import episode_vector, summary_is_embedded
from memq.shared.mailbox.segment import Segment
from memq.shared.settings import Settings
from memq.shared.vector_codec import decode_vector, encode_vector
from memq.worker.episodes.builder import build_episode


def _segment(n: int) -> Segment:
    return Segment(
        id="00000000-0000-4000-8000-000000000007",
        tenant="t1",
        conversation_id="c1",
        reason="flush",
        surprise=0.2,
        messages=[
            {
                "id": f"m{i}",
                "seq": i + 1,
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"message {i} about the train to Hamburg and seat {i}",
                "timestamp": f"2026-03-01T08:{i:02d}:00+00:00",
            }
            for i in range(n)
        ],
        overlap=[],
        detector="rules",
        source="rules",
        token_count=0,
    )


def test_carried_vectors_are_used_and_only_the_rest_is_embedded():
    segment, embedder = _segment(5), FakeEmbedder()
    carried = {m["id"]: fake_unit_vector("carried " + m["id"], 384) for m in segment.messages[:3]}
    row = build_episode(segment, Settings(), embedder, carried)
    # the two messages without a vector (the extractive title and summary weigh messages by
    # their vectors), and nothing else
    assert embedder.calls == [[m["content"] for m in segment.messages[3:]]]
    assert row.message_embeddings is not None and row.message_embeddings.shape == (5, 384)
    for i, m in enumerate(segment.messages):
        expected = carried.get(m["id"], fake_unit_vector(m["content"], 384))
        assert np.array_equal(row.message_embeddings[i], expected)


def test_without_carried_vectors_every_message_is_embedded_as_before():
    segment, embedder = _segment(4), FakeEmbedder()
    row = build_episode(segment, Settings(), embedder)
    assert row.summary_source == "extractive"  # quotes the messages: not embedded again
    assert embedder.calls == [[m["content"] for m in segment.messages]]


def test_an_extractive_episodes_vector_is_its_messages_mean():
    segment = _segment(4)
    carried = {m["id"]: fake_unit_vector(m["content"], 384) for m in segment.messages}
    row = build_episode(segment, Settings(episode_summary_weight=0.5), FakeEmbedder(), carried)
    assert row.summary_source == "extractive" and row.message_embeddings is not None
    mean = row.message_embeddings.mean(axis=0)
    assert np.allclose(row.embedding, mean / np.linalg.norm(mean), atol=1e-6)


def test_the_episode_vector_blends_a_summary_with_the_messages_mean():
    messages = np.stack([fake_unit_vector(f"m{i}", 384) for i in range(3)])
    summary = fake_unit_vector("a summary in new words", 384)
    mean = messages.mean(axis=0) / np.linalg.norm(messages.mean(axis=0))
    half = episode_vector(summary, messages, 0.5)
    assert np.allclose(half, (0.5 * summary + 0.5 * mean) / np.linalg.norm(0.5 * summary + 0.5 * mean), atol=1e-6)
    assert np.allclose(episode_vector(summary, messages, 1.0), summary, atol=1e-6)
    assert np.allclose(episode_vector(summary, messages, 0.0), mean, atol=1e-6)
    assert np.allclose(episode_vector(None, messages, 0.5), mean, atol=1e-6)
    assert np.allclose(episode_vector(summary, None, 0.5), summary, atol=1e-6)
    with pytest.raises(ValueError, match="needs"):
        episode_vector(None, None, 0.5)


def test_only_an_llms_summary_is_embedded():
    assert summary_is_embedded("llm", 3) and not summary_is_embedded("extractive", 3)
    assert summary_is_embedded("extractive", 0)  # no messages: the summary is all there is


def test_a_vector_survives_its_trip_through_redis_exactly():
    v = fake_unit_vector("anything", 384)
    assert np.array_equal(decode_vector(encode_vector(v)), v)
