"""Worker processes for tests that need more than the in-process worker: spawn one with
the test services' environment, wait until it answers a ping, stop it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def spawn_worker(
    env: dict[str, str],
    name: str,
    extra_env: dict[str, str] | None = None,
    *,
    host: str = "%h",
    queue: str | None = None,
) -> subprocess.Popen:
    """A solo worker named ``name@host``, on memq's queues or on ``queue`` alone (one no
    other worker of the session consumes)."""
    from memq.cli.worker_commands import worker_argv

    argv = worker_argv(concurrency=1, hostname=f"{name}@{host}", pool="solo", loglevel="WARNING")
    if queue is not None:
        argv[argv.index("-Q") + 1] = queue
    full = {**os.environ, **env, **(extra_env or {})}
    return subprocess.Popen(argv, cwd=ROOT, env=full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def own_env(redis_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a memq process of the test's own on ``redis_url`` (a beat, a
    worker): this one's without memq's settings and service URLs, data under ``data_dir``,
    and ``extra``."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("MEMQ_", "REDIS_URL", "DATABASE_URL"))}
    return {**inherited, "REDIS_URL": redis_url, "MEMQ_DATA_DIR": str(data_dir), "PYTHONWARNINGS": "ignore", **extra}


def wait_for_workers(app, names: set[str], timeout: float = 60.0) -> None:
    def answering() -> bool:
        replies = app.control.ping(timeout=1.0) or []
        return names <= {next(iter(r)).split("@")[0] for r in replies}

    # the ping waits a second for the replies: polled again at once
    wait_until(answering, timeout, interval=0, message=f"workers {names} did not answer a ping")


def stop_process(p: subprocess.Popen, timeout: float = 30.0) -> str:
    p.terminate()
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    return err or ""
