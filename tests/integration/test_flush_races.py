"""Races between flush / inactivity collapse and new messages, at the script level
where they are decided atomically."""

from __future__ import annotations

from drains import publish_drains_with

from memq.shared.connections import pg_connect
from memq.shared.mailbox.scripts import Scripts
from memq.worker.conversation_store import ConversationStore
from memq.worker.sync import sync_with_database


def _store(producer, settings, tenant, conv):
    return ConversationStore(producer.redis, Scripts.register(producer.redis), settings, tenant, conv)


def test_a_flush_asked_for_while_a_drain_closes_is_not_erased(producer, settings, tenant):
    publish_drains_with(producer, lambda t, c: None)
    conv = "flush-race"
    producer.add_messages([{"role": "user", "content": f"message {i}"} for i in range(2)], conversation_id=conv)
    producer.flush(conv)
    store = _store(producer, settings, tenant, conv)
    assert store.acquire()
    snap = sync_with_database(store, store.snapshot(), lambda: pg_connect(settings, tenant=tenant, autocommit=True))
    seen = store.flush_requested()  # the drain decides to close the event for this request...
    producer.add_message(conv, "user", "one more message, then flush again")  # ...while a client sends
    producer.flush(conv)  # and asks for another flush
    store.commit(
        store.step(head_raw=None, push=None, drop=0, segment=None, state=snap.event, fence=snap.fence, clear_flush=seen)
    )
    assert store.flush_requested() not in (None, seen)  # the second request survives the first one's commit
    assert store.release()  # and it is work: another drain follows
    assert producer.status(conv).drain_queued


def test_collapse_never_drops_a_conversation_a_message_just_made_active(producer, settings, tenant):
    publish_drains_with(producer, lambda t, c: None)
    scripts = Scripts.register(producer.redis)
    conv = "collapse-race"
    keys = producer.keys(conv)

    def collapse():
        return scripts.request_flush(
            keys=[keys.state, keys.shard.drains, keys.inbox, keys.buffer, keys.shard.active],
            args=[keys.member, "inactivity", 3600],
        )

    # An idle entry with nothing open: the collapse removes it, atomically with the check.
    producer.redis.zadd(keys.shard.active, {keys.member: 1})
    assert collapse() == [0, 0]
    assert producer.redis.zscore(keys.shard.active, keys.member) is None
    # The scan saw it idle, then a message arrived before the collapse acted on it:
    # it stays active and is not flushed (the message just arrived).
    producer.redis.zadd(keys.shard.active, {keys.member: 1})
    producer.add_message(conv, "user", "a message that arrives during the collapse scan")
    assert collapse() == [0, 0]
    assert producer.redis.zscore(keys.shard.active, keys.member) > 1
    assert producer.status(conv).flush_requested is False
    # Truly idle with something open: flushed, once.
    producer.redis.zadd(keys.shard.active, {keys.member: 1})
    assert collapse()[1] == 1 and producer.status(conv).flush_requested
    assert collapse() == [0, 1]  # already being closed: no second request


def test_marking_a_drain_queued_is_one_step(producer, settings, tenant):
    conv = "mark-queued"
    store = _store(producer, settings, tenant, conv)
    keys = producer.keys(conv)
    assert store.mark_drain_queued() is True
    assert producer.redis.hget(keys.state, "drain") and producer.redis.zscore(keys.shard.drains, keys.member)
    assert store.mark_drain_queued() is False
