"""Crash safety of the per-conversation state: steps are fenced by the lock token and
the expected inbox front, and a drainer that dies mid-way leaves a state that any
other worker resumes from without losing or duplicating a message."""

from __future__ import annotations

import pytest
from invariants import assert_every_message_in_exactly_one_episode

from shared import tasks
from shared.mailbox.scripts import Scripts
from worker.conversation_store import ConversationStore, InboxMoved, LockLost
from worker.drain import drain
from worker.segmentation.detectors.rules_only import RulesOnlyDetector


def _store(producer, settings, tenant, conv, **overrides):
    s = settings.model_copy(update=overrides) if overrides else settings
    return ConversationStore(producer.redis, Scripts.register(producer.redis), s, tenant, conv)


def _queue(producer, conv, n):
    producer._publish_drain = lambda tenant, c: None  # no worker involvement in these checks
    producer.add_messages([{"role": "user", "content": f"message {i} of the crash test"} for i in range(n)], conversation_id=conv)


def test_commit_is_fenced_by_lock_token_and_inbox_front(producer, settings, tenant):
    _queue(producer, "fence", 2)
    store = _store(producer, settings, tenant, "fence")
    assert store.acquire()
    first, second = store.peek_inbox(2)
    _, state, _ = store.load()
    with pytest.raises(InboxMoved):
        store.commit(head=second, drop=0, push=second, segment=None, state=state)
    other = _store(producer, settings, tenant, "fence")
    other.token = "not-the-holder"
    with pytest.raises(LockLost):
        other.commit(head=first, drop=0, push=first, segment=None, state=state)
    assert [m.seq for m in store.peek_inbox(5)] == [1, 2]  # nothing moved
    store.commit(head=first, drop=0, push=first, segment=None, state=state)
    assert [m.seq for m in store.peek_inbox(5)] == [2]
    assert store.release()


def test_a_second_drainer_cannot_take_a_held_conversation(producer, settings, tenant):
    _queue(producer, "held", 1)
    a, b = _store(producer, settings, tenant, "held"), _store(producer, settings, tenant, "held")
    assert a.acquire() and not b.acquire()
    assert a.release() and b.acquire()
    assert b.release()


def test_drainer_dies_mid_conversation_and_a_worker_resumes(worker, producer, settings, tenant, db, celery_app):
    conv = "crash"
    _queue(producer, conv, 120)
    # A drainer with a 1 s lease processes 70 messages (closing one 50-message episode),
    # then "dies": no release, no episode task sent, lock left to expire.
    dying = _store(producer, settings, tenant, conv, lock_lease_seconds=1.0, drain_max_messages=70)
    assert dying.acquire()
    closed = []
    outcome = drain(dying, dying.settings, RulesOnlyDetector(), None, closed.append)
    assert outcome.processed == 70 and outcome.more and len(closed) == 1
    assert dying.client.hlen(dying.keys.segments) == 1  # cut, but its episode was never created

    # The producer "died" too: its messages are queued but no drain task was ever
    # published. The stalled-work sweeper finds the old drain mark and the orphaned
    # segment (aged here instead of waiting MEMQ_STALLED_AFTER_SECONDS) and re-publishes.
    g = dying.globals
    producer.flush(conv)  # close the last event too once resumed (publishing is still "dead")
    producer.redis.zadd(g.drains, {dying.keys.member: 0})
    producer.redis.zadd(g.pending, {f"{dying.keys.member}/{closed[0]}": 0})
    celery_app.send_task(tasks.SWEEP_STALLED)
    producer.wait_idle(conv, timeout=60)
    assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, conv, 120)
    assert db.execute("SELECT count(*) FROM episodic_memory WHERE tenant_id = %s", (tenant,)).fetchone()[0] == 3


def test_a_flush_is_not_lost_when_the_drain_budget_ends_with_the_inbox(producer, settings, tenant):
    """Regression: a drain whose message budget ran out exactly as the inbox emptied
    returned without acting on a pending flush and without asking for another drain."""
    conv = "budget-edge"
    _queue(producer, conv, 5)
    producer.flush(conv)
    store = _store(producer, settings, tenant, conv, drain_max_messages=5)
    assert store.acquire()
    outcome = drain(store, store.settings, RulesOnlyDetector(), None, lambda _: None)
    store.release()
    assert outcome.processed == 5 and not outcome.flushed
    assert outcome.more  # so the task queues another drain, which performs the flush
