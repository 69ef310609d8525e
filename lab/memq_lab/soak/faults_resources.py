"""The soak's resource faults: a Redis that is full, a disk that fills (under Redis' AOF, under
PostgreSQL's tables) and producers sustaining three times what the fleet can do. The levers
are in ``resource_levers``.

A full server must not cost an acknowledged message, and must be plain to whoever meets it:
while it is full the producer refuses with ``StorageFull`` naming the cause and writes
nothing of the refused batch, the workers retry (logging ``storage_full`` with the cause)
and none of them dies; once room is made everything goes on by itself. Each phase checks
that during its hold and fails (raises, after healing) when it does not hold.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

from memq.shared.mailbox.keys import conversation_keys
from memq.shared.storage_full import POSTGRES_DISK_FULL, REDIS_CANNOT_PERSIST, REDIS_OUT_OF_MEMORY
from memq_lab.soak import resource_levers as levers
from memq_lab.soak.faults import Fault, Outcome

if TYPE_CHECKING:
    from collections.abc import Iterator

    from memq_lab.soak.faults import SoakContext

KEEP_FLOWING_RATE = 8.0  # messages/s sent during a hold, beside the phase's own load (which may have ended)
FLUSHED_DURING_HOLD = 6  # conversations flushed when PostgreSQL's disk fills: their episodes must wait for room
# docs/benchmarks.md, "Sizing a fleet": ~0.3 kB of Redis per message waiting in an inbox
DOCUMENTED_BYTES_PER_WAITING = 300
BYTES_PER_WAITING_LIMIT = 1.5 * DOCUMENTED_BYTES_PER_WAITING
INGEST_P99_LIMIT = 1.0  # seconds: accepting a batch never waits on the backlog (one script call)
DRAIN_MARGIN = 30.0  # seconds over the predicted drain the overload may take (issue 58)
OVERLOAD = 3.0  # times the fleet's measured capacity


@contextmanager
def _flowing(ctx: SoakContext, phase: str) -> Iterator[None]:
    """Messages keep coming during the hold, whatever the phase's own load does."""
    stop = threading.Event()
    thread = threading.Thread(
        target=ctx.driver.run,
        args=(phase, 10**9, KEEP_FLOWING_RATE),
        kwargs={"until": stop.is_set},
        name=f"flowing-{phase}",
        daemon=True,
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)


def _settings():
    from memq.shared.settings import get_settings

    return get_settings()


def _written_though_refused(ctx: SoakContext, since: float) -> int:
    """Messages first sent since ``since`` and not settled (so far every attempt was refused)
    that Redis holds anyway: each would be a partial write."""
    settings = _settings()
    with ctx.driver.lock:
        unsettled = [
            (conv.id, m["message_id"])
            for conv in ctx.driver.conversations
            for m in conv.pending
            if ctx.driver.first_sent.get(m["message_id"], 0.0) >= since
        ]
    client = ctx.services.client()
    pipe = client.pipeline(transaction=False)
    for conv, message_id in unsettled:
        pipe.zscore(conversation_keys(settings, ctx.driver.producer.settings.tenant, conv).ids, message_id)
    return sum(score is not None for score in pipe.execute()) if unsettled else 0


def _stopped(ctx: SoakContext) -> list[str]:
    """Worker and beat processes that are no longer running."""
    down = [w.name for w in ctx.pool.workers if not w.alive]
    if ctx.pool.beat is not None and not ctx.pool.beat.alive:
        down.append("beat")
    return down


class _ServerFull(Fault):
    """A server without room for ``storage_full_hold`` seconds while messages keep coming,
    then room again. Subclasses ``inject`` the fault, pushing onto ``undo`` how each step is
    undone as soon as it is taken: leaving the stack makes room, whatever failed."""

    cause = ""  # what the producer's StorageFull and the fleet's storage_full lines must name
    producer_refuses = True  # the producer meets the fault (it writes only to Redis)
    target = 60.0

    def inject(self, ctx: SoakContext, undo: ExitStack) -> str:
        raise NotImplementedError

    def during(self, ctx: SoakContext) -> None:
        """Work that must meet the fault during the hold, beyond the flowing load."""

    def after(self, ctx: SoakContext, healed_at: float) -> str:
        """Checks once room is made (raising when one fails); notes."""
        return ""

    def apply(self, ctx):
        since = levers.log_offsets(ctx.pool)
        failures_before = Counter(ctx.driver.failures)
        with _flowing(ctx, self.name):
            with ExitStack() as undo:
                started = time.time()
                detail = self.inject(ctx, undo)
                self.during(ctx)
                time.sleep(ctx.timing.storage_full_hold)
                partial = _written_though_refused(ctx, started) if self.producer_refuses else 0
            healed_at = time.time()
        refused = Counter(ctx.driver.failures) - failures_before
        after = self.after(ctx, healed_at)
        lines = levers.logged(ctx.pool, since, "storage_full", "cause")
        clear = refused.pop(f"StorageFull({self.cause})", 0)
        problems = []
        if self.producer_refuses and not clear:
            problems.append(f"the producer never refused with StorageFull({self.cause})")
        if refused:
            problems.append(f"the producer failed otherwise: {dict(refused)}")
        if partial:
            problems.append(f"{partial} refused message(s) were written all the same")
        if not lines[self.cause]:
            problems.append(f"no worker or beat logged storage_full ({self.cause})")
        if down := _stopped(ctx):
            problems.append(f"stopped: {', '.join(down)}")
        refusals = f"producer refused {clear} batch(es) with StorageFull({self.cause}), nothing written; " * bool(clear)
        notes = (
            f"{detail}, {ctx.timing.storage_full_hold:.0f} s; {refusals}"
            f"workers and beat logged storage_full({self.cause}) {lines[self.cause]} times{after}"
        )
        if problems:
            raise RuntimeError(f"{'; '.join(problems)} ({notes})")
        return Outcome(healed_at, notes=notes)


