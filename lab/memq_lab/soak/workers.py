"""Celery worker and beat processes of the soak, each in its own process group so a
fault can kill, stop or terminate a worker together with its pool children."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from memq.cli.worker_commands import beat_argv, worker_argv
from memq.worker_process import wait_warm


@dataclass
class Process:
    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        out = open(self.log, "ab")  # noqa: SIM115 - the worker owns it for its lifetime
        self.proc = subprocess.Popen(
            self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        out.close()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def wait(self, timeout: float) -> bool:
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def stop(self, timeout: float = 30.0) -> None:
        self.signal(signal.SIGTERM)
        if not self.wait(timeout):
            self.signal(signal.SIGKILL)
            self.wait(10)


@dataclass
class WorkerPool:
    env: dict[str, str]
    log_dir: Path
    count: int = 3
    workers: list[Process] = field(default_factory=list)
    beat: Process | None = None
    restarts: int = 0
    log_offsets: dict[str, int] = field(default_factory=dict)  # where this run's lines begin

    def start(self) -> None:
        for i in range(self.count):
            argv = worker_argv(concurrency=1, hostname=f"soak{i}@%h", pool="prefork", loglevel="WARNING")
            self.workers.append(Process(f"soak{i}", argv, self.env, self.log_dir / f"worker{i}.log"))
        for w in self.workers:
            self.log_offsets[w.name] = w.log.stat().st_size if w.log.exists() else 0
        for w in self.workers:
            w.start()
        self.beat = Process("beat", beat_argv("WARNING"), self.env, self.log_dir / "beat.log")
        self.beat.start()

    def wait_ready(self, client, prefix: str, since: float, timeout: float = 180.0) -> None:
        """Wait until every worker's pool process has warmed up (loaded its models)."""
        wait_warm(client, prefix, since, len(self.workers), timeout=timeout, log_hint=f"see {self.log_dir}")

    def kill(self, index: int, sig: int = signal.SIGKILL) -> None:
        self.workers[index].signal(sig)

    def restart(self, index: int) -> None:
        worker = self.workers[index]
        if worker.alive:
            worker.stop()
        worker.start()
        self.restarts += 1

    def ensure_running(self) -> None:
        for i, w in enumerate(self.workers):
            if not w.alive:
                self.restart(i)
        if self.beat is not None and not self.beat.alive:
            self.beat.start()

    def stalls(self) -> int:
        """How many times a worker's watchdog reported its event loop stalled (memq.worker.watchdog)
        in this run (the logs are appended to across runs)."""
        count = 0
        for w in self.workers:
            with open(w.log, "rb") as fh:
                fh.seek(self.log_offsets.get(w.name, 0))
                count += fh.read().count(b'"worker_stalled"')
        return count

    def stop(self) -> None:
        for w in self.workers:
            w.stop()
        if self.beat is not None:
            self.beat.stop()
