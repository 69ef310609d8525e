"""Decisions that compare times use Redis' own clock, not the clock of whichever
machine runs the producer or the beat."""

from __future__ import annotations

import time

from drains import publish_drains_with

from memq.shared.mailbox.codec import decode_inbox_item


def test_arrival_and_activity_are_stamped_by_redis(producer, monkeypatch):
    publish_drains_with(producer, lambda t, c: None)
    redis_now = producer.redis.time()[0]
    monkeypatch.setattr(time, "time", lambda: redis_now + 86400)  # this machine's clock is a day fast
    producer.add_message("clock", "user", "what time is it?")
    monkeypatch.undo()
    keys = producer.keys("clock")
    item = decode_inbox_item(producer.redis.lindex(keys.inbox, 0))
    assert abs(item.received_at.timestamp() - redis_now) < 5
    assert item.timestamp == item.received_at  # no timestamp given: it was sent on arrival
    assert abs(producer.redis.zscore(keys.shard.active, keys.member) - redis_now) < 5


def test_a_beat_with_a_fast_clock_does_not_collapse_fresh_conversations(producer, monkeypatch, celery_app):
    from memq.worker.tasks.maintenance import collapse_idle

    publish_drains_with(producer, lambda t, c: None)
    producer.add_message("fresh", "user", "I just said this")
    monkeypatch.setattr(time, "time", lambda: producer.redis.time()[0] + 86400)
    collapse_idle.run()
    monkeypatch.undo()
    assert producer.status("fresh").flush_requested is False
