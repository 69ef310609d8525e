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


def test_the_beat_lives_through_a_full_redis_and_sends_again_after(tmp_path, own_redis, service_env):
    from memq.cli.worker_commands import beat_argv

    direct = redis.Redis.from_url(own_redis.url)
    env = own_env(
        own_redis.url,
        tmp_path / "data",
        DATABASE_URL=service_env["DATABASE_URL"],
        MEMQ_COLLAPSE_CHECK_SECONDS="1",  # a task every second, nobody consumes them
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
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(beat.pid, signal.SIGTERM)
        beat.wait(30)
