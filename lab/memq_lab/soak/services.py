"""The soak's own Redis and PostgreSQL, and what the faults do to them."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from memq.shared.embedded.postgres_server import EmbeddedPostgres
from memq.shared.embedded.redis_server import EmbeddedRedis, port_in_use
from memq_lab.soak.postgres_replica import PostgresPair
from memq_lab.testing.tcp_proxy import TcpProxy, free_port

MARK_KEY = "memq-soak:mark"


@dataclass
class LossMarker:
    """Writes a numbered marker into Redis every few milliseconds and remembers when each
    was sent. A crash is made to lose "everything after moment T" by cutting the AOF just
    after the first marker sent at or after T: the AOF holds commands in the order Redis
    executed them, so every write acknowledged before T stays and every write executed
    after that marker goes, whatever the disk was doing. Numbers are never reused within
    a run (the thread stops and starts again when Redis moves), so a marker found in the
    AOF is the one sent at that moment, never an earlier namesake."""

    url: str
    aof: Path
    interval: float = 0.02
    sent: list[tuple[float, str]] = field(default_factory=list)
    # Unique per run: the AOF also holds the history of earlier runs (FLUSHALL does not
    # shorten it), whose markers must never be mistaken for this run's.
    run: str = field(default_factory=lambda: secrets.token_hex(6))
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _count: int = 0  # markers sent in this run, across restarts of the thread

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
        while not self._stop.is_set():
            self._count += 1
            started = time.time()
            value = f"{self.run}-{self._count}"
            try:
                client.set(MARK_KEY, value)
                self.sent.append((started, value))
                if len(self.sent) > 5000:
                    del self.sent[:2500]
            except redis.RedisError:
                time.sleep(0.1)
            time.sleep(self.interval)

    def cut_after(self, moment: float) -> tuple[int, float]:
        """Truncate the (stopped) server's AOF just after the first marker sent at or after
        ``moment``. Returns (bytes cut, the moment from which writes are lost): ``moment``,
        or earlier when that marker never reached the file. Redis postpones its AOF write
        while a slow fsync is in progress (up to two seconds under ``appendfsync
        everysec``), so a killed server can have lost more than was asked: then nothing is
        cut, and the loss starts at the last marker the file holds."""
        candidates = [value for t, value in self.sent if t >= moment]
        if not candidates:
            raise RuntimeError("no loss marker was sent after the requested moment")
        data = self.aof.read_bytes()
        needle = self._needle(candidates[0])
        at = data.rfind(needle)
        if at < 0:  # the marker never reached the file: Redis lost even more (a postponed AOF write)
            held = next((t for t, value in reversed(self.sent) if t < moment and self._needle(value) in data), None)
            return 0, moment if held is None else held
        end = at + len(needle)  # a plain SET, never inside a script's MULTI ... EXEC block
        with open(self.aof, "r+b") as fh:
            fh.truncate(end)
        return len(data) - end, moment

    @staticmethod
    def _needle(value: str) -> bytes:
        return f"${len(MARK_KEY)}\r\n{MARK_KEY}\r\n${len(value)}\r\n{value}\r\n".encode()


BALLAST_DB = 1  # the database that holds the ballast making Redis load for seconds


@dataclass
class SoakServices:
    """Redis (reached by workers and producer through a TCP proxy on a fixed address, so it
    can come back on another port), PostgreSQL (two servers behind a proxy each, one URL
    naming both: ``postgres_replica``), and the faults' levers on them."""

    data_dir: Path
    redis_port: int = 6397

    def __post_init__(self) -> None:
        self.redis = self._redis(self.redis_port)
        self.postgres_pair = PostgresPair(self.data_dir, "memq_soak")
        self.marker = LossMarker(self.redis.url, self.redis.folder / "appendonly.aof")
        self.proxy = TcpProxy(self.redis_port)
        self.database_url = ""

    def _redis(self, port: int) -> EmbeddedRedis:
        return EmbeddedRedis(
            self.data_dir,
            port,
            folder_name="redis",
            # A rewritten AOF could not be truncated to an earlier state.
            extra_args=("--auto-aof-rewrite-percentage", "0", "--aof-load-truncated", "yes"),
            ignore_file_size_signal=True,  # a full disk (faults_resources) makes it refuse writes, not die
        )

    @property
    def postgres(self) -> EmbeddedPostgres:
        """The PostgreSQL primary (a failover makes the other server it)."""
        return self.postgres_pair.primary

    @property
    def redis_url(self) -> str:
        """Where workers and the producer find Redis: the proxy's fixed address."""
        return self.proxy.url

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.redis.start()
        self.proxy.start()
        self.database_url = self.postgres_pair.start()
        self.marker.start()

    def client(self) -> redis.Redis:
        """The harness' own client, straight to Redis (not through the proxy)."""
        return redis.Redis.from_url(self.redis.url, decode_responses=True, socket_timeout=5)

    def wipe(self) -> None:
        """Start every run from empty services (and a compact AOF)."""
        client = self.client()
        client.flushall()
        self._rewrite_aof(client)
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as conn:
            for table in ("seq_gap", "episode_message", "episodic_memory", "conversation"):
                conn.execute(f"TRUNCATE {table} CASCADE")

    # -- Redis faults --------------------------------------------------------------
    def redis_restart(self) -> None:
        """A clean restart: SHUTDOWN (AOF flushed), start again."""
        self._shutdown()
        self.redis.start()

    def redis_kill(self, lose_last_seconds: float = 0.0) -> tuple[float, int, float]:
        """SIGKILL the server. With ``lose_last_seconds``, also lose every write executed
        after that long before the kill: what a machine crash does to what the kernel had
        not yet flushed under ``appendfsync everysec``. Returns (kill time, bytes cut, the
        moment from which writes are lost: ``lose_last_seconds`` before the kill, or earlier
        when Redis had postponed its AOF writes, ``LossMarker.cut_after``)."""
        pid = self.redis.pid()
        killed_at = time.time()
        if pid:
            os.kill(pid, signal.SIGKILL)
        self._wait_gone()
        if not lose_last_seconds:
            return killed_at, 0, killed_at
        cut, lost_from = self.marker.cut_after(killed_at - lose_last_seconds)
        return killed_at, cut, lost_from

    def redis_start(self) -> None:
        self.redis.start()

    def redis_restart_loading(self, keys: int) -> float:
        """A clean restart of a Redis that holds ``keys`` more keys (in another database),
        so that it answers LOADING for seconds after it comes back; the ballast is removed
        afterwards. Returns how long Redis was loading."""
        client = self.client()
        ballast = redis.Redis.from_url(self.redis.url.rsplit("/", 1)[0] + f"/{BALLAST_DB}", socket_timeout=120)
        ballast.execute_command("DEBUG", "POPULATE", keys, "ballast", 64)  # not in the AOF until it is rewritten
        self._rewrite_aof(client)
        self.marker.sent.clear()  # the AOF before the rewrite is gone: no cut can reach into it
        self._shutdown()
        started = time.monotonic()
        self.redis.start()  # returns once Redis answers PING, i.e. has loaded
        loading = time.monotonic() - started
        ballast.flushdb()
        self._rewrite_aof(client)
        self.marker.sent.clear()
        return loading

    def redis_move(self) -> int:
        """A clean restart on another port; the proxy (the address everybody uses) follows.
        Returns the new port."""
        self._shutdown()
        self.marker.stop()
        port = free_port()
        self.redis = self._redis(port)
        self.redis.start()
        self.proxy.retarget(port)
        self.marker.url = self.redis.url
        self.marker.start()
        return port

    def _rewrite_aof(self, client: redis.Redis) -> None:
        client.bgrewriteaof()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            info = client.info("persistence")
            if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
                return
            time.sleep(0.1)

    def _shutdown(self) -> None:
        """SHUTDOWN (the AOF flushed), and wait until the server is gone."""
        with contextlib.suppress(redis.RedisError):
            self.client().shutdown(nosave=False)
        self._wait_gone()

    def _wait_gone(self) -> None:
        """Until the server is gone and its port free (a killed server closes its socket last)."""
        deadline = time.monotonic() + 10
        while (self.redis.pid() is not None or port_in_use(self.redis.port)) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.redis.pidfile.unlink(missing_ok=True)

    # -- PostgreSQL faults ---------------------------------------------------------
    def postgres_stop(self) -> None:
        self.postgres.stop()

    def postgres_start(self) -> None:
        self.postgres_pair.start_primary()

    def stop(self) -> None:
        self.marker.stop()
        self.proxy.stop()
        if self.redis.pid() is not None:
            with contextlib.suppress(redis.RedisError):
                self.client().shutdown(nosave=True)
            self._wait_gone()
        self.postgres_pair.stop()
