"""Each message is embedded once on its way to an episode: segmentation's vector is kept in
Redis for episode creation (whichever worker runs it) and deleted once the episode is
stored; the stored message vectors are the ones segmentation computed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.integration
SAMPLE = Path(__file__).resolve().parents[2] / "producer" / "samples" / "demo_conversation.jsonl"


def test_every_message_is_embedded_once_and_nothing_is_left_in_redis(worker, producer, db, settings, monkeypatch):
    from memq.worker import resources

    model = resources.embedder()
    real = model.embed
    embedded: Counter[str] = Counter()

    def counting(texts):
        texts = list(texts)
        embedded.update(texts)
        return real(texts)

    monkeypatch.setattr(model, "embed", counting)
    conv = "carried"
    messages = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:60] if line.strip()]
    producer.add_messages([{**m, "conversation_id": conv} for m in messages])
    producer.flush(conv)
    producer.wait_idle(conv, timeout=120)

    contents = [m["content"] for m in messages]
    assert all(embedded[c] == contents.count(c) for c in contents), [c for c in contents if embedded[c] != 1][:3]
    assert not producer.redis.exists(producer.keys(conv).vectors)  # deleted with the episodes' segments

    stored = db.execute(
        "SELECT m.content, m.embedding FROM episode_message m WHERE m.tenant_id = %s AND m.conversation_id = %s "
        "ORDER BY m.seq",
        (producer.settings.tenant, conv),
    ).fetchall()
    assert [c for c, _ in stored] == contents
    for content, vector in stored:  # the model's vector of the content (segmentation's, carried)
        assert np.allclose(
            np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector), real([content])[0], atol=1e-5
        )
