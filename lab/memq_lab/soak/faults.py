"""The faults the soak injects. Each ``apply`` runs the whole fault (inject, hold,
heal) while the load keeps flowing in another thread, and says when service was back
and which acknowledgements it may legitimately have lost (only a Redis that loses its
last second of writes may)."""

from __future__ import annotations

import random
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from celery import Celery

    from memq_lab.soak.llm import SoakLLM
    from memq_lab.soak.load import LoadDriver
    from memq_lab.soak.services import SoakServices
    from memq_lab.soak.workers import WorkerPool

log = structlog.get_logger("memq_lab.soak")


@dataclass
class Timing:
    """Fault durations; the quick mode shortens them."""

    postgres_down: float = 30.0
    llm_faulty: float = 20.0
    visibility_timeout: float = 40.0
    kills: int = 3
    between_kills: float = 4.0
    burst_seconds: float = 4.0
    ballast_keys: int = 3_000_000  # about 3 s of LOADING on a 2-core machine
    failover_hold: float = 10.0  # writes through synchronous replication before the failover
    network_latency: float = 0.2  # added to every round trip
    latency_hold: float = 20.0
    blackhole_hold: float = 30.0  # past every client timeout (Redis: 5 + 10 s, PostgreSQL: 10 s a host)
    storage_full_hold: float = 20.0  # Redis at its maxmemory, Redis' or PostgreSQL's disk full: each
    overload_seconds: float = 120.0  # producers at three times the fleet's measured capacity
    calibration_messages: int = 300  # the backlog kept up while the fleet's capacity is measured (overload)
    calibration_seconds: float = 30.0  # how long it is measured


@dataclass
class Outcome:
    healed_at: float
    loss_windows: list[tuple[float, float]] = field(default_factory=list)
    notes: str = ""
    target: float | None = None  # a recovery target the fault worked out from what it measured, else its own


@dataclass
class SoakContext:
    services: SoakServices
    llm: SoakLLM
    pool: WorkerPool
    driver: LoadDriver
    celery: Celery
    timing: Timing
    rng: random.Random = field(default_factory=lambda: random.Random(11))

    def busy_worker(self) -> int:
        """A worker that is running a task right now, if any."""
        try:
            active = self.celery.control.inspect(timeout=1.0).active() or {}
        except Exception:
            active = {}
        names = [w.name for w in self.pool.workers]
        busy = [names.index(n.split("@")[0]) for n, tasks in active.items() if tasks and n.split("@")[0] in names]
        return self.rng.choice(busy) if busy else self.rng.randrange(len(names))


class Fault:
    name = "none"
    label = "no fault (baseline)"
    #: Seconds from the heal until everything acknowledged before it is segmented; a
    #: phase slower than this is reported as a slow recovery (and fails the soak).
    target = 60.0

    def apply(self, ctx: SoakContext) -> Outcome:
        return Outcome(time.time())


class WorkerSigkill(Fault):
    name = "worker_sigkill"
    label = "SIGKILL of workers mid-task, repeatedly"
    # Three workers killed one after another: each reloads its embedding model (~20 s on
    # two loaded cores) while the conversations it held wait out their lock leases.
    target = 90.0

    def apply(self, ctx):
        killed = []
        for _ in range(ctx.timing.kills):
            i = ctx.busy_worker()
            ctx.pool.kill(i, signal.SIGKILL)
            killed.append(i)
            time.sleep(0.5)
            ctx.pool.restart(i)
            time.sleep(ctx.timing.between_kills)
        return Outcome(time.time(), notes=f"killed workers {killed}")


class WorkerSigtermBurst(Fault):
    name = "worker_sigterm_burst"
    label = "SIGTERM of a worker during a burst"

    def apply(self, ctx):
        before = len(ctx.driver.acks)
        ctx.driver.boost = 10.0
        time.sleep(ctx.timing.burst_seconds / 2)
        i = ctx.busy_worker()
        ctx.pool.kill(i, signal.SIGTERM)
        time.sleep(ctx.timing.burst_seconds / 2)
        ctx.driver.boost = 1.0
        ctx.pool.workers[i].wait(60)
        ctx.pool.restart(i)
        burst = len(ctx.driver.acks) - before
        return Outcome(
            time.time(), notes=f"{burst} messages in a 10x burst; worker {i} shut down warm mid-burst, restarted"
        )


class RedisRestart(Fault):
    name = "redis_restart"
    label = "Redis restarted cleanly"

    def apply(self, ctx):
        ctx.services.redis_restart()
        return Outcome(time.time())


class RedisRestartLoading(Fault):
    name = "redis_restart_loading"
    label = "Redis restarted cleanly with a large dataset (seconds of LOADING)"
    # The fault itself is heavy on two cores: writing the ballast, an AOF rewrite of it, the
    # restart that loads it, then its removal and a second rewrite, while the load goes on;
    # measured 49-59 s on a quiet machine. (A stall, the failure this phase exists for,
    # lasts minutes; worker_stalled fails the soak whatever the time.)
    target = 90.0

    def apply(self, ctx):
        loading = ctx.services.redis_restart_loading(ctx.timing.ballast_keys)
        return Outcome(time.time(), notes=f"{ctx.timing.ballast_keys:,} ballast keys, {loading:.1f} s to load")


