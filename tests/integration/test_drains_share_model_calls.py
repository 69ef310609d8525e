"""A drain embeds other conversations' waiting inbox fronts in its own model call
(``memq.worker.segmentation.co_embedding``): their vectors are the model's, written only
while their exact items are still at the inbox front, never for a conversation a worker
holds, never twice, and their own drains use them instead of calling the model again.

Runs on a key prefix of its own, so that the shards' drains indexes hold only this test's
conversations."""

from __future__ import annotations

import hashlib
import uuid

import numpy as np
import pytest
from drains import publish_drains_with

from memq.shared.mailbox.scripts import Scripts
from memq.shared.vector_codec import decode_vector
from memq.worker import inbox_fronts
from memq.worker.conversation_store import FRONT_MARK, ConversationStore
from memq.worker.segmentation import co_embedding
from memq.worker.segmentation.job import drain
from memq.worker.sync import sync_with_database

pytestmark = pytest.mark.integration


class Counting:
    """The real model, recording every batch it is given."""

    def __init__(self, model):
        self.model, self.calls = model, []
        self.dim, self.name = model.dim, model.name

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.model.embed(texts)

    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]


@pytest.fixture
def isolated(settings, tenant, monkeypatch):
    from memq.producer.client import Producer

    monkeypatch.setattr(co_embedding, "SHARDS_SCANNED", settings.redis_shards)  # find every waiting one
    s = settings.model_copy(update={"tenant": tenant, "key_prefix": f"co{uuid.uuid4().hex[:8]}"})
    producer = Producer(s)
    publish_drains_with(producer, lambda tenant, conv: True)  # the test runs the drains
    yield producer
    for key in producer.redis.scan_iter(f"{s.key_prefix}:*"):
        producer.redis.delete(key)


def _queue(producer, conv: str, texts: list[str]) -> None:
    producer.add_messages([{"role": "user", "content": t} for t in texts], conversation_id=conv)


def _store(producer, conv: str) -> ConversationStore:
    return ConversationStore(
        producer.redis, Scripts.register(producer.redis), producer.settings, producer.settings.tenant, conv
    )


def _waiting(producer, scripts: Scripts, *, window: int, budget: int) -> list[inbox_fronts.Front]:
    """What a drain of no conversation of this test would take (and claim) of the waiting fronts."""
    return inbox_fronts.waiting(
        producer.redis,
        scripts,
        producer.settings,
        "nobody/none",
        shards=producer.settings.redis_shards,
        conversations=4,
        window=window,
        budget=budget,
        ttl_ms=60_000,
    )


def _drain(producer, conv: str, model: Counting) -> None:
    from memq.shared.connections import pg_connect
    from memq.worker import resources

    store = _store(producer, conv)
    assert store.acquire()
    snap = sync_with_database(
        store, store.snapshot(), lambda: pg_connect(store.settings, tenant=store.tenant, autocommit=True)
    )
    drain(store, store.settings, resources.detector(), lambda: model, lambda _: None, snap)
    store.release()


RIDER = [f"the rider's message number {i} is about the garden and its tomatoes" for i in range(6)]
DRIVER = ["the driver talks about a trip to Lisbon", "and about the tram up the hill", "then the food"]


def test_a_drain_embeds_waiting_fronts_and_their_drains_use_them(isolated):
    from memq.worker import resources

    model = Counting(resources.embedder())
    _queue(isolated, "rider", RIDER)
    _queue(isolated, "held", ["a conversation a worker holds right now"])
    assert _store(isolated, "held").acquire()
    _queue(isolated, "driver", DRIVER)

    _drain(isolated, "driver", model)
    assert len(model.calls) == 1  # its own messages and the rider's front, in one call
    assert set(model.texts()) == set(DRIVER) | set(RIDER)  # the held conversation's front is left to its worker

    rider = _store(isolated, "rider")
    items = rider.peek_inbox_raw(10)
    ids = [f"{i}" for i in range(len(items))]
    kept = rider.client.hgetall(rider.keys.vectors)
    assert kept[FRONT_MARK] == hashlib.sha1(items[-1].encode()).hexdigest()
    stored = {k: decode_vector(v) for k, v in kept.items() if k != FRONT_MARK}
    assert len(stored) == len(RIDER) == len(ids)
    from memq.shared.mailbox.codec import decode_inbox_item

    for raw in items:
        message = decode_inbox_item(raw)
        # the model's vector of it (to within its arithmetic: bfloat16 rounds a text a little
        # differently in another pass' company)
        assert float(np.dot(stored[message.id], model.model.embed([message.content])[0])) > 0.999

    # Its front is embedded: another drain does not take it again, and its own drain
    # calls the model for none of its messages.
    model.calls.clear()
    _queue(isolated, "other", ["a third conversation's only message"])
    isolated.flush("other")  # decided now, without waiting for the look-ahead
    _drain(isolated, "other", model)
    assert model.texts() == ["a third conversation's only message"]
    model.calls.clear()
    isolated.flush("rider")
    _drain(isolated, "rider", model)
    assert not set(model.texts()) & set(RIDER)
    assert not _store(isolated, "rider").peek_inbox_raw(1)  # all of it segmented