class RedisFull(_ServerFull):
    name = "redis_full"
    label = "Redis at maxmemory (noeviction): writes refused, then maxmemory restored"
    cause = REDIS_OUT_OF_MEMORY

    def inject(self, ctx, undo):
        client = ctx.services.client()
        before, used = levers.lower_maxmemory(client)
        undo.callback(levers.restore_maxmemory, client, before)
        return f"maxmemory 1 byte (Redis used {used / 2**20:.1f} MiB)"


class RedisDiskFull(_ServerFull):
    name = "redis_disk_full"
    label = "Redis' disk full: its AOF cannot grow (MISCONF), then room again"
    cause = REDIS_CANNOT_PERSIST

    def inject(self, ctx, undo):
        pid = ctx.services.redis.pid()
        if pid is None or not levers.ignores_file_size_signal(pid):
            raise RuntimeError("the soak's Redis must run with SIGXFSZ ignored (EmbeddedRedis.ignore_file_size_signal)")
        limit = levers.FileSizeLimit(ctx.services.marker.aof.stat().st_size)
        undo.callback(limit.lift)
        limit.apply([pid])
        return f"AOF held at {limit.limit / 2**20:.1f} MiB"

    def after(self, ctx, healed_at):
        client = ctx.services.client()
        deadline = time.monotonic() + 10
        while client.info("persistence").get("aof_last_write_status") != "ok":  # Redis retries on its own
            if time.monotonic() > deadline:
                raise RuntimeError("Redis still cannot write its AOF 10 s after room was made")
            time.sleep(0.1)
        return f"; Redis wrote its AOF again after {time.time() - healed_at:.1f} s"


class PostgresDiskFull(_ServerFull):
    name = "postgres_disk_full"
    label = "PostgreSQL's disk full: a table cannot be extended, then room again"
    cause = POSTGRES_DISK_FULL
    producer_refuses = False  # Redis has room: messages are accepted, episodes wait

    def inject(self, ctx, undo):
        from memq.shared.connections import pg_owner_connect

        settings = _settings()
        undo.callback(_remove_ballast)  # last: after the limit is lifted
        with pg_owner_connect(settings, autocommit=True) as conn:
            limit = levers.FileSizeLimit(levers.wal_segment_bytes(conn))  # WAL segments must stay writable
            ballast = levers.grow_messages_table(conn, limit.limit + 2**20, settings.embedding_dim)
            postmaster = levers.postmaster_pid(ctx.services.postgres.folder)
            undo.callback(_lift_from, limit, postmaster)
            limit.apply([postmaster])  # new sessions inherit it
            limit.apply(levers.writing_backends(conn))
        rows = f" after {ballast:,} ballast rows" if ballast else ""
        return f"no file past {limit.limit / 2**20:.0f} MiB (a WAL segment){rows}"

    def during(self, ctx):
        # Episodes must be written during the hold, whatever the load: flushing closes events.
        for conv in ctx.rng.sample(ctx.driver.conversations, min(FLUSHED_DURING_HOLD, len(ctx.driver.conversations))):
            ctx.driver.producer.flush(conv.id)

    def after(self, ctx, healed_at):
        waiting = _segments_waiting(ctx)
        deadline = time.monotonic() + self.target
        while waiting and time.monotonic() < deadline:
            time.sleep(0.5)
            waiting &= _segments_waiting(ctx)
        if waiting:
            raise RuntimeError(f"{len(waiting)} segment(s) still wait for their episodes {self.target:.0f} s after")
        return f"; every episode that waited written {time.time() - healed_at:.1f} s after"


def _lift_from(limit: levers.FileSizeLimit, postmaster: int) -> None:
    """The postmaster's limit first (no session forked from then on inherits it), then every
    process it forked meanwhile."""
    limit.lift()
    limit.lift(also=levers.children(postmaster))


def _remove_ballast() -> None:
    from memq.shared.connections import pg_owner_connect

    with pg_owner_connect(_settings(), autocommit=True) as conn:
        levers.remove_ballast(conn)