class RedisMoved(Fault):
    name = "redis_moved"
    label = "Redis restarted on another port behind the same address"

    def apply(self, ctx):
        port = ctx.services.redis_move()
        return Outcome(time.time(), notes=f"now on port {port}, reached through the same proxy address")


class RedisSigkill(Fault):
    name = "redis_sigkill"
    label = "Redis SIGKILL (process only; the kernel keeps the AOF)"

    def apply(self, ctx):
        killed, _, _ = ctx.services.redis_kill()
        time.sleep(0.5)
        ctx.services.redis_start()
        return Outcome(time.time(), notes=f"down {time.time() - killed:.1f} s")


def _power_loss(ctx) -> tuple[float, int, tuple[float, float]]:
    """Redis killed losing its last second of writes, then started again. Returns (kill
    time, AOF bytes cut, the window whose acknowledged messages may be lost). The window
    runs to the restart, not the kill: a reply Redis sent just before it died can reach the
    producer (and be acknowledged) after the kill, while the write it confirms is in the
    lost second; no write can be acknowledged between the kill and the restart."""
    killed, cut, lost_from = ctx.services.redis_kill(lose_last_seconds=1.0)
    time.sleep(0.5)
    down_until = time.time()
    ctx.services.redis_start()
    return killed, cut, (lost_from, down_until)


class RedisPowerLoss(Fault):
    name = "redis_power_loss"
    label = "Redis SIGKILL losing its last second (AOF everysec on a machine crash)"

    def apply(self, ctx):
        killed, cut, window = _power_loss(ctx)
        return Outcome(
            time.time(),
            loss_windows=[window],
            notes=f"the last {killed - window[0]:.1f} s of writes lost ({cut} AOF bytes cut)",
        )


class PostgresStop(Fault):
    name = "postgres_stop"
    label = "PostgreSQL stopped"
    target = 90.0  # the drains that waited for it all run at once

    def apply(self, ctx):
        ctx.services.postgres_stop()
        time.sleep(ctx.timing.postgres_down)
        ctx.services.postgres_start()
        return Outcome(time.time(), notes=f"down {ctx.timing.postgres_down:.0f} s")


class LLMFaults(Fault):
    name = "llm_faults"
    label = "LLM answering 500s, 429s, timeouts, malformed JSON"

    def apply(self, ctx):
        for mode in ("http_500", "http_429", "timeout", "malformed"):
            ctx.llm.set_mode(mode)
            time.sleep(ctx.timing.llm_faulty / 4)
        ctx.llm.set_mode("ok")
        return Outcome(time.time(), notes=f"{ctx.timing.llm_faulty:.0f} s of failing answers")


class VisibilityRedelivery(Fault):
    name = "visibility_redelivery"
    label = "a task outliving the visibility timeout, redelivered"
    target = 90.0  # the frozen worker's conversations wait out their lock leases

    def apply(self, ctx):
        i = ctx.busy_worker()
        ctx.pool.kill(i, signal.SIGSTOP)
        time.sleep(ctx.timing.visibility_timeout + 8)
        ctx.pool.kill(i, signal.SIGCONT)
        time.sleep(2)
        ctx.pool.ensure_running()
        return Outcome(time.time(), notes=f"worker {i} frozen {ctx.timing.visibility_timeout + 8:.0f} s, then resumed")


class Mixed(Fault):
    name = "mixed"
    label = "all of them, overlapping"
    target = 120.0

    def apply(self, ctx):
        t = ctx.timing
        windows: list[tuple[float, float]] = []
        ctx.llm.set_mode("mixed")
        ctx.pool.kill(ctx.busy_worker(), signal.SIGKILL)
        ctx.services.redis_restart()
        i = ctx.busy_worker()
        ctx.pool.kill(i, signal.SIGSTOP)
        ctx.services.postgres_stop()
        time.sleep(t.postgres_down / 2)
        windows.append(_power_loss(ctx)[2])
        ctx.services.postgres_start()
        ctx.pool.kill(i, signal.SIGCONT)
        ctx.pool.kill(ctx.busy_worker(), signal.SIGTERM)
        time.sleep(2)
        ctx.llm.set_mode("ok")
        ctx.pool.ensure_running()
        return Outcome(
            time.time(),
            loss_windows=windows,
            notes="LLM failing, worker killed, frozen and terminated, Redis restarted and power-lost, PostgreSQL down",
        )


from memq_lab.soak.faults_resources import PostgresDiskFull, RedisDiskFull, RedisFull, SustainedOverload  # noqa: E402
from memq_lab.soak.faults_topology import NetworkBlackhole, NetworkLatency, PostgresFailover  # noqa: E402 - they subclass Fault

ALL: list[Fault] = [
    Fault(),
    WorkerSigkill(),
    WorkerSigtermBurst(),
    RedisRestart(),
    RedisRestartLoading(),
    RedisMoved(),
    RedisSigkill(),
    RedisPowerLoss(),
    PostgresStop(),
    LLMFaults(),
    VisibilityRedelivery(),
    PostgresFailover(),
    NetworkLatency(),
    NetworkBlackhole(),
    RedisFull(),
    RedisDiskFull(),
    PostgresDiskFull(),
    SustainedOverload(),
    Mixed(),
]
