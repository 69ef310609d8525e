"""A worker's consumer rides out a Redis that cannot persist. Redis that cannot write its
append-only file (a full disk) refuses every write, ``BRPOP`` included, and even ``PING``
(MISCONF); Celery took the refused ``BRPOP`` for an unrecoverable error and the worker
stopped (seen in the soak's redis_disk_full phase). With ``broker_channel_error_retry``
(memq.shared.celery_config) the consumer reconnects, as after a lost connection, and takes
tasks again once Redis can write."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis
from processes import own_env
from waiting import wait_until

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMQ_TEST_REDIS_CLUSTER") == "1", reason="runs its own Redis; once is enough"
)

HERE = Path(__file__).resolve().parent


def _cannot_persist(client: redis.Redis, folder: Path) -> None:
    """Redis stops writes (MISCONF): a snapshot into a folder that is gone fails."""
    folder.mkdir()
    client.config_set("dir", str(folder))
    client.config_set("save", "3600 1")
    folder.rmdir()
    client.bgsave()
    wait_until(lambda: client.info("persistence")["rdb_last_bgsave_status"] == "err", 10, 0.02, "a failed snapshot")


def test_a_worker_lives_through_a_redis_that_cannot_persist_and_takes_tasks_after(tmp_path, own_redis):
    from celery import Celery

    from memq.shared.celery_config import celery_config
    from memq.shared.settings import Settings

    sender = Celery("probe-sender")
    sender.conf.update(celery_config(Settings(), own_redis.url))
    direct = redis.Redis.from_url(own_redis.url)
    env = own_env(
        own_redis.url, tmp_path / "data", PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    )
    log = tmp_path / "worker.log"
    argv = [sys.executable, "-m", "celery", "-A", "probe_celery_app", "worker", "-Q", "probe", "-P", "solo"]
    with open(log, "ab") as out:
        worker = subprocess.Popen(
            [*argv, "--without-mingle", "--without-gossip", "-l", "INFO"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def alive(what: bool) -> bool:
        assert worker.poll() is None, f"the worker stopped: {log.read_text()[-3000:]}"
        return what

    def ran(key: str) -> bool:
        return alive(direct.get(key) is not None)

    def send() -> str:
        key = f"ran-{uuid.uuid4().hex}"
        sender.send_task("probe.mark", args=[key], queue="probe")
        return key

    try:
        first = send()
        wait_until(lambda: ran(first), 60, interval=0.2, message=lambda: log.read_text()[-3000:])
        _cannot_persist(direct, tmp_path / "gone")
        try:
            # the consumer's next BRPOP is refused: it says so, and goes on trying to reconnect
            wait_until(lambda: alive(log.read_text().count("MISCONF") >= 2), 30, 0.2, "the refusals logged")
        finally:
            direct.config_set("save", "")  # no snapshots configured: writes accepted again
        after = send()
        wait_until(lambda: ran(after), 60, interval=0.2, message=lambda: log.read_text()[-3000:])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
