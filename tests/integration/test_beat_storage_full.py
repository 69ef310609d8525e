"""The beat rides out a Redis that has no room. RedBeat writes its lock and schedule at every
tick; a full Redis (OOM at its maxmemory) refused those writes and the refusal ended the
beat process, so nothing swept stalled work until something restarted it (seen in the
soak's redis_full phase). memq's scheduler (``memq.worker.beat_scheduler``) logs
``storage_full`` and tries again, and sends its tasks once Redis has room."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

import pytest
import redis
from processes import own_env
from waiting import wait_until

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMQ_TEST_REDIS_CLUSTER") == "1", reason="runs its own Redis; once is enough"
)


@contextlib.contextmanager
def _beat(tmp_path, own_redis, service_env):
    """A beat of its own on ``own_redis`` sending a task every second (nobody consumes
    them): (its log, how many tasks are queued, a check that it is alive)."""
    from memq.cli.worker_commands import beat_argv

    direct = redis.Redis.from_url(own_redis.url)
    env = own_env(
        own_redis.url,
        tmp_path / "data",
        DATABASE_URL=service_env["DATABASE_URL"],
        MEMQ_COLLAPSE_CHECK_SECONDS="1",
        MEMQ_LOG_FORMAT="json",
    )
    log = tmp_path / "beat.log"
    with open(log, "ab") as out:
        beat = subprocess.Popen(
            beat_argv("INFO"), env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )

    def queued() -> int:
        return int(direct.llen("memq.maintenance"))

    def alive(what: bool) -> bool:
        assert beat.poll() is None, f"the beat died: {log.read_text()[-3000:]}"
        return what

    try:
        yield log, queued, alive
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(beat.pid, signal.SIGTERM)
        beat.wait(30)


def test_the_beat_lives_through_a_full_redis_and_sends_again_after(tmp_path, own_redis, service_env):
    direct = redis.Redis.from_url(own_redis.url)
    with _beat(tmp_path, own_redis, service_env) as (log, queued, alive):
        wait_until(lambda: alive(queued() > 0), 60, interval=0.2, message=lambda: log.read_text()[-3000:])
        direct.config_set("maxmemory", max(1, int(direct.info("memory")["used_memory"]) // 2))
        try:
            # two ticks refused, and the beat still there
            wait_until(
                lambda: alive(log.read_text().count('"storage_full"') >= 2),
                30,
                interval=0.2,
                message="the beat met the full Redis twice",
            )
            full = queued()
        finally:
            direct.config_set("maxmemory", 0)
        wait_until(lambda: alive(queued() > full), 30, interval=0.2, message="the beat sends no more tasks")
        assert "redis_out_of_memory" in log.read_text()


def test_a_beat_whose_lock_was_lost_takes_it_again_once_free(tmp_path, own_redis, service_env, settings):
    """The lock gone (expired while a full Redis refused its renewals, or lost with Redis'
    last writes) while another beat holds it: this beat waits as a standby until it is free,
    then takes it and sends again; it never sends beside the other, and never dies."""
    direct = redis.Redis.from_url(own_redis.url)
    lock = f"{settings.key_prefix}:redbeat:lock"
    with _beat(tmp_path, own_redis, service_env) as (log, queued, alive):
        wait_until(lambda: alive(queued() > 0 and direct.exists(lock)), 60, interval=0.2, message="no lock taken")
        direct.set(lock, "another-beat", px=4000)  # another beat's, for 4 s: ours is gone
        wait_until(lambda: alive('"beat_lock_lost"' in log.read_text()), 60, interval=0.1, message="never noticed")
        seen = log.read_text()
        if direct.get(lock) == b"another-beat":  # still the other's after the log was read
            assert '"beat_lock_taken"' not in seen  # so it had not taken it beside the other
        wait_until(lambda: alive('"beat_lock_taken"' in log.read_text()), 60, interval=0.2, message="never taken")
        assert direct.get(lock) not in (None, b"another-beat")
        sent = queued()
        wait_until(lambda: alive(queued() > sent), 30, interval=0.2, message="the beat sends no more tasks")
