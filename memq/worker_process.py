"""A Celery worker run as a subprocess for the duration of a command (the demo, the
LoCoMo evaluation): start it, wait until it answers a ping, stop it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from memq.shared.errors import MemqError


class WorkerNotReady(MemqError):
    """The worker exited, or did not answer a ping in time."""


def start_worker(
    concurrency: int, hostname: str, log_path: Path | None = None, environment: dict[str, str] | None = None
) -> subprocess.Popen:
    """Log level WARNING unless MEMQ_LOG_LEVEL says otherwise; output to ``log_path`` (or
    this process' own). ``environment``: settings of this worker only (e.g.
    ``MEMQ_EMBEDDING_THREADS``), over this process' own."""
    from memq.cli.worker_commands import worker_argv

    env = {
        **os.environ,
        "MEMQ_LOG_LEVEL": os.environ.get("MEMQ_LOG_LEVEL", "WARNING"),
        "PYTHONWARNINGS": "ignore",
        **(environment or {}),
    }
    argv = worker_argv(concurrency=concurrency, hostname=hostname, loglevel="WARNING")
    if log_path is None:
        return subprocess.Popen(argv, env=env)
    out = open(log_path, "ab")  # noqa: SIM115 - the worker owns it for its lifetime
    return subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_worker(
    producer, process: subprocess.Popen, timeout: float = 90.0, log_hint: str = "see the log above"
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise WorkerNotReady(f"the worker exited with code {process.returncode}; {log_hint}")
        if producer.celery.control.ping(timeout=1.0):
            return
    raise WorkerNotReady(f"no worker answered a ping within {timeout:.0f} s; {log_hint}")


def wait_warm(
    client, prefix: str, since: float, count: int, alive=lambda: True, timeout: float = 180.0, log_hint: str = ""
) -> None:
    """Until ``count`` worker pool processes have warmed up (loaded their models) since
    ``since``: each records ``<prefix>:workers:<host>:<pid>`` on the broker's Redis when it
    has. ``alive`` says whether the workers still run (checked on every poll)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise WorkerNotReady(f"a worker exited before warming up; {log_hint}")
        warm = [k for k in client.scan_iter(match=f"{prefix}:workers:*") if float(client.get(k) or 0) >= since]
        if len(warm) >= count:
            return
        time.sleep(0.2)  # poll interval: a warm-up leaves no event to wait on
    raise WorkerNotReady(f"{count} worker processes did not warm up within {timeout:.0f} s; {log_hint}")


def stop_worker(process: subprocess.Popen, timeout: float = 30.0) -> None:
    """A warm shutdown (SIGTERM), then SIGKILL after ``timeout``."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