def _segments_waiting(ctx: SoakContext) -> set[tuple[str, str]]:
    """(conversation, segment id) of every closed segment waiting for its episode."""
    settings, tenant = _settings(), ctx.driver.producer.settings.tenant
    client = ctx.services.client()
    pipe = client.pipeline(transaction=False)
    for conv in ctx.driver.conversations:
        pipe.hkeys(conversation_keys(settings, tenant, conv.id).segments)
    return {(conv.id, seg) for conv, ids in zip(ctx.driver.conversations, pipe.execute()) for seg in ids}


class SustainedOverload(Fault):
    name = "sustained_overload"
    label = "producers at 3x the fleet's measured capacity"
    target = 120.0  # used only when no capacity could be measured: the phase predicts its own

    def apply(self, ctx):
        settings = _settings()
        client = ctx.driver.producer.redis
        conversations = [c.id for c in ctx.driver.conversations]
        capacity = self._calibrate(ctx, client, settings)
        rate = OVERLOAD * capacity
        seconds = ctx.timing.overload_seconds
        backlog_before = levers.inbox_backlog(client, settings)
        acked_before = len(ctx.driver.acks)
        latencies: list[float] = []
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            if len(ctx.driver.acks) - acked_before < rate * elapsed:  # the phase's own load counts too
                sent = time.monotonic()
                ctx.driver.send_batch(self.name)
                latencies.append(time.monotonic() - sent)
            else:
                time.sleep(0.005)
        healed_at = time.time()
        ingested = len(ctx.driver.acks) - acked_before
        backlog = levers.inbox_backlog(client, settings)
        tenant = ctx.driver.producer.settings.tenant
        per_message = levers.bytes_per_waiting_message(client, settings, tenant, conversations)
        grown, predicted = backlog - backlog_before, ingested - capacity * seconds
        # The drain is predicted from the capacity the overload itself showed: the fleet slows as
        # PostgreSQL's vector index grows (docs/benchmarks.md), tens of thousands of rows here.
        under_load = max(0.1, (ingested - grown) / seconds)
        drain = backlog / under_load
        p50, p99 = _percentiles(latencies)
        notes = (
            f"capacity {capacity:.1f} msg/s ({ctx.timing.calibration_seconds:.0f} s with a backlog; "
            f"{under_load:.1f} under the overload), {ingested} messages at "
            f"{ingested / seconds:.1f} msg/s for {seconds:.0f} s: backlog +{grown} (sizing table: +{predicted:.0f}), "
            f"Redis {per_message:.0f} B per waiting message (documented ~{DOCUMENTED_BYTES_PER_WAITING}), "
            f"ingest p50 {p50 * 1000:.1f} ms p99 {p99 * 1000:.1f} ms; "
            f"drain of {backlog} predicted {drain:.0f} s (target +{DRAIN_MARGIN:.0f})"
        )
        problems = []
        if not 0.5 * predicted <= grown <= 1.5 * predicted:
            problems.append("the backlog grew off the sizing table's prediction")
        if per_message > BYTES_PER_WAITING_LIMIT:
            problems.append(f"Redis holds over {BYTES_PER_WAITING_LIMIT:.0f} B per waiting message")
        if p99 > INGEST_P99_LIMIT:
            problems.append(f"ingest p99 over {INGEST_P99_LIMIT:.0f} s")
        if down := _stopped(ctx):
            problems.append(f"stopped: {', '.join(down)}")
        if problems:
            raise RuntimeError(f"{'; '.join(problems)} ({notes})")
        return Outcome(healed_at, notes=notes, target=round(drain + DRAIN_MARGIN))

    def _calibrate(self, ctx: SoakContext, client, settings) -> float:
        """The fleet's sustained capacity in messages/s: a backlog of at least
        ``calibration_messages`` kept up for ``calibration_seconds``, and the rate at which it
        is taken (messages acknowledged less those still waiting) over the window's last two
        thirds, once episode creation runs beside the drains as it does under any backlog (a
        burst alone measured segmentation before its episodes: half as much again)."""
        floor, seconds = ctx.timing.calibration_messages, ctx.timing.calibration_seconds
        samples: list[tuple[float, int]] = []  # (when, messages taken so far)
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            waiting = levers.inbox_backlog(client, settings)
            acked = len(ctx.driver.acks)
            if elapsed >= seconds / 3:
                samples.append((time.monotonic(), acked - waiting))
            while len(ctx.driver.acks) - acked < floor - waiting:
                ctx.driver.send_batch(self.name)
            time.sleep(0.25)
        (t0, taken0), (t1, taken1) = samples[0], samples[-1]
        return max(0.1, (taken1 - taken0) / (t1 - t0))


def _percentiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return (values[0], values[0]) if values else (0.0, 0.0)
    cuts = statistics.quantiles(values, n=100)
    return statistics.median(values), cuts[98]
