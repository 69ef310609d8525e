"""The producer on a real Redis: validation before writing, duplicates, out-of-order
timestamps, one round trip per batch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from drains import publish_drains_with

from memq.shared.errors import ValidationError
from memq.shared.mailbox.codec import decode_inbox_item

T0 = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def no_drains(producer):
    """These tests inspect the inbox itself: publish no drain task for a worker to take."""
    publish_drains_with(producer, lambda tenant, conversation_id: None)


def _keys(producer, conv):
    return producer.keys(conv)


def _nothing_written(producer, conv):
    keys = _keys(producer, conv)
    return not any(producer.redis.exists(k) for k in (keys.inbox, keys.state, keys.ids, keys.buffer))


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"conversation_id": "has space", "role": "user", "content": "hello there"}, "conversation_id"),
        ({"conversation_id": "x" * 300, "role": "user", "content": "hello there"}, "conversation_id"),
        ({"conversation_id": "ok", "role": "robot", "content": "hello there"}, "role"),
        ({"conversation_id": "ok", "role": "user", "content": "   "}, "content"),
        ({"conversation_id": "ok", "role": "user", "content": "x" * 100_001}, "content"),
        ({"conversation_id": "ok", "role": "user", "content": "nul\x00byte"}, "content"),
        ({"conversation_id": "ok", "role": "user", "content": "hi", "timestamp": "2026-02-01T12:00:00"}, "timestamp"),
        ({"conversation_id": "ok", "role": "user", "content": "hi", "timestamp": "yesterday"}, "timestamp"),
        ({"conversation_id": "ok", "role": "user", "content": "hi", "timestamp": datetime(2026, 2, 1)}, "timestamp"),
        ({"conversation_id": "ok", "role": "user", "content": "hi", "metadata": ["not", "a", "dict"]}, "metadata"),
        ({"conversation_id": "ok", "role": "user", "content": "hi", "message_id": "with space"}, "message_id"),
        ({"conversation_id": "ok", "role": "user", "content": "hi", "colour": "blue"}, None),
    ],
)
def test_bad_input_is_rejected_with_a_clear_error_and_nothing_is_written(producer, bad, field):
    good = {"conversation_id": "ok", "role": "user", "content": "a good message before the bad one"}
    with pytest.raises(ValidationError) as err:
        producer.add_messages([good, bad])
    assert err.value.index == 1
    assert err.value.field == field
    assert str(err.value).startswith("message #1: ")
    assert _nothing_written(producer, "ok")


def test_a_message_id_sent_twice_is_accepted_once(producer):
    first = producer.add_message("dup", "user", "hello, remember this", T0, message_id="m-1")
    again = producer.add_message("dup", "user", "hello, remember this", T0, message_id="m-1")
    batch = producer.add_messages(
        [
            {"role": "user", "content": "second", "timestamp": T0 + timedelta(seconds=5), "message_id": "m-2"},
            {"role": "user", "content": "second", "timestamp": T0 + timedelta(seconds=5), "message_id": "m-2"},
        ],
        conversation_id="dup",
    )
    assert first.status == "accepted" and again.status == "duplicate"
    assert [r.status for r in batch] == ["accepted", "duplicate"]
    assert producer.redis.llen(_keys(producer, "dup").inbox) == 2


def test_older_timestamp_is_clamped_keeping_arrival_order_and_the_original(producer):
    producer.add_message("late", "user", "first message", T0 + timedelta(minutes=10))
    late = producer.add_message("late", "user", "sent earlier, arrived later", T0)
    assert late.status == "clamped"
    items = [decode_inbox_item(i) for i in producer.redis.lrange(_keys(producer, "late").inbox, 0, -1)]
    assert [m.content for m in items] == ["first message", "sent earlier, arrived later"]
    assert items[1].timestamp == T0 + timedelta(minutes=10)  # used for segmentation
    assert items[1].sent_at == T0  # kept, and stored on the episode as sent_at
    assert items[1].to_record()["sent_at"] == T0.isoformat()


def test_reject_policy_refuses_an_older_timestamp_and_writes_nothing_of_the_batch(producer):
    producer.settings = producer.settings.model_copy(update={"out_of_order_policy": "reject"})
    producer.add_message("strict", "user", "first message", T0 + timedelta(minutes=10))
    with pytest.raises(ValidationError, match="older than conversation 'strict'"):
        producer.add_messages(
            [
                {"role": "user", "content": "fine", "timestamp": T0 + timedelta(minutes=11)},
                {"role": "user", "content": "too old", "timestamp": T0},
            ],
            conversation_id="strict",
        )
    assert producer.redis.llen(_keys(producer, "strict").inbox) == 1


def test_a_future_timestamp_beyond_clock_skew_is_refused(producer):
    with pytest.raises(ValidationError, match="in the future"):
        producer.add_message("future", "user", "from the future", datetime.now(UTC) + timedelta(hours=1))
    assert _nothing_written(producer, "future")


def test_a_batch_costs_one_round_trip_and_queues_at_most_one_drain(producer, monkeypatch):
    """Once the tenant's shards hold their leases of its quotas (the first batch of a day
    into a shard gets one: tests/integration/test_quotas.py)."""
    from memq.shared.mailbox import quota, scripts

    for conv in ("c0", "c1", "c2"):
        quota.lease(producer.scripts, producer.settings, producer.settings.tenant, producer.keys(conv).shard, 0)
    calls = []
    real_send = scripts._send

    def counting_send(client, script, queued):
        calls.append(len(queued))  # script calls sent in this round trip
        return real_send(client, script, queued)

    published = []
    monkeypatch.setattr(scripts, "_send", counting_send)
    publish_drains_with(producer, lambda tenant, conv: published.append(conv))
    results = producer.add_messages(
        [{"conversation_id": f"c{i % 3}", "role": "user", "content": f"message {i}"} for i in range(30)]
    )
    assert calls == [3]  # one round trip, one script call per conversation
    assert [r.conversation_id for r in results[:6]] == ["c0", "c1", "c2"] * 2
    assert all(r.status == "accepted" for r in results)
    assert sorted(published) == ["c0", "c1", "c2"]
    producer.add_messages([{"conversation_id": "c0", "role": "user", "content": "more"}])
    assert sorted(published) == ["c0", "c1", "c2"]  # a drain is already queued for c0


def test_a_batch_sends_no_script_check_and_survives_a_flushed_script_cache(producer):
    """The enqueue goes as EVALSHA without redis-py's SCRIPT EXISTS round trip; a Redis
    that lost its scripts (restart, SCRIPT FLUSH) answers NOSCRIPT, and the producer loads
    the script and sends exactly those calls again: each message stored once."""
    redis = producer.redis

    def script_calls() -> int:
        stats = redis.info("commandstats")
        if isinstance(next(iter(stats.values()), None), dict) and "calls" not in next(iter(stats.values())):
            stats = {k: v for node in stats.values() for k, v in node.items()}  # a cluster: per node
        return sum(int(v["calls"]) for k, v in stats.items() if k == "cmdstat_script")

    before = script_calls()
    producer.add_messages([{"conversation_id": f"s{i % 2}", "role": "user", "content": f"m {i}"} for i in range(6)])
    assert script_calls() == before  # no SCRIPT EXISTS / LOAD on the way

    redis.script_flush()
    results = producer.add_messages(
        [
            {"conversation_id": f"s{i % 2}", "role": "user", "content": f"after {i}", "message_id": f"a{i}"}
            for i in range(6)
        ]
    )
    assert [r.status for r in results] == ["accepted"] * 6
    assert [producer.status(f"s{c}").accepted for c in range(2)] == [6, 6]  # 3 + 3 each, none twice


def test_a_large_batch_is_deduplicated_like_a_small_one(producer):
    """A batch of 32 or more keeps its id set as a skiplist (enqueue.lua's marker member):
    duplicates within the batch, across batches and with earlier small batches are found the
    same way, and the marker is never taken for a message."""
    conv = "large-batch"
    keys = _keys(producer, conv)
    small = producer.add_messages(
        [{"role": "user", "content": "small one", "message_id": "s-0", "timestamp": T0}], conversation_id=conv
    )
    assert [r.status for r in small] == ["accepted"]
    batch = [
        {"role": "user", "content": f"message {i}", "message_id": f"m-{i}", "timestamp": T0 + timedelta(seconds=i)}
        for i in range(40)
    ]
    batch[5]["message_id"] = "s-0"  # sent before
    batch[7]["message_id"] = "m-6"  # twice in this batch
    first = producer.add_messages(batch, conversation_id=conv)
    statuses = [r.status for r in first]
    assert statuses[5] == "duplicate" and statuses[7] == "duplicate"
    assert statuses.count("accepted") == 38
    assert producer.redis.object("encoding", keys.ids) in ("skiplist", b"skiplist")
    again = producer.add_messages(batch, conversation_id=conv)
    assert {r.status for r in again} == {"duplicate"}
    ids = {m.id for m in map(decode_inbox_item, producer.redis.lrange(keys.inbox, 0, -1))}
    assert ids == {"s-0"} | {f"m-{i}" for i in range(40) if i not in (5, 7)}
