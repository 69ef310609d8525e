"""Worker processes for tests that need more than the in-process worker: spawn one with
the test services' environment, wait until it answers a ping, stop it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

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


def wait_for_workers(app, names: set[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=1.0) or []
        seen = {next(iter(r)).split("@")[0] for r in replies}
        if names <= seen:
            return
    raise AssertionError(f"workers {names} did not answer a ping within {timeout} s")


def stop_process(p: subprocess.Popen, timeout: float = 30.0) -> str:
    p.terminate()
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    return err or ""
