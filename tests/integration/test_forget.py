"""Forgetting a conversation (``shared/forget.py``) leaves nothing, waits for a drain that
holds the conversation, and work in flight cannot write the forgotten messages back:
not into the empty conversation, nor into a new conversation under the same id."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
from invariants import traces
from stored import stored_message_ids
from test_redis_rewind import _connect, _messages, _no_publish, embedder  # noqa: F401 - embedder is a fixture

from memq.shared.db.episodes import StaleSegment, check_stored, store_episode
from memq.shared.errors import Busy
from memq.shared.forget import forget_conversation
from memq.shared.mailbox.scripts import Scripts
from memq.shared.mailbox.segment import Segment
from memq.worker.conversation_store import ConversationStore
from memq.worker.episodes.builder import build_episode
from memq.worker.episodes.job import create_episode
from memq.worker.segmentation.detectors.rules_only import RulesOnlyDetector
from memq.worker.segmentation.job import drain
from memq.worker.sync import sync_with_database

pytestmark = pytest.mark.integration


def _traces(db, producer, tenant, conv):
    return traces(db, producer.redis, tenant, conv)


def _cut(producer, settings, tenant, conv) -> tuple[ConversationStore, list[str]]:
    """Drain the conversation by hand up to closed segments (as a worker would), without
    creating their episodes."""
    store = ConversationStore(producer.redis, Scripts.register(producer.redis), settings, tenant, conv)
    assert store.acquire()
    snap = sync_with_database(store, store.snapshot(), _connect(settings, tenant))
    closed: list[str] = []
    drain(store, settings, RulesOnlyDetector(), None, closed.append, snap)
    store.release()
    return store, closed


def _write_late(db, settings, embedder, tenant, conv, segment) -> None:  # noqa: F811 - the fixture's value, passed on
    """What an episode creation that read ``segment`` before the forget does afterwards."""
    row = build_episode(replace(segment, id="00000000-0000-4000-8000-000000000001"), settings, embedder)
    store_episode(
        db,
        tenant=tenant,
        conversation_id=conv,
        fence=segment.fence,
        messages=segment.messages,
        expected=check_stored(db, tenant, conv, segment.messages),
        row=row,
    )


def test_an_episode_creation_in_flight_cannot_bring_a_forgotten_conversation_back(
    producer,
    db,
    settings,
    tenant,
    embedder,  # noqa: F811 - the fixture imported above
):
    conv = "forget-in-flight"
    keys = producer.keys(conv)
    _no_publish(producer)
    producer.add_messages(_messages("a", 4), conversation_id=conv)
    producer.flush(conv)
    _, closed = _cut(producer, settings, tenant, conv)
    in_flight = Segment.decode(producer.redis.hget(keys.segments, closed[0]))  # an episode task has read it...

    done = forget_conversation(producer.redis, db, keys)  # ...and the conversation is forgotten
    assert done.redis_keys > 0 and _traces(db, producer, tenant, conv) == []

    with pytest.raises(StaleSegment):
        _write_late(db, settings, embedder, tenant, conv, in_flight)
    assert _traces(db, producer, tenant, conv) == []  # not even the conversation row came back

    # the same id, started again: a new conversation with fences never handed out before
    producer.add_messages(_messages("b", 3), conversation_id=conv)
    producer.flush(conv)
    store, recut = _cut(producer, settings, tenant, conv)
    assert Segment.decode(producer.redis.hget(keys.segments, recut[0])).fence != in_flight.fence
    with pytest.raises(StaleSegment):
        _write_late(db, settings, embedder, tenant, conv, in_flight)
    assert create_episode(store, db, recut[0], settings, embedder).status == "created"
    assert stored_message_ids(db, tenant, conv) == ["b1", "b2", "b3"]


def test_forget_waits_for_the_drain_holding_the_conversation(producer, db, settings, tenant):
    conv = "forget-waits"
    keys = producer.keys(conv)
    _no_publish(producer)
    producer.add_messages(_messages("c", 2), conversation_id=conv)
    producer.redis.set(keys.lock, "a-drain", px=60_000)  # a worker is draining it

    with pytest.raises(Busy):
        forget_conversation(producer.redis, db, keys, wait_seconds=0.3)
    assert producer.status(conv).inbox == 2  # nothing was deleted

    result: dict = {}

    def forget() -> None:
        started = time.monotonic()
        result["done"] = forget_conversation(producer.redis, db, keys, wait_seconds=20)
        result["waited"] = time.monotonic() - started

    thread = threading.Thread(target=forget)
    thread.start()
    time.sleep(0.5)
    assert "done" not in result and producer.status(conv).inbox == 2
    producer.redis.delete(keys.lock)  # the drain ends
    thread.join(20)
    assert result["waited"] >= 0.5 and result["done"].existed
    assert _traces(db, producer, tenant, conv) == []
