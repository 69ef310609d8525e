"""Workers ride through routine broker restarts.

1. The stall itself, reproduced deterministically on kombu's own Redis transport: a
   consumer subscribed to a fanout exchange (what a worker's remote control is), Redis
   restarted cleanly and back before the consumer reads again. kombu's stock transport
   then blocks in that read for good (its pub/sub connection is reconnected by redis-py
   without its subscription, and the read has no timeout); memq's transport
   (``memq.shared.broker_transport``) reports the lost connection within seconds, and a new
   connection receives fanout messages again. See docs/broker-restarts.md.
2. The whole system: two real prefork workers, no beat (so no periodic stalled-work
   sweep can be what rescues them), Redis behind a TCP proxy, and Redis restarted while
   the workers are idle, restarted while they are busy with a dataset that takes seconds
   to load, killed with SIGKILL, and brought back on another port behind the same
   address. After each, every worker answers a ping and every message sent so far is
   stored, within a bound; no worker's watchdog reported a stalled event loop.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import pytest
import redis
from kombu import Connection, Consumer, Exchange, Queue
from kombu import Producer as KombuProducer
from kombu.transport.redis import Transport as StockTransport
from processes import own_env
from waiting import wait_until

from memq.shared.broker_transport import Transport as MemqTransport
from memq.shared.embedded.redis_server import EmbeddedRedis, port_in_use
from memq_lab.testing.tcp_proxy import TcpProxy, free_port

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMQ_TEST_REDIS_CLUSTER") == "1", reason="runs its own Redis; once is enough"
)

RECOVERY_BOUND = 60.0  # seconds from the heal until every worker works again and all is stored
BALLAST_KEYS = 1_500_000  # ~1-2 s of LOADING after a restart on this machine


def _wait_gone(server: EmbeddedRedis) -> None:
    """Until the process is gone and its port free (a killed server closes its socket last)."""
    wait_until(
        lambda: server.pid() is None and not port_in_use(server.port),
        10,
        interval=0.02,
        message="Redis did not go away",
    )


def _rewriting_aof(client: redis.Redis) -> bool:
    persistence = client.info("persistence")
    return bool(persistence.get("aof_rewrite_in_progress") or persistence.get("aof_rewrite_scheduled"))


def _restart(server: EmbeddedRedis) -> None:
    with contextlib.suppress(redis.RedisError):
        redis.Redis.from_url(server.url, socket_timeout=5).shutdown(nosave=False)
    _wait_gone(server)
    server.start()  # waits until Redis answers (after it has loaded)


def _fanout_consumer(url: str, transport):
    # The broker options memq used to set: retry_on_timeout makes redis-py retry a failed
    # command once, reconnecting in between, on every broker connection.
    conn = Connection(url, transport=transport, transport_options={"socket_timeout": 5, "retry_on_timeout": True})
    got: list = []
    queue = Queue("restart-probe", Exchange("restart-probe", type="fanout"), auto_delete=True)
    consumer = Consumer(conn.channel(), [queue], callbacks=[lambda body, message: got.append(body)], accept=["json"])
    consumer.consume()
    with contextlib.suppress(TimeoutError):  # the first poll subscribes
        conn.drain_events(timeout=0.3)
    return conn, got


def _drain_in_thread(conn) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        started = time.monotonic()
        try:
            conn.drain_events(timeout=2)
            outcome["result"] = "returned"
        except BaseException as exc:  # what the consumer is told
            outcome["result"] = type(exc).__name__
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_stock_kombu_transport_blocks_forever_after_a_clean_restart(own_redis):
    """The root cause, reproduced: if this ever stops blocking, kombu / redis-py fixed it
    upstream and memq.shared.broker_transport may be retired."""
    conn, _ = _fanout_consumer(own_redis.url, StockTransport)
    _restart(own_redis)
    thread, outcome = _drain_in_thread(conn)
    thread.join(8)
    try:
        assert thread.is_alive() and not outcome, f"kombu's stock transport no longer stalls: {outcome}"
    finally:
        redis.Redis.from_url(own_redis.url).shutdown(nosave=True)  # closes the socket: the read ends
        thread.join(10)
        conn.release()


def test_memq_transport_reports_the_lost_connection_and_resubscribes(own_redis):
    conn, _ = _fanout_consumer(own_redis.url, MemqTransport)
    _restart(own_redis)
    thread, outcome = _drain_in_thread(conn)
    thread.join(10)
    assert not thread.is_alive(), "the consumer's read blocked after a Redis restart"
    assert outcome["result"] != "returned" and outcome["seconds"] < 5, outcome  # a connection error, at once
    conn.release()

    # What Celery's consumer does next: a new connection, subscribed again, receives.
    conn, got = _fanout_consumer(own_redis.url, MemqTransport)
    with Connection(own_redis.url, transport=MemqTransport) as sender:
        fanout = Exchange("restart-probe", type="fanout")
        KombuProducer(sender.channel(), exchange=fanout).publish({"n": 1}, declare=[fanout], serializer="json")

    def received() -> list:
        if not got:
            with contextlib.suppress(TimeoutError):
                conn.drain_events(timeout=0.5)
        return got

    try:
        # the drain itself waits up to half a second for the message
        wait_until(received, 10, interval=0, message="the new subscription received nothing")
    finally:
        conn.release()
    assert got == [{"n": 1}]


# -- the whole system ------------------------------------------------------------------


class Fleet:
    """Two prefork workers (no beat) on a Redis reached through a TCP proxy."""

    def __init__(self, tmp_path: Path, database_url: str, tenant: str):
        self.tmp = tmp_path
        self.redis = EmbeddedRedis(tmp_path, free_port(), folder_name="redis")
        self.redis.start()
        self.proxy = TcpProxy(self.redis.port).start()
        self.tenant = tenant
        self.database_url = database_url
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("MEMQ_", "REDIS_URL", "DATABASE_URL"))},
            "REDIS_URL": self.proxy.url,
            "DATABASE_URL": database_url,
            "MEMQ_TENANT": tenant,
            "MEMQ_DATA_DIR": str(tmp_path / "data"),
            "MEMQ_LOG_FORMAT": "json",
            "MEMQ_LOG_LEVEL": "INFO",
            "MEMQ_WORKER_HEARTBEAT_DIR": str(tmp_path / "heartbeats"),
            "MEMQ_WORKER_STALL_SECONDS": "10",
            "MEMQ_WORKER_STALL_EXIT_SECONDS": "0",
            # Nothing periodic may be what recovers the workers: no beat runs, and the
            # stalled-work sweep would wait for ten minutes.
            "MEMQ_STALLED_AFTER_SECONDS": "600",
            "MEMQ_LOCK_LEASE_SECONDS": "10",
            "MEMQ_DRAIN_MAX_SECONDS": "4",
            "MEMQ_DRAIN_MAX_MESSAGES": "20",
            "HF_HUB_OFFLINE": "1",
            "PYTHONWARNINGS": "ignore",
        }
        self.workers: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def start_workers(self, count: int = 2) -> None:
        from memq.cli.worker_commands import worker_argv

        for i in range(count):
            log = self.tmp / f"worker{i}.log"
            self.logs.append(log)
            with open(log, "ab") as out:
                self.workers.append(
                    subprocess.Popen(
                        worker_argv(concurrency=1, hostname=f"rw{i}@%h", pool="prefork", loglevel="INFO"),
                        env=self.env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )

    def producer(self):
        from memq.producer.client import Producer
        from memq.shared.settings import Settings

        return Producer(Settings(redis_url=self.proxy.url, database_url=self.database_url, tenant=self.tenant))

    def answering(self, app) -> set[str]:
        try:
            replies = app.control.ping(timeout=1.0) or []
        except Exception:
            return set()
        return {next(iter(r)).split("@")[0] for r in replies}

    def restart(self, *, ballast: int = 0) -> None:
        if ballast:
            direct = redis.Redis.from_url(self.redis.url.rsplit("/", 1)[0] + "/1", socket_timeout=120)
            direct.execute_command("DEBUG", "POPULATE", ballast, "ballast", 64)
            direct.bgrewriteaof()
            wait_until(lambda: not _rewriting_aof(direct), 120, message="the AOF rewrite did not end")
        _restart(self.redis)

    def kill(self) -> None:
        pid = self.redis.pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        _wait_gone(self.redis)
        self.redis.pidfile.unlink(missing_ok=True)
        self.redis.start()

    def move(self) -> None:
        with contextlib.suppress(redis.RedisError):
            redis.Redis.from_url(self.redis.url).shutdown(nosave=False)
        _wait_gone(self.redis)
        self.redis = EmbeddedRedis(self.tmp, free_port(), folder_name="redis")
        self.redis.start()
        self.proxy.retarget(self.redis.port)

    def stalls(self) -> int:
        return sum(log.read_bytes().count(b'"worker_stalled"') for log in self.logs)

    def stop(self) -> None:
        for p in self.workers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.workers:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        self.proxy.stop()
        if self.redis.pid() is not None:
            redis.Redis.from_url(self.redis.url).shutdown(nosave=True)


def _stored(database_url: str, tenant: str) -> set[str]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute("SELECT message_id FROM episode_message WHERE tenant_id = %s", (tenant,)).fetchall()
    return {r[0] for r in rows}


@pytest.mark.timeout(600)
def test_workers_resume_within_seconds_after_every_kind_of_restart(tmp_path, service_env, tenant):
    fleet = Fleet(tmp_path, service_env["DATABASE_URL"], tenant)
    sent: list[str] = []
    try:
        fleet.start_workers(2)
        producer = fleet.producer()
        app = producer.celery
        # a ping waits a second for the replies: asked again at once
        wait_until(lambda: fleet.answering(app) == {"rw0", "rw1"}, 180, interval=0, message="the workers did not start")

        def send(round_name: str, conversations: int = 6, per: int = 8) -> None:
            for c in range(conversations):
                batch = [
                    {
                        "role": "user" if i % 2 == 0 else "assistant",
                        "content": f"{round_name} conversation {c} message {i}: planning the spring garden beds",
                        "message_id": f"{round_name}-{c}-{i}",
                    }
                    for i in range(per)
                ]
                for _attempt in range(50):  # the producer may meet Redis mid-restart: send again, same ids
                    try:
                        producer.add_messages(batch, conversation_id=f"{round_name}-{c}")
                        break
                    except Exception:
                        time.sleep(0.2)
                else:
                    raise AssertionError("Redis did not accept messages again")
                sent.extend(m["message_id"] for m in batch)
            for c in range(conversations):
                producer.flush(f"{round_name}-{c}")

        scenarios = [
            ("idle", lambda: fleet.restart(), False),
            ("loading", lambda: fleet.restart(ballast=BALLAST_KEYS), True),
            ("sigkill", fleet.kill, True),
            ("moved", fleet.move, True),
        ]
        timings = {}
        progress: dict = {}

        def recovered() -> bool:
            progress["missing"] = set(sent) - _stored(fleet.database_url, tenant)
            progress["workers"] = fleet.answering(app)
            return not progress["missing"] and progress["workers"] == {"rw0", "rw1"}

        def not_recovered(name: str, healed: float) -> str:
            return (
                f"{name}: after {time.monotonic() - healed:.0f} s, {len(progress['missing'])} messages not stored, "
                f"workers answering: {progress['workers']}; logs in {tmp_path}"
            )

        for name, fault, busy in scenarios:
            if busy:
                send(f"{name}-before")  # drains in flight when the fault hits
            fault()
            healed = time.monotonic()
            send(f"{name}-after")  # and work that arrives once Redis is back
            wait_until(
                recovered,
                RECOVERY_BOUND - (time.monotonic() - healed),  # counted from the heal
                interval=0.5,
                message=functools.partial(not_recovered, name, healed),
            )
            timings[name] = round(time.monotonic() - healed, 1)
        print("recovery seconds:", timings)
        assert fleet.stalls() == 0, f"a worker's event loop stalled; see {fleet.logs}"
        beats = list((tmp_path / "heartbeats").glob("*.alive"))
        assert len(beats) == 2 and all(time.time() - b.stat().st_mtime < 10 for b in beats)
    finally:
        fleet.stop()


def test_beat_rides_through_a_restart_while_redis_loads(tmp_path, own_redis, service_env):
    """The beat renews its RedBeat lock on every tick; a renewal that met a loading Redis
    used to crash the beat (the lock's calls bypass RedBeat's own retries)."""
    from memq.cli.worker_commands import celery_argv

    direct = redis.Redis.from_url(own_redis.url)
    ballast = redis.Redis.from_url(own_redis.url.rsplit("/", 1)[0] + "/1", socket_timeout=120)
    ballast.execute_command("DEBUG", "POPULATE", BALLAST_KEYS, "ballast", 64)
    direct.bgrewriteaof()
    wait_until(lambda: not _rewriting_aof(direct), 120, message="the AOF rewrite did not end")
    env = own_env(
        own_redis.url,
        tmp_path / "data",
        DATABASE_URL=service_env["DATABASE_URL"],
        MEMQ_COLLAPSE_CHECK_SECONDS="1",  # a task every second, nobody consumes them
    )
    log = tmp_path / "beat.log"
    with open(log, "ab") as out:
        beat = subprocess.Popen(
            celery_argv("beat", "-S", "redbeat.RedBeatScheduler", "-l", "INFO"),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def queued() -> int:
            return int(direct.llen("memq.maintenance"))

        def sent_one() -> bool:
            if queued():
                return True
            assert beat.poll() is None, log.read_text()[-3000:]
            return False

        wait_until(sent_one, 60, interval=0.2, message=lambda: log.read_text()[-3000:])
        _restart(own_redis)  # seconds of LOADING; the beat ticks every second meanwhile
        direct = redis.Redis.from_url(own_redis.url)
        before = queued()

        def sends_again() -> bool:
            if queued() > before:
                return True
            assert beat.poll() is None, f"the beat died: {log.read_text()[-3000:]}"
            return False

        wait_until(sends_again, 30, interval=0.2, message="the beat sends no more tasks")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(beat.pid, signal.SIGTERM)
        beat.wait(30)
