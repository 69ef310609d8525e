"""The soak's own Redis and PostgreSQL, and what the faults do to them."""

from __future__ import annotations

import os
import secrets
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from shared.embedded.postgres_server import EmbeddedPostgres
from shared.embedded.redis_server import EmbeddedRedis


MARK_KEY = "memq-soak:mark"


@dataclass
class LossMarker:
    """Writes a numbered marker into Redis every few milliseconds and remembers when each
    was sent. A crash is made to lose "everything after moment T" by cutting the AOF just
    after the first marker sent at or after T: the AOF holds commands in the order Redis
    executed them, so every write acknowledged before T stays and every write executed
    after that marker goes, whatever the disk was doing."""

    url: str
    aof: Path
    interval: float = 0.02
    sent: list[tuple[float, str]] = field(default_factory=list)
    # Unique per run: the AOF also holds the history of earlier runs (FLUSHALL does not
    # shorten it), whose markers must never be mistaken for this run's.
    run: str = field(default_factory=lambda: secrets.token_hex(6))
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="loss-marker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)

    def _run(self) -> None:
        client = redis.Redis.from_url(self.url, socket_timeout=1, socket_connect_timeout=0.5)
        n = 0
        while not self._stop.is_set():
            n += 1
            started = time.time()
            value = f"{self.run}-{n}"
            try:
                client.set(MARK_KEY, value)
                self.sent.append((started, value))
                if len(self.sent) > 5000:
                    del self.sent[:2500]
            except redis.RedisError:
                time.sleep(0.1)
            time.sleep(self.interval)

    def cut_after(self, moment: float) -> int:
        """Truncate the (stopped) server's AOF just after the first marker sent at or after
        ``moment``. Returns how many bytes were cut."""
        candidates = [value for t, value in self.sent if t >= moment]
        if not candidates:
            raise RuntimeError("no loss marker was sent after the requested moment")
        needle = f"${len(MARK_KEY)}\r\n{MARK_KEY}\r\n${len(candidates[0])}\r\n{candidates[0]}\r\n".encode()
        data = self.aof.read_bytes()
        at = data.rfind(needle)
        if at < 0:  # the marker never reached the file: Redis lost even more (a postponed AOF write)
            return 0
        end = at + len(needle)  # a plain SET, never inside a script's MULTI ... EXEC block
        with open(self.aof, "r+b") as fh:
            fh.truncate(end)
        return len(data) - end


@dataclass
class SoakServices:
    data_dir: Path
    redis_port: int = 6397

    def __post_init__(self) -> None:
        self.redis = EmbeddedRedis(
            self.data_dir,
            self.redis_port,
            folder_name="redis",
            # A rewritten AOF could not be truncated to an earlier state.
            extra_args=("--auto-aof-rewrite-percentage", "0", "--aof-load-truncated", "yes"),
        )
        self.postgres = EmbeddedPostgres(self.data_dir, "memq_soak")
        self.marker = LossMarker(self.redis.url, self.redis.folder / "appendonly.aof")
        self.database_url = ""

    @property
    def redis_url(self) -> str:
        return self.redis.url

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.redis.start()
        self.database_url = self.postgres.start()
        self.marker.start()

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, decode_responses=True, socket_timeout=5)

    def wipe(self) -> None:
        """Start every run from empty services (and a compact AOF)."""
        client = self.client()
        client.flushall()
        client.bgrewriteaof()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            info = client.info("persistence")
            if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
                break
            time.sleep(0.1)
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as conn:
            for table in ("seq_gap", "episode_message", "episodic_memory", "conversation"):
                conn.execute(f"TRUNCATE {table} CASCADE")

    # -- Redis faults --------------------------------------------------------------
    def redis_restart(self) -> None:
        """A clean restart: SHUTDOWN (AOF flushed), start again."""
        try:
            self.client().shutdown(nosave=False)
        except redis.RedisError:
            pass
        self._wait_gone()
        self.redis.start()

    def redis_kill(self, lose_last_seconds: float = 0.0) -> tuple[float, int]:
        """SIGKILL the server. With ``lose_last_seconds``, also lose every write executed
        after that long before the kill: what a machine crash does to what the kernel had
        not yet flushed under ``appendfsync everysec``. Returns (kill time, bytes cut)."""
        pid = self.redis.pid()
        killed_at = time.time()
        if pid:
            os.kill(pid, signal.SIGKILL)
        self._wait_gone()
        cut = self.marker.cut_after(killed_at - lose_last_seconds) if lose_last_seconds else 0
        return killed_at, cut

    def redis_start(self) -> None:
        self.redis.start()

    def _wait_gone(self) -> None:
        deadline = time.monotonic() + 10
        while self.redis.pid() is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        self.redis.pidfile.unlink(missing_ok=True)

    # -- PostgreSQL faults ---------------------------------------------------------
    def postgres_stop(self) -> None:
        self.postgres.stop()

    def postgres_start(self) -> None:
        self.database_url = self.postgres.start()

    def stop(self) -> None:
        self.marker.stop()
        if self.redis.pid() is not None:
            try:
                self.client().shutdown(nosave=True)
            except redis.RedisError:
                pass
            self._wait_gone()
        self.postgres.stop()
