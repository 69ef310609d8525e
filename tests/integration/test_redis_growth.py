"""Redis stays bounded: each message id is remembered for the dedup window from its own
acceptance (not refreshed by later messages), and a conversation at rest keeps its
state only for a while; when it comes back, numbering continues from PostgreSQL."""

from __future__ import annotations

from drains import publish_drains_with
from stored import message_seqs
from waiting import wait_until

from memq.audit import audit


def _redis_ms(client) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def _wait_for_redis_clock(client, at_ms: int, timeout: float = 30.0) -> None:
    """Until Redis' own clock (the one the dedup window is measured on) reaches ``at_ms``:
    waiting on the clock, not a guessed margin."""
    wait_until(lambda: _redis_ms(client) >= at_ms, timeout, interval=0.02, message="Redis' clock did not advance")


def test_the_dedup_window_is_measured_per_id(producer):
    publish_drains_with(producer, lambda t, c: None)
    window_ms = 3000
    producer.settings = producer.settings.model_copy(update={"dedup_ttl_days": window_ms / 1000 / 86400})
    conv = "dedup-window"
    keys = producer.keys(conv)
    r = producer.redis
    assert producer.add_message(conv, "user", "first", message_id="A").status == "accepted"
    a_at = int(r.zscore(keys.ids, "A"))  # when Redis accepted A (its clock, in ms)
    _wait_for_redis_clock(r, a_at + window_ms // 2)
    assert producer.add_message(conv, "user", "second", message_id="B").status == "accepted"
    b_at = int(r.zscore(keys.ids, "B"))
    # A's window is over, B's is not (it ends window_ms / 2 later): an active conversation
    # no longer keeps A forever.
    _wait_for_redis_clock(r, a_at + window_ms + 1)
    assert producer.add_message(conv, "user", "first again", message_id="A").status == "accepted"
    assert _redis_ms(r) < b_at + window_ms, "the machine stalled for over a second and a half; B's window is over"
    assert producer.add_message(conv, "user", "second again", message_id="B").status == "duplicate"
    assert r.zcard(keys.ids) == 2
    assert 0 < r.pttl(keys.ids) <= window_ms
    last = int(r.zscore(keys.ids, "A"))
    _wait_for_redis_clock(r, last + window_ms + 1)
    # Redis expires a key on access or within its active-expiry cycle
    wait_until(lambda: not r.exists(keys.ids), 10, interval=0.02, message="the message ids outlived their window")
    assert r.exists(keys.ids) == 0  # nothing new: the whole set is gone


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
    # finish_segment settles it
    wait_until(lambda: producer.redis.pttl(keys.state) >= 0, 10, message="the state at rest got no expiry")
    assert 0 < producer.redis.pttl(keys.state) <= 2000
    assert producer.redis.zscore(keys.shard.active, keys.member) is None
    assert producer.redis.zscore(keys.shard.drains, keys.member) is None

    def left() -> list[str]:
        return [k for k in keys.all() if producer.redis.exists(k)]

    # Nothing of it is left in Redis but the message ids, each kept for its dedup window:
    # within 2.2 s (its state's 2 s), waited for as it happens.
    wait_until(lambda: left() == [keys.ids], 2.2, interval=0.05, message=lambda: f"still in Redis: {left()}")
    assert left() == [keys.ids]

    producer.add_messages(
        [{"role": "user", "content": f"second visit, message {i}"} for i in range(3)], conversation_id=conv
    )
    assert producer.redis.pttl(keys.state) == -1  # active again: no expiry
    producer.flush(conv)
    producer.wait_idle(conv, timeout=60)
    assert message_seqs(db, tenant, conv) == list(range(1, 8))
    assert audit(producer.redis, db, settings, [(tenant, conv)], expect_flushed=True).ok
