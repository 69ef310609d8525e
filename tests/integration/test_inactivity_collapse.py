"""A conversation that goes quiet still becomes episodes (seed 002): the periodic
collapse task, scheduled by a real RedBeat beat process, closes open events of
conversations idle longer than the timeout (3 s in tests)."""

from __future__ import annotations

import subprocess
import sys
import time

from invariants import assert_every_message_in_exactly_one_episode
from processes import ROOT, stop_process

from shared.db.episodes import list_episodes


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
    time.sleep(1.0)
    status = producer.status(conv)
    assert status.inbox + status.buffer == 2 and status.segments == 0  # waiting, not in an episode
    assert producer.redis.zscore(producer.keys(conv).shard.active, producer.keys(conv).member) is not None

    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "worker.app", "beat", "-S", "redbeat.RedBeatScheduler", "-l", "WARNING"],
        cwd=ROOT,
        env={**__import__("os").environ, **service_env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list_episodes(db, tenant, conv):
            time.sleep(0.3)
    finally:
        err = stop_process(beat)
    assert "Traceback" not in err, err[-3000:]
    (episode,) = list_episodes(db, tenant, conv)
    assert episode.boundary_reason == "inactivity" and episode.message_count == 2
    producer.wait_idle(conv, timeout=30)
    assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, conv, 2)
    # Fully drained conversations leave the active index (it held them until now).
    keys = producer.keys(conv)
    assert keys.member == f"{tenant}/{conv}"
    assert producer.redis.zscore(keys.shard.active, keys.member) is None


def test_collapse_leaves_recently_active_conversations_alone(worker, producer, db, tenant, celery_app):
    from shared import tasks

    _two_messages(producer, "recent")
    celery_app.send_task(tasks.COLLAPSE_IDLE)  # timeout is 3 s; these messages are new
    time.sleep(1.5)
    assert list_episodes(db, tenant, "recent") == []
    status = producer.status("recent")
    assert status.inbox + status.buffer == 2
    time.sleep(2.0)
    celery_app.send_task(tasks.COLLAPSE_IDLE)
    producer.wait_idle("recent", timeout=30)
    assert [e.boundary_reason for e in list_episodes(db, tenant, "recent")] == ["inactivity"]
