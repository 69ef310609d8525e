"""A batch over several conversations that fails part-way: the producer says exactly
what happened to each message, and sending the unsettled ones again with the same ids
stores each exactly once."""

from __future__ import annotations

import pytest
import redis
from drains import publish_drains_with
from stored import stored_message_ids

from memq.shared.errors import BatchIncomplete, BatchRejected


def _batch(n_convs: int = 3, per: int = 2) -> list[dict]:
    return [
        {"conversation_id": f"part-{c}", "role": "user", "content": f"message {i} of conversation {c}"}
        for i in range(per)
        for c in range(n_convs)
    ]


def test_one_conversation_failing_does_not_hide_the_others(producer):
    publish_drains_with(producer, lambda t, c: True)
    broken = producer.keys("part-1")
    producer.redis.set(broken.ids, "not a sorted set")  # this conversation's script fails with WRONGTYPE
    batch = _batch()
    with pytest.raises(BatchIncomplete) as err:
        producer.add_messages(batch)
    statuses = [(r.conversation_id, r.status) for r in err.value.results]
    assert statuses == [("part-0", "accepted"), ("part-1", "unknown"), ("part-2", "accepted")] * 2
    retry = err.value.retry_messages(batch)
    assert [m["conversation_id"] for m in retry] == ["part-1", "part-1"] and all(m["message_id"] for m in retry)
    producer.redis.delete(broken.ids)
    assert [r.status for r in producer.add_messages(retry)] == ["accepted", "accepted"]
    # Sending the whole batch again under the same ids changes nothing.
    again = [{**m, "message_id": r.message_id} for m, r in zip(batch, err.value.results)]
    assert {r.status for r in producer.add_messages(again)} == {"duplicate"}
    assert [producer.status(f"part-{c}").accepted for c in range(3)] == [2, 2, 2]


def test_what_a_redis_crash_lost_after_accepting_is_not_called_accepted(producer):
    """Redis accepts a batch, then crashes and comes back without its last writes while
    the drain tasks are being published (they fail): the producer checks before it
    answers, so what was lost is "unknown", not "accepted", and sending it again stores it."""
    lost = producer.keys("part-1")

    def crash_while_publishing(tenant, conversation):
        if conversation == "part-1":  # Redis came back from its AOF without this conversation's last second
            producer.redis.delete(lost.inbox, lost.state, lost.ids)
            return False
        return True

    publish_drains_with(producer, crash_while_publishing)
    batch = _batch()
    with pytest.raises(BatchIncomplete) as err:
        producer.add_messages(batch)
    statuses = [(r.conversation_id, r.status) for r in err.value.results]
    assert statuses == [("part-0", "accepted"), ("part-1", "unknown"), ("part-2", "accepted")] * 2
    assert "lost by a Redis restart" in str(err.value)
    publish_drains_with(producer, lambda t, c: True)
    assert [r.status for r in producer.add_messages(err.value.retry_messages(batch))] == ["accepted", "accepted"]
    assert [producer.status(f"part-{c}").accepted for c in range(3)] == [2, 2, 2]


def test_a_stalled_publish_is_confirmed_and_changes_nothing_when_nothing_was_lost(producer, monkeypatch, settings):
    """Publishing took longer than MEMQ_PRODUCER_CONFIRM_AFTER_MS: the producer checks (one
    look-up per conversation) and, everything being there, answers as usual."""
    import time

    checked: list[int] = []
    real = producer.redis.zmscore

    def zmscore(key, members):
        checked.append(len(members))
        return real(key, members)

    monkeypatch.setattr(producer.redis, "zmscore", zmscore)

    def slow(tenant, conversation):
        time.sleep(2 * settings.producer_confirm_after_ms / 1000)
        return True

    publish_drains_with(producer, slow)
    assert {r.status for r in producer.add_messages(_batch())} == {"accepted"}
    assert checked == [2, 2, 2]
    checked.clear()
    publish_drains_with(producer, lambda t, c: True)  # a prompt publish: no look-up
    assert {r.status for r in producer.add_messages(_batch(per=1))} == {"accepted"}
    assert checked == []


def test_a_reply_lost_after_redis_applied_the_batch(producer, monkeypatch, worker, db, tenant, celery_app):
    """The connection drops after Redis ran the scripts: every result is unknown; the
    retry with the same ids reports duplicates and each message is stored once."""
    from memq.shared.mailbox import quota, scripts

    # The shards hold the tenant's quota leases already (a first batch into a shard asks for
    # one and writes nothing): the lost reply is then one of a batch Redis did apply.
    batch = _batch()
    for conv in {m["conversation_id"] for m in batch}:
        quota.lease(producer.scripts, producer.settings, tenant, producer.keys(conv).shard, 0)
    real = scripts._send  # the round trip (the thread's connection, or a pipeline on a cluster)

    def applied_then_lost(*a, **kw):
        real(*a, **kw)
        raise redis.ConnectionError("connection reset by peer")

    monkeypatch.setattr(scripts, "_send", applied_then_lost)
    with pytest.raises(BatchIncomplete) as err:
        producer.add_messages(batch)
    monkeypatch.undo()
    assert {r.status for r in err.value.results} == {"unknown"}
    retried = producer.add_messages(err.value.retry_messages(batch))
    assert {r.status for r in retried} == {"duplicate"}
    # Whether or not a drain task went out for them, their drain marks stay, and the
    # stalled-work sweeper (aged here instead of waiting) publishes them.
    from memq.shared import tasks

    for c in range(3):
        producer.flush(f"part-{c}")
        keys = producer.keys(f"part-{c}")
        producer.redis.zadd(keys.shard.drains, {keys.member: 0})
    celery_app.send_task(tasks.SWEEP_STALLED)
    for c in range(3):
        producer.wait_idle(f"part-{c}", timeout=60)
        assert len(stored_message_ids(db, tenant, f"part-{c}")) == 2


def test_reject_policy_in_a_batch_over_conversations_says_which_were_refused(producer):
    from datetime import UTC, datetime, timedelta

    publish_drains_with(producer, lambda t, c: None)
    producer.settings = producer.settings.model_copy(update={"out_of_order_policy": "reject"})
    t0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
    producer.add_message("strict-a", "user", "first", t0 + timedelta(minutes=10))
    batch = [
        {"conversation_id": "strict-b", "role": "user", "content": "fine", "timestamp": t0},
        {"conversation_id": "strict-a", "role": "user", "content": "too old", "timestamp": t0},
    ]
    with pytest.raises(BatchRejected) as err:
        producer.add_messages(batch)
    assert [(r.conversation_id, r.status) for r in err.value.results] == [
        ("strict-b", "accepted"),
        ("strict-a", "rejected"),
    ]
    assert err.value.index == 1 and err.value.field == "timestamp"
    assert producer.status("strict-a").accepted == 1 and producer.status("strict-b").accepted == 1
