"""Crash safety of the per-conversation state: steps are fenced by the lock token, the
state version and the expected inbox front, and a drainer that dies mid-way leaves a
state that any other worker resumes from without losing or duplicating a message."""

from __future__ import annotations

import pytest
from drains import publish_drains_with
from invariants import assert_every_message_in_exactly_one_episode

from memq.shared import tasks
from memq.shared.mailbox.scripts import Scripts
from memq.worker.conversation_store import ConversationStore, InboxMoved, LockLost, StateChanged
from memq.worker.segmentation.detectors.rules_only import RulesOnlyDetector
from memq.worker.segmentation.job import drain
from memq.worker.sync import sync_with_database


def _store(producer, settings, tenant, conv, **overrides):
    s = settings.model_copy(update=overrides) if overrides else settings
    return ConversationStore(producer.redis, Scripts.register(producer.redis), s, tenant, conv)


def _queue(producer, conv, n):
    publish_drains_with(producer, lambda tenant, c: None)  # no worker involvement in these checks
    producer.add_messages(
        [{"role": "user", "content": f"message {i} of the crash test"} for i in range(n)], conversation_id=conv
    )


def _connect(settings, tenant):
    from memq.shared.connections import pg_connect

    return lambda: pg_connect(settings, tenant=tenant, autocommit=True)


def test_commit_is_fenced_by_lock_token_version_and_inbox_front(producer, settings, tenant):
    _queue(producer, "fence", 2)
    store = _store(producer, settings, tenant, "fence")
    assert store.acquire()
    snap = sync_with_database(store, store.snapshot(), _connect(settings, store.tenant))
    first, second = store.peek_inbox_raw(2)
    store_args = {"drop": 0, "segment": None, "state": snap.event, "fence": snap.fence}
    with pytest.raises(InboxMoved):
        store.commit(store.step(head_raw=second, push=None, **store_args))
    other = _store(producer, settings, tenant, "fence")
    other.token, other.version = "not-the-holder", store.version
    with pytest.raises(LockLost):
        other.commit(other.step(head_raw=first, push=None, **store_args))
    behind = store.version
    store.version = behind - 1  # as if another commit (or a restarted Redis) moved the state
    with pytest.raises(StateChanged):
        store.commit(store.step(head_raw=first, push=None, **store_args))
    store.version = behind
    assert store.peek_inbox_raw(5) == [first, second]  # nothing moved
    store.commit(store.step(head_raw=first, push=None, **store_args))
    assert store.peek_inbox_raw(5) == [second]
    store.release()


def test_a_batch_of_steps_is_committed_whole_or_not_at_all(producer, settings, tenant):
    """``commit_steps`` applies a batch's steps in one atomic script call: a batch whose
    inbox items are not the inbox's front, in order, is refused before anything is written;
    an accepted one pops them all, bumps the version once and leaves the last step's state."""
    _queue(producer, "batched", 3)
    store = _store(producer, settings, tenant, "batched")
    assert store.acquire()
    snap = sync_with_database(store, store.snapshot(), _connect(settings, store.tenant))
    first, second, third = store.peek_inbox_raw(3)
    args = {"push": None, "drop": 0, "segment": None, "fence": snap.fence}
    before = store.version
    with pytest.raises(InboxMoved):  # the front after `first` is `second`, not `third`
        store.commit_steps([store.step(head_raw=h, state=snap.event, **args) for h in (first, third, second)])
    assert store.version == before
    assert store.peek_inbox_raw(5) == [first, second, third]
    assert store.snapshot().event.to_json() == snap.event.to_json()
    last = snap.event.evolve(armed=not snap.event.armed)
    steps = [store.step(head_raw=first, state=snap.event, seq=1, **args)]
    steps += [store.step(head_raw=h, state=last, seq=n, **args) for n, h in ((2, second), (3, third))]
    store.commit_steps(steps)
    assert store.version == before + 1
    assert store.peek_inbox_raw(5) == []
    after = store.snapshot()
    assert (after.seq, after.event.armed) == (3, last.armed)


def test_a_second_drainer_cannot_take_a_held_conversation(producer, settings, tenant):
    _queue(producer, "held", 1)
    a, b = _store(producer, settings, tenant, "held"), _store(producer, settings, tenant, "held")
    assert a.acquire() and not b.acquire()
    a.release()
    assert b.acquire()
    b.release()


def test_drainer_dies_mid_conversation_and_a_worker_resumes(worker, producer, settings, tenant, db, celery_app):
    conv = "crash"
    _queue(producer, conv, 120)
    # A drainer with a 1 s lease processes 70 messages (closing one 50-message episode),
    # then "dies": no release, no episode task sent, lock left to expire.
    dying = _store(producer, settings, tenant, conv, lock_lease_seconds=1.0, drain_max_messages=70)
    assert dying.acquire()
    snap = sync_with_database(dying, dying.snapshot(), _connect(settings, dying.tenant))
    closed: list[str] = []
    outcome = drain(dying, dying.settings, RulesOnlyDetector(), None, closed.append, snap)
    assert outcome.processed == 70 and outcome.more and len(closed) == 1
    assert dying.client.hlen(dying.keys.segments) == 1  # cut, but its episode was never created

    # The producer "died" too: its messages are queued but no drain task was ever
    # published. The conversation still carries its drain mark in the shard's drains
    # index, and its segment is in the pending index: the stalled-work sweeper finds
    # both (aged here instead of waiting MEMQ_STALLED_AFTER_SECONDS) and re-publishes.
    shard = dying.shard
    producer.flush(conv)  # close the last event too once resumed (publishing is still "dead")
    assert producer.redis.zscore(shard.drains, dying.keys.member) is not None
    producer.redis.zadd(shard.drains, {dying.keys.member: 0})
    producer.redis.zadd(shard.pending, {f"{dying.keys.member}/{closed[0]}": 0})
    celery_app.send_task(tasks.SWEEP_STALLED)
    producer.wait_idle(conv, timeout=60)
    assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, conv, 120)
    assert db.execute("SELECT count(*) FROM episodic_memory WHERE tenant_id = %s", (tenant,)).fetchone()[0] == 3


def test_a_flush_is_not_lost_when_the_drain_budget_ends_with_the_inbox(producer, settings, tenant):
    """A drain whose message budget ran out exactly as the inbox emptied must leave the
    pending flush to a next drain (release says one is needed)."""
    conv = "budget-edge"
    _queue(producer, conv, 5)
    producer.flush(conv)
    store = _store(producer, settings, tenant, conv, drain_max_messages=5)
    assert store.acquire()
    snap = sync_with_database(store, store.snapshot(), _connect(settings, store.tenant))
    outcome = drain(store, store.settings, RulesOnlyDetector(), None, lambda _: None, snap)
    assert outcome.processed == 5 and not outcome.flushed and outcome.more
    assert store.release()  # so the task queues another drain, which performs the flush
    assert producer.status(conv).drain_queued
