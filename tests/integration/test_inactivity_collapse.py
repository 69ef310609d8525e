"""A conversation that goes quiet still becomes episodes (MIRA): the periodic
collapse task, scheduled by a real RedBeat beat process, closes open events of
conversations idle longer than the timeout (3 s in tests)."""

from __future__ import annotations

import subprocess
import sys

from invariants import assert_every_message_in_exactly_one_episode
from processes import ROOT, stop_process
from waiting import wait_until

from memq.shared.db.episodes import list_episodes


def _redis_seconds(client) -> float:
    seconds, micros = client.time()
    return int(seconds) + int(micros) / 1e6


def _drained(producer, conv, messages: int) -> None:
    """Until the drain the messages started has run and let go of the conversation: they
    are in the open event, or wait in the inbox for look-ahead (a later message or a flush
    decides them)."""

    def drained() -> bool:
        status = producer.status(conv)
        return not status.drain_queued and status.inbox + status.buffer >= messages

    wait_until(drained, 60, interval=0.05, message=lambda: str(producer.status(conv)))


def _two_messages(producer, conv):
    producer.add_messages(
        [
            {"role": "user", "content": "Can you remind me to water the monstera on Friday?"},
            {"role": "assistant", "content": "Noted: water the monstera on Friday."},
        ],
        conversation_id=conv,
    )


def test_beat_collapses_an_idle_conversation(worker, producer, db, settings, tenant, service_env):
    conv = "quiet"
    _two_messages(producer, conv)  # two messages: the rule layer alone never closes this
    _drained(producer, conv, 2)
    status = producer.status(conv)
    assert status.inbox + status.buffer == 2 and status.segments == 0  # waiting, not in an episode
    assert producer.redis.zscore(producer.keys(conv).shard.active, producer.keys(conv).member) is not None

    beat = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memq.worker.app",
            "beat",
            "-S",
            "redbeat.RedBeatScheduler",
            "-l",
            "WARNING",
        ],
        cwd=ROOT,
        env={**__import__("os").environ, **service_env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: list_episodes(db, tenant, conv), 60, interval=0.3, message="the beat collapsed nothing")
    finally:
        err = stop_process(beat)
        assert "Traceback" not in err, err[-3000:]  # checked when the wait failed too: it says why
    (episode,) = list_episodes(db, tenant, conv)
    assert episode.boundary_reason == "inactivity" and episode.message_count == 2
    producer.wait_idle(conv, timeout=30)
    assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, conv, 2)
    # Fully drained conversations leave the active index (it held them until now).
    keys = producer.keys(conv)
    assert keys.member == f"{tenant}/{conv}"
    assert producer.redis.zscore(keys.shard.active, keys.member) is None


def test_collapse_leaves_recently_active_conversations_alone(worker, producer, db, tenant, settings):
    """Run by hand (no beat), against Redis' clock: a collapse while the conversation is
    younger than the timeout leaves it open; one after the timeout closes it."""
    from memq.worker.tasks.maintenance import collapse_idle

    conv = "recent"
    keys = producer.keys(conv)
    timeout = settings.segment_timeout_minutes * 60  # 3 s in tests
    _two_messages(producer, conv)
    _drained(producer, conv, 2)
    collapse_idle.run()
    active_since = producer.redis.zscore(keys.shard.active, keys.member)
    assert _redis_seconds(producer.redis) < active_since + timeout, "the machine stalled past the timeout"
    status = producer.status(conv)
    assert not status.flush_requested and status.inbox + status.buffer == 2
    assert list_episodes(db, tenant, conv) == []

    def collapsed() -> bool:
        """Collapsed once the conversation is older than the timeout (run again until then)."""
        if list_episodes(db, tenant, conv):
            return True
        last = producer.redis.zscore(keys.shard.active, keys.member)
        if last is not None and _redis_seconds(producer.redis) > last + timeout:
            collapse_idle.run()
            producer.wait_idle(conv, timeout=30)
            return bool(list_episodes(db, tenant, conv))
        return False

    wait_until(collapsed, 60, interval=0.05, message=lambda: str(producer.status(conv)))
    assert [e.boundary_reason for e in list_episodes(db, tenant, conv)] == ["inactivity"]
