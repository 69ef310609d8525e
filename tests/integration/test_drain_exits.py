"""Every way out of a drain leaves the conversation findable: its "drain queued" mark
and its entry in the shard's drains index stay until no work remains, and a follow-up
drain is published whenever nobody else holds the conversation.

The task body runs in this process (``event_segmentation.run``) with a fault injected
into the detector; publishing is captured instead of sent. Before the fix, a drain
cleared the mark when it started, so each of these exits left messages that no task
and no sweep would look at.
"""

from __future__ import annotations

import time

import pytest
import redis
from billiard.exceptions import SoftTimeLimitExceeded
from drains import publish_drains_with

from memq.shared.mailbox.scripts import Scripts
from memq.worker import resources
from memq.worker.conversation_store import ConversationStore
from memq.worker.segmentation.detectors.rules_only import RulesOnlyDetector
from memq.worker.segmentation.job import drain
from memq.worker.sync import sync_with_database

# memq.worker.tasks.* import the Celery app, which reads the settings when imported: import
# them inside fixtures, after tests/integration/conftest.py has set the test services.


class FaultyDetector(RulesOnlyDetector):
    """Runs a fault when it meets a given message, whether the rule layer asks it to
    decide (check) or only to take the message in (observe)."""

    def __init__(self, trigger: str, fault):
        super().__init__()
        self.trigger, self.fault = trigger, fault

    def check(self, data):
        if self.trigger in data.new.content:
            self.fault(data.new)
        return super().check(data)

    def observe(self, message, embedding, state):
        if self.trigger in message.content:
            self.fault(message)
        return super().observe(message, embedding, state)


@pytest.fixture
def published(monkeypatch, service_env):
    from memq.shared import publisher

    sent: list[tuple] = []
    monkeypatch.setattr(
        publisher, "drain", lambda app, tenant, conv, countdown=0.0, attempt=0: sent.append(("drain", conv, countdown))
    )
    monkeypatch.setattr(
        publisher, "episode", lambda app, tenant, conv, eid, countdown=0.0, attempt=0: sent.append(("episode", conv))
    )
    return sent


@pytest.fixture
def run_with(monkeypatch, producer):
    publish_drains_with(producer, lambda tenant, conv: None)

    def run(conv: str, fault, trigger: str = "FAULT"):
        producer.add_messages(
            [{"role": "user", "content": f"message {i} {'FAULT' if i == 2 else ''}"} for i in range(4)],
            conversation_id=conv,
        )
        monkeypatch.setattr(resources, "detector", lambda: FaultyDetector(trigger, fault))
        from memq.worker.tasks.segmentation import event_segmentation

        return event_segmentation.run(producer.settings.tenant, conv)

    return run


def assert_findable(producer, conv):
    keys = producer.keys(conv)
    status = producer.status(conv)
    assert status.inbox > 0 and status.drain_queued, status
    assert producer.redis.zscore(keys.shard.drains, keys.member) is not None, (
        "not in the drains index: the sweeper cannot see it"
    )


def test_a_transient_error_requeues_with_backoff(run_with, producer, published):
    def fault(_):
        raise redis.ConnectionError("Redis went away")

    result = run_with("exit-transient", fault)
    assert result["status"] == "failed"
    assert_findable(producer, "exit-transient")
    assert [p[:2] for p in published] == [("drain", "exit-transient")] and published[0][2] > 0


def test_a_message_that_fails_is_counted_and_the_drain_requeued(run_with, producer, published):
    def fault(_):
        raise ValueError("cannot handle this one")

    result = run_with("exit-message", fault)
    assert result["status"] == "message_failed"
    assert_findable(producer, "exit-message")
    assert producer.status("exit-message").failing["failures"] == 1
    assert [p[:2] for p in published] == [("drain", "exit-message")]