def test_vectors_are_written_only_for_items_still_at_the_inbox_front(isolated):
    from memq.worker import resources

    model = resources.embedder()
    _queue(isolated, "gone", ["a message about to be forgotten", "and another"])
    store = _store(isolated, "gone")
    scripts = Scripts.register(isolated.redis)
    (front,) = _waiting(isolated, scripts, window=8, budget=8)
    chosen = co_embedding.take([front], 8)
    vectors = model.embed([m.content for _, items in chosen for _, m in items])
    triples = [(raw, m.id, vectors[i]) for i, (raw, m) in enumerate(chosen[0][1])]

    isolated.redis.delete(*store.keys.all())  # forgotten (or drained) between the read and the write
    assert inbox_fronts.remember(isolated.redis, scripts, 60_000, 8, [(front.keys, triples)]) == 0
    assert not isolated.redis.exists(store.keys.vectors)  # nothing of it comes back

    _queue(isolated, "gone", ["a message about to be forgotten"])  # the same text, queued anew: another item
    assert inbox_fronts.remember(isolated.redis, scripts, 60_000, 8, [(front.keys, triples)]) == 0
    assert not isolated.redis.exists(store.keys.vectors)


def test_drains_looking_at_once_never_take_the_same_items(isolated):
    """Each item is claimed as it is read: a second drain looking before the first one's
    vectors are written takes the items after the first one's share, and none twice."""
    texts = [f"message {i} of a long waiting front" for i in range(10)]
    _queue(isolated, "waiting", texts)
    scripts = Scripts.register(isolated.redis)

    def look(budget: int) -> list[str]:
        return [raw for front in _waiting(isolated, scripts, window=16, budget=budget) for raw in front.raws]

    first, second, third = look(4), look(4), look(4)
    items = _store(isolated, "waiting").peek_inbox_raw(16)
    assert first == items[:4] and second == items[4:8] and third == items[8:10]
    assert look(4) == []  # all of it claimed
    ttl = isolated.redis.pttl(_store(isolated, "waiting").keys.vectors)
    assert 0 < ttl <= 60_000  # the claim expires with the vectors hash


OWNER = [f"the owner's message {i} about the harbour and its boats" for i in range(6)]


def _claim_front(producer, conv: str, count: int) -> list[tuple[str, str, np.ndarray]]:
    """Another drain's look: the first ``count`` items of ``conv`` taken (claimed), their
    (item, message id, vector) triples computed but not yet written."""
    from memq.shared.mailbox.codec import decode_inbox_item
    from memq.worker import resources

    (front,) = _waiting(producer, Scripts.register(producer.redis), window=16, budget=count)
    messages = [decode_inbox_item(raw) for raw in front.raws]
    vectors = resources.embedder().embed([m.content for m in messages])
    return [(raw, m.id, vectors[i]) for i, (raw, m) in enumerate(zip(front.raws, messages, strict=True))]


def test_a_drain_embeds_the_items_another_drain_took_last_and_uses_their_vectors(isolated):
    from memq.worker import resources

    _queue(isolated, "owner", OWNER)
    isolated.flush("owner")
    triples = _claim_front(isolated, "owner", 3)
    keys = _store(isolated, "owner").keys
    scripts = Scripts.register(isolated.redis)

    class RiderLands(Counting):
        """The riding drain's vectors land while the owner embeds its other messages."""

        def embed(self, texts):
            if not self.calls:
                assert inbox_fronts.remember(isolated.redis, scripts, 60_000, 16, [(keys, triples)]) == 3
            return super().embed(texts)

    model = RiderLands(resources.embedder())
    _drain(isolated, "owner", model)
    assert sorted(model.texts()) == sorted(OWNER[3:])  # the taken three: the rider's vectors, not the model
    assert not _store(isolated, "owner").peek_inbox_raw(1)  # all of it segmented


def test_a_drain_embeds_taken_items_itself_when_their_vectors_never_come(isolated):
    from memq.worker import resources

    _queue(isolated, "owner", OWNER)
    isolated.flush("owner")
    _claim_front(isolated, "owner", 3)  # the riding drain fails before writing anything
    model = Counting(resources.embedder())
    _drain(isolated, "owner", model)
    assert sorted(model.texts()) == sorted(OWNER)  # each once
    assert model.calls[0] == OWNER[3:]  # its own first, the taken ones after a second look
    assert not _store(isolated, "owner").peek_inbox_raw(1)
