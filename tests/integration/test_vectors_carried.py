"""Each message is embedded once on its way to an episode: segmentation's vector is kept in
Redis for episode creation (whichever worker runs it) and deleted once the episode is
stored; the stored message vectors are the ones segmentation computed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from waiting import wait_until

pytestmark = pytest.mark.integration
SAMPLE = Path(__file__).resolve().parents[2] / "producer" / "samples" / "demo_conversation.jsonl"


@pytest.fixture
def embedded(monkeypatch) -> Counter[str]:
    """Every text the in-process worker's model embeds, counted."""
    from memq.worker import resources

    model = resources.embedder()
    real = model.embed
    seen: Counter[str] = Counter()

    def counting(texts):
        texts = list(texts)
        seen.update(texts)
        return real(texts)

    monkeypatch.setattr(model, "embed", counting)
    return seen


def test_every_message_is_embedded_once_and_nothing_is_left_in_redis(worker, producer, db, settings, embedded):
    from memq.worker import resources

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
    model = resources.embedder()  # (counted from here on: the counts were checked above)
    for content, vector in stored:  # the model's vector of the content (segmentation's, carried)
        carried = np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector)
        # to within the model's arithmetic: bfloat16, where the CPU has it, rounds a text a
        # little differently in another pass' company (another text's vector is far below)
        assert float(np.dot(carried, model.embed([content])[0])) > 0.999


def test_a_look_ahead_message_is_not_embedded_again_by_the_drain_that_decides_it(worker, producer, embedded):
    """Live traffic: a drain per message. A message the detector's look-ahead holds back
    was embedded by the drain that first saw it; the next drains read its vector from
    Redis (they used to embed it again, up to look-ahead + 1 times in all)."""
    conv = "trickle"
    messages = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:12] if line.strip()]
    for m in messages:
        producer.add_messages([{**m, "conversation_id": conv}])
        # its drain ran (look-ahead messages stay queued)
        wait_until(lambda: not producer.status(conv).drain_queued, 60, interval=0.05, message="no drain ran")
    producer.flush(conv)
    producer.wait_idle(conv, timeout=120)
    contents = [m["content"] for m in messages]
    assert {c: embedded[c] for c in contents} == {c: contents.count(c) for c in contents}
