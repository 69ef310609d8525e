"""Messages are accepted and flushed with no worker running, but nothing becomes an episode
until one runs: the flush and the status say so instead of letting retrieval find nothing
in silence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memq.producer.client import NO_WORKER, Producer

pytestmark = pytest.mark.integration
MEMQ = str(Path(sys.executable).with_name("memq"))


def _memq(args: list[str], redis_url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMQ_MAILBOX_REDIS")}
    env["REDIS_URL"] = redis_url  # a Redis no worker consumes from
    return subprocess.run([MEMQ, *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def test_flush_and_status_warn_when_no_worker_answers(own_redis, settings, tenant):
    alone = settings.model_copy(
        update={"redis_url": own_redis.url, "mailbox_redis_url": None, "mailbox_redis_cluster": False}
    )
    producer = Producer(alone)
    producer.add_message("quiet-conv", "user", "Is anyone there to remember this?", tenant=tenant)
    assert producer.worker_answers(timeout=0.3) is False

    flushed = _memq(["flush", "quiet-conv", "--tenant", tenant], own_redis.url)
    assert flushed.returncode == 0, flushed.stderr
    assert flushed.stdout.strip() == "flush requested"  # stdout keeps the answer alone
    assert f"warning: {NO_WORKER}" in flushed.stderr

    status = _memq(["status", "quiet-conv", "--tenant", tenant], own_redis.url)
    assert status.returncode == 0 and "flush_requested=True" in status.stdout, status.stdout + status.stderr
    assert f"warning: {NO_WORKER}" in status.stderr
    assert producer.status("quiet-conv", tenant=tenant).inbox == 1  # nothing lost: it waits in Redis


def test_no_warning_when_a_worker_answers(worker, settings):
    assert Producer(settings).worker_answers() is True
