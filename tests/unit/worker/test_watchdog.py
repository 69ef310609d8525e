"""The worker's watchdog: what it decides from the event loop's ticks, and what it does
with the heartbeat file."""

from __future__ import annotations

import os
import threading
import time

import pytest

from memq.shared.settings import Settings
from memq.worker.watchdog import Loop, Watchdog, assess, heartbeat_age, heartbeat_path, is_alive


def test_assess_from_the_last_tick():
    assert assess(100.0, None, 30, waiting_for_broker=False) is Loop.STARTING
    assert assess(100.0, 80.0, 30, waiting_for_broker=False) is Loop.TURNING
    assert assess(100.0, 60.0, 30, waiting_for_broker=False) is Loop.STALLED
    assert assess(100.0, 60.0, 30, waiting_for_broker=True) is Loop.RECONNECTING
    assert assess(100.0, 60.0, 30, waiting_for_broker=False, stopping=True) is Loop.STOPPING
    assert [is_alive(s) for s in Loop] == [True, True, True, True, False]


def test_a_warm_shutdown_waiting_for_its_tasks_is_no_stall(settings, monkeypatch):
    """Found by the soak: the pool's warm shutdown held the main process 22 s after the
    consumer had stopped its timers, and the watchdog called it a stall."""
    from celery.worker import state

    dog = Watchdog(settings, "w3")
    dog.tick()
    assert dog.last_tick is not None
    monkeypatch.setattr(state, "should_stop", 0)  # what Celery's SIGTERM handler sets (EX_OK)
    assert dog.check(dog.last_tick + 60) is Loop.STOPPING and dog.path.exists()
    monkeypatch.setattr(state, "should_stop", None)
    assert dog.check(dog.last_tick + 61) is Loop.STALLED


@pytest.fixture
def settings(tmp_path):
    return Settings(
        worker_heartbeat_dir=tmp_path, worker_heartbeat_seconds=1, worker_stall_seconds=10, worker_stall_exit_seconds=0
    )


def test_heartbeat_file_refreshed_while_turning_and_left_to_age_when_stalled(settings, tmp_path):
    dog = Watchdog(settings, "w1@host/1")
    assert dog.path == tmp_path / "w1@host_1.alive" == heartbeat_path(settings, "w1@host/1")
    assert heartbeat_age(dog.path) is None
    dog.tick()
    now = dog.last_tick
    assert now is not None
    assert dog.check(now + 1) is Loop.TURNING
    assert heartbeat_age(dog.path) is not None
    # the loop stops ticking; the watchdog keeps checking on time
    states = [dog.check(now + t) for t in range(2, 12)]
    assert states[7] is Loop.TURNING and states[-1] is Loop.STALLED
    dog.path.unlink()
    assert dog.check(now + 12) is Loop.STALLED and not dog.path.exists()  # no longer refreshed
    dog.tick()
    assert dog.last_tick is not None and dog.check(dog.last_tick + 0.5) is Loop.TURNING and dog.path.exists()


def test_a_loop_waiting_for_the_broker_is_alive(settings):
    """Celery's consumer retrying a lost connection sits in ensure_connected: not a stall."""
    dog = Watchdog(settings, "w2")
    started, release = threading.Event(), threading.Event()

    def ensure_connected():  # named like Celery's consumer method
        dog.tick()
        started.set()
        release.wait(10)

    thread = threading.Thread(target=ensure_connected)
    thread.start()
    try:
        started.wait(5)
        now = dog.last_tick
        assert now is not None
        for t in range(1, 15):
            state = dog.check(now + t)
        assert state is Loop.RECONNECTING and dog.path.exists()
    finally:
        release.set()
        thread.join()


def test_a_suspended_process_is_not_a_stalled_loop(settings):
    """After SIGSTOP / SIGCONT the watchdog wakes up late along with the loop: it must not
    report the loop as stalled for the time the whole process was frozen."""
    dog = Watchdog(settings, "w3")
    dog.tick()
    now = dog.last_tick
    assert now is not None
    assert dog.check(now + 1) is Loop.TURNING
    assert dog.check(now + 60) is Loop.TURNING  # overslept by far more than half the stall time
    states = [dog.check(now + t) for t in range(61, 76)]
    assert states[0] is Loop.TURNING and states[-1] is Loop.STALLED  # still no tick 15 s after waking up


def test_stall_settings_are_validated():
    with pytest.raises(ValueError, match="MEMQ_WORKER_STALL_EXIT_SECONDS"):
        Settings(worker_stall_seconds=30, worker_stall_exit_seconds=10)


def test_worker_alive_command(tmp_path, monkeypatch):
    import subprocess
    import sys

    from click.testing import CliRunner

    from memq.cli.worker_commands import worker_alive_cmd
    from memq.shared.settings import reset_settings

    monkeypatch.setenv("MEMQ_WORKER_HEARTBEAT_DIR", str(tmp_path))
    reset_settings()
    try:
        runner = CliRunner()
        assert runner.invoke(worker_alive_cmd, []).exit_code == 1  # no worker here
        fresh = tmp_path / "w1@h.alive"
        fresh.write_text(str(os.getpid()))
        assert runner.invoke(worker_alive_cmd, []).exit_code == 0
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        (tmp_path / "w2@h.alive").write_text(str(dead.pid))  # a worker killed outright left it
        result = runner.invoke(worker_alive_cmd, [])
        assert result.exit_code == 0 and "removed" in result.output and not (tmp_path / "w2@h.alive").exists()
        os.utime(fresh, (time.time() - 60, time.time() - 60))
        result = runner.invoke(worker_alive_cmd, ["--max-age", "30"])
        assert result.exit_code == 1 and "w1@h" in result.output
    finally:
        reset_settings()
