"""Redis stays bounded: each message id is remembered for the dedup window from its own
acceptance (not refreshed by later messages), and a conversation at rest keeps its
state only for a while; when it comes back, numbering continues from PostgreSQL."""

from __future__ import annotations

import time

from memq.audit import audit
from shared.db.episodes import message_seqs


def test_the_dedup_window_is_measured_per_id(producer):
    producer._publish_drain = lambda t, c: None
    producer.settings = producer.settings.model_copy(update={"dedup_ttl_days": 1.5 / 86400})  # 1.5 s
    conv = "dedup-window"
    keys = producer.keys(conv)
    assert producer.add_message(conv, "user", "first", message_id="A").status == "accepted"
    time.sleep(0.8)
    assert producer.add_message(conv, "user", "second", message_id="B").status == "accepted"
    time.sleep(0.9)  # A is 1.7 s old, B 0.9 s: an active conversation no longer keeps A forever
    assert producer.add_message(conv, "user", "first again", message_id="A").status == "accepted"
    assert producer.add_message(conv, "user", "second again", message_id="B").status == "duplicate"
    assert producer.redis.zcard(keys.ids) == 2
    assert 0 < producer.redis.pttl(keys.ids) <= 1500
    time.sleep(1.7)
    assert producer.redis.exists(keys.ids) == 0  # nothing new: the whole set is gone


def test_state_at_rest_expires_and_numbering_resumes_from_postgresql(
    worker, producer, settings, db, tenant, monkeypatch
):
    monkeypatch.setattr(settings, "idle_state_ttl_days", 2 / 86400)  # 2 s (the in-process worker's settings)
    conv = "at-rest"
    keys = producer.keys(conv)
    producer.add_messages(
        [{"role": "user", "content": f"first visit, message {i}"} for i in range(4)], conversation_id=conv
    )
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)
    deadline = time.monotonic() + 10
    while producer.redis.pttl(keys.state) < 0 and time.monotonic() < deadline:  # finish_segment settles it
        time.sleep(0.1)
    assert 0 < producer.redis.pttl(keys.state) <= 2000
    assert producer.redis.zscore(keys.shard.active, keys.member) is None
    assert producer.redis.zscore(keys.shard.drains, keys.member) is None
    time.sleep(2.2)
    # Nothing of it is left in Redis but the message ids, each kept for its dedup window.
    assert [k for k in keys.all() if producer.redis.exists(k)] == [keys.ids]

    producer.add_messages(
        [{"role": "user", "content": f"second visit, message {i}"} for i in range(3)], conversation_id=conv
    )
    assert producer.redis.pttl(keys.state) == -1  # active again: no expiry
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)
    assert message_seqs(db, tenant, conv) == list(range(1, 8))
    assert audit(producer.redis, db, settings, [(tenant, conv)], expect_flushed=True).ok
