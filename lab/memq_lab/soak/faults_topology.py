"""The soak's faults of the topology around the fleet: a PostgreSQL failover, and a slow or
broken network between workers (and producer) and Redis / PostgreSQL, made by the TCP
proxies everybody reaches them through (``SoakServices``: one in front of Redis, one in
front of each PostgreSQL server, ``postgres_replica``)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

from memq_lab.soak.faults import Fault, Outcome

if TYPE_CHECKING:
    from collections.abc import Iterator

    from memq.shared.settings import Settings
    from memq_lab.soak.faults import SoakContext
    from memq_lab.testing.tcp_proxy import TcpProxy


def _proxies(ctx: SoakContext) -> list[TcpProxy]:
    """Every path from the fleet to a service: Redis', and each PostgreSQL server's."""
    return [ctx.services.proxy, *ctx.services.postgres_pair.proxies]


class PostgresFailover(Fault):
    name = "postgres_failover"
    label = "PostgreSQL failover: a synchronous standby promoted, the primary stopped"
    # Every worker's PostgreSQL session dies at once, and its task is retried after backoff.
    target = 90.0

    def apply(self, ctx):
        pair = ctx.services.postgres_pair
        built = pair.add_sync_standby()
        time.sleep(ctx.timing.failover_hold)  # writes committed through synchronous replication
        # Half the conversations flushed: their events close and their episodes are being
        # written when the primary stops (in flight: redone on the new primary, not half-kept).
        flushed = ctx.driver.conversations[::2]
        before = _episodes(pair.primary_dsn)
        for conv in flushed:
            ctx.driver.producer.flush(conv.id)
        writing = _wait_for_more_episodes(pair.primary_dsn, before, within=10.0)
        without = pair.fail_over()
        return Outcome(
            time.time(),
            notes=f"standby built in {built:.1f} s, {ctx.timing.failover_hold:.0f} s synchronous; "
            f"{len(flushed)} conversations flushed, failed over {writing:.1f} s later while their episodes "
            f"were written; {without:.1f} s without a writable primary, the old one stays stopped",
        )


def _episodes(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute("SELECT count(*) FROM episodic_memory").fetchone()
    return int(row[0]) if row else 0


def _wait_for_more_episodes(dsn: str, before: int, within: float) -> float:
    """Seconds until the primary holds more episodes than ``before`` (at most ``within``)."""
    started = time.monotonic()
    while _episodes(dsn) <= before and time.monotonic() - started < within:
        time.sleep(0.05)
    return time.monotonic() - started


class NetworkLatency(Fault):
    name = "network_latency"
    label = "200 ms added to every round trip to Redis and PostgreSQL"

    def apply(self, ctx):
        each_way = ctx.timing.network_latency / 2
        try:
            for proxy in _proxies(ctx):
                proxy.delay(each_way)
            time.sleep(ctx.timing.latency_hold)
        finally:
            for proxy in _proxies(ctx):
                proxy.delay(0)
        return Outcome(
            time.time(),
            notes=f"{ctx.timing.network_latency * 1000:.0f} ms per round trip for {ctx.timing.latency_hold:.0f} s",
        )


class NetworkBlackhole(Fault):
    name = "network_blackhole"
    label = "Redis and PostgreSQL blackholed (half-open connections, no reset), then healed"
    # Held past every socket timeout: the drains in flight end on their timeouts and are
    # retried; a lock lease or a lost task message waits for the stalled-work sweep.
    target = 90.0

    def apply(self, ctx):
        from memq.shared.settings import get_settings

        settings = get_settings()
        with _blackholed(_proxies(ctx)):
            probes = _probe_calls(settings, hosts=len(ctx.services.postgres_pair.nodes))
            time.sleep(max(0.0, ctx.timing.blackhole_hold - probes.waited))
        if probes.answered:
            raise RuntimeError(f"the blackhole let {' and '.join(probes.answered)} through")
        late = [f"{name} {seconds:.1f} s (limit {limit:.0f} s)" for name, (seconds, limit) in probes.late.items()]
        if late:
            raise RuntimeError(f"a call through the blackhole outlived its timeout: {'; '.join(late)}")
        return Outcome(
            time.time(),
            notes=f"{ctx.timing.blackhole_hold:.0f} s; through it {probes.summary()}",
        )


@contextmanager
def _blackholed(proxies: list[TcpProxy]) -> Iterator[None]:
    try:
        for proxy in proxies:
            proxy.blackhole()
        yield
    finally:  # whatever happened, the path heals: the next phases need it
        for proxy in proxies:
            proxy.heal()


SLACK = 1.0  # seconds a probe may take beyond its timeouts: the time to set up the call and wake its thread
ANSWERED = "answered"  # a probe's outcome when the blackhole let it through


class _Probes:
    """A Redis command and a PostgreSQL connection made through the blackhole, each in a
    thread, by memq's own client factories: each must fail within its configured timeout."""

    def __init__(self) -> None:
        self.ended: dict[str, tuple[float, float, str]] = {}  # name -> (seconds, limit, error)
        self.waited = 0.0

    @property
    def answered(self) -> list[str]:
        return [name for name, (_, _, error) in self.ended.items() if error == ANSWERED]

    @property
    def late(self) -> dict[str, tuple[float, float]]:
        return {name: (s, limit) for name, (s, limit, _) in self.ended.items() if s > limit + SLACK}

    def summary(self) -> str:
        return ", ".join(f"{name} failed after {s:.1f} s ({error})" for name, (s, _, error) in self.ended.items())


def _probe_calls(settings: Settings, hosts: int) -> _Probes:
    """Run the probes and wait for them, at most a little longer than each one's limit: the
    Redis connect and reply timeouts, and the PostgreSQL connect timeout for each of the
    URL's ``hosts`` (libpq tries them one after the other)."""
    from memq.shared.connections import mailbox_client, pg_owner_connect

    probes = _Probes()
    redis_limit = settings.redis_connect_timeout_seconds + settings.redis_socket_timeout_seconds
    pg_limit = float(settings.database_connect_timeout_seconds * hosts)

    def redis_call() -> None:
        mailbox_client(settings).ping()

    def pg_call() -> None:
        with pg_owner_connect(settings, autocommit=True) as conn:
            conn.execute("SELECT 1")

    def run(name: str, call, limit: float, done: threading.Event) -> None:
        started = time.monotonic()
        try:
            call()
            error = ANSWERED
        except Exception as exc:  # the expected outcome: a timeout, named in the notes
            error = type(exc).__name__
        probes.ended[name] = (time.monotonic() - started, limit, error)
        done.set()

    started = time.monotonic()
    events = []
    for name, call, limit in (
        ("a Redis command", redis_call, redis_limit),
        ("a PostgreSQL connection", pg_call, pg_limit),
    ):
        done = threading.Event()
        threading.Thread(target=run, args=(name, call, limit, done), daemon=True).start()
        events.append((name, limit, done))
    for name, limit, done in events:
        if not done.wait(max(0.0, limit + 2 * SLACK - (time.monotonic() - started))):
            probes.ended[name] = (time.monotonic() - started, limit, "still blocked")
    probes.waited = time.monotonic() - started
    return probes