def test_a_lost_lock_with_nobody_else_draining(run_with, producer, published):
    def fault(_):
        producer.redis.delete(producer.keys("exit-lock").lock)  # our lease ran out, nobody took over

    result = run_with("exit-lock", fault)
    assert result["status"] == "lock_lost"
    assert_findable(producer, "exit-lock")
    assert [p[:2] for p in published] == [("drain", "exit-lock")]


def test_a_lost_lock_that_another_worker_holds_leaves_the_decision_to_it(run_with, producer, published):
    def fault(_):
        producer.redis.set(producer.keys("exit-taken").lock, "another-worker")

    result = run_with("exit-taken", fault)
    assert result["status"] == "lock_lost"
    assert_findable(producer, "exit-taken")
    assert published == []  # the holder decides when it releases
    producer.redis.delete(producer.keys("exit-taken").lock)


def test_an_inbox_that_moved(run_with, producer, published):
    def fault(_):
        producer.redis.lpop(producer.keys("exit-moved").inbox)
        producer.redis.rpush(producer.keys("exit-moved").inbox, "0 0 {}")

    result = run_with("exit-moved", fault)
    assert result["status"] == "state_changed"
    assert_findable(producer, "exit-moved")
    assert [p[:2] for p in published] == [("drain", "exit-moved")]


def test_a_soft_time_limit_is_not_swallowed(run_with, producer, published):
    def fault(_):
        raise SoftTimeLimitExceeded()

    result = run_with("exit-soft", fault)
    assert result["status"] == "time_limit"
    assert_findable(producer, "exit-soft")
    assert [p[:2] for p in published] == [("drain", "exit-soft")]


def test_a_drain_killed_outright_is_found_by_the_sweeper(producer, settings, tenant):
    """Celery's hard time limit or a SIGKILL: no code of ours runs after the kill."""
    publish_drains_with(producer, lambda t, c: None)
    conv = "exit-killed"
    producer.add_messages([{"role": "user", "content": f"message {i}"} for i in range(5)], conversation_id=conv)
    store = ConversationStore(
        producer.redis,
        Scripts.register(producer.redis),
        settings.model_copy(update={"drain_max_messages": 2}),
        tenant,
        conv,
    )
    assert store.acquire()
    from memq.shared.connections import pg_connect

    snap = sync_with_database(store, store.snapshot(), lambda: pg_connect(settings, tenant=tenant, autocommit=True))
    drain(store, store.settings, RulesOnlyDetector(), None, lambda _: None, snap)
    # ... killed here: no release.
    assert_findable(producer, conv)
    keys = producer.keys(conv)
    due = store.scripts.due(keys=[keys.shard.drains], args=[0, 1000, 0])
    assert keys.member in due  # what sweep_stalled re-publishes once the heartbeat is old enough


def test_the_time_budget_is_checked_before_every_message(producer, settings, tenant):
    """A batch of slow detector calls (LLM topic checks) must not overrun the budget."""
    publish_drains_with(producer, lambda t, c: None)
    conv = "exit-budget"
    producer.add_messages(
        [{"role": "user", "content": f"message number {i} with enough text"} for i in range(20)], conversation_id=conv
    )

    class Slow(RulesOnlyDetector):
        def check(self, data):
            time.sleep(0.25)
            return super().check(data)

        def observe(self, message, embedding, state):
            time.sleep(0.25)
            return super().observe(message, embedding, state)

    s = settings.model_copy(update={"drain_max_seconds": 1.0, "embed_prefetch": 32})
    store = ConversationStore(producer.redis, Scripts.register(producer.redis), s, tenant, conv)
    assert store.acquire()
    from memq.shared.connections import pg_connect

    snap = sync_with_database(store, store.snapshot(), lambda: pg_connect(settings, tenant=tenant, autocommit=True))
    started = time.monotonic()
    outcome = drain(store, s, Slow(), None, lambda _: None, snap)
    elapsed = time.monotonic() - started
    assert outcome.more and outcome.processed <= 6 and elapsed < 2.0, (outcome, elapsed)
    assert store.release()  # work remains: a follow-up drain
