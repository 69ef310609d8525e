"""The soak's phases and its report.

Each phase keeps the load flowing in a thread while the main thread applies one fault
(the last phase: all of them, overlapping). From the moment the fault is healed, while the
load goes on, a watcher waits until every message acknowledged before the heal has been
segmented (it is in an open event, a waiting segment or an episode): that wait is the
phase's time to recover, held against the fault's target.
At the end every conversation is flushed, and the producer's acknowledgement log is
compared with what PostgreSQL holds: lost, duplicated, out of order; ``memq audit``'s
checks run over every conversation too.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import structlog

from memq_lab.soak import faults as fault_kinds
from memq_lab.soak.faults import Outcome, SoakContext, Timing
from memq_lab.soak.llm import SoakLLM
from memq_lab.soak.load import LoadDriver
from memq_lab.soak.services import SoakServices
from memq_lab.soak.verify import Verifier
from memq_lab.soak.workers import WorkerPool

log = structlog.get_logger("memq_lab.soak")

TENANT = "soak"


@dataclass
class SoakConfig:
    conversations: int = 50
    # x 19 phases: over 13,000 messages besides the overload's own; 50 s of load each keeps the
    # whole soak under ~25 minutes on 2 cores
    messages_per_phase: int = 750
    # Messages per second: three quarters of what 3 workers on 2 cores sustain with the LLM
    # path, so that a recovery time measures the fault, not a queue that never drains.
    rate: float = 15.0
    workers: int = 3
    timing: Timing = field(default_factory=Timing)
    recovery_timeout: float = 240.0
    redis_port: int = 6397
    only: tuple[str, ...] = ()  # fault names to run (default: all)

    @classmethod
    def quick(cls) -> SoakConfig:
        return cls(
            conversations=12,
            messages_per_phase=90,
            rate=30.0,
            workers=2,
            timing=Timing(
                postgres_down=5.0,
                llm_faulty=4.0,
                visibility_timeout=24.0,
                kills=2,
                between_kills=2.0,
                burst_seconds=2.0,
                ballast_keys=1_500_000,
                failover_hold=2.0,
                latency_hold=5.0,
                blackhole_hold=12.0,
                storage_full_hold=6.0,
                overload_seconds=8.0,
                calibration_messages=100,
                calibration_seconds=6.0,
            ),
            recovery_timeout=150.0,
        )

    def worker_settings(self) -> dict[str, str]:
        t = self.timing
        visibility = int(t.visibility_timeout)
        return {
            "MEMQ_TENANT": TENANT,
            "MEMQ_LOG_FORMAT": "json",
            "MEMQ_LOG_LEVEL": os.environ.get("MEMQ_SOAK_LOG_LEVEL", "WARNING"),
            "MEMQ_STALLED_AFTER_SECONDS": "8",
            "MEMQ_LOCK_LEASE_SECONDS": "8",
            "MEMQ_COLLAPSE_CHECK_SECONDS": "5",
            "MEMQ_LLM_TIMEOUT_SECONDS": "3",
            "MEMQ_LLM_MAX_RETRIES": "1",
            "MEMQ_VISIBILITY_TIMEOUT_SECONDS": str(visibility),
            "MEMQ_TASK_TIME_LIMIT_SECONDS": str(visibility // 2),
            "MEMQ_DRAIN_MAX_SECONDS": str(max(2, visibility // 5)),
            "MEMQ_RETRY_BACKOFF_SECONDS": "0.5",
            "MEMQ_RETRY_BACKOFF_MAX_SECONDS": str(min(5, visibility // 2 - 1)),
            "MEMQ_WORKER_CONCURRENCY": "1",
            # A stalled event loop is counted (worker_stalled in the logs), not restarted away.
            "MEMQ_WORKER_STALL_SECONDS": "20",
            "MEMQ_WORKER_STALL_EXIT_SECONDS": "0",
        }


@dataclass
class PhaseResult:
    fault: str
    label: str
    acknowledged: int = 0
    lost: int = 0
    lost_allowed: int = 0  # acknowledged within what a Redis power loss took (its last second, or more: services.py)
    duplicated: int = 0
    recover_seconds: float | None = None
    target_seconds: float = 60.0
    notes: str = ""
    harness_error: str | None = None

    @property
    def slow(self) -> bool:
        return self.recover_seconds is not None and self.recover_seconds > self.target_seconds


@dataclass
class SoakReport:
    config: dict
    phases: list[PhaseResult]
    order_violations: list[str]
    audit_findings: list[str]
    quarantined: int
    worker_restarts: int
    llm_answers: dict[str, int]
    seconds: float
    stuck: list[str]
    worker_stalls: int = 0

    @property
    def ok(self) -> bool:
        return (
            all(
                p.lost == 0
                and p.duplicated == 0
                and p.recover_seconds is not None
                and not p.slow
                and not p.harness_error
                for p in self.phases
            )
            and not self.worker_stalls
            and not self.order_violations
            and not self.audit_findings
            and not self.stuck
            and self.quarantined == 0
        )

    def to_json(self) -> str:
        data = asdict(self)
        for phase, raw in zip(self.phases, data["phases"]):
            raw["slow"] = phase.slow
        return json.dumps({**data, "ok": self.ok}, indent=2, default=str)


def _environment(config: SoakConfig, services: SoakServices, llm: SoakLLM) -> dict[str, str]:
    env = {
        **os.environ,
        **config.worker_settings(),
        "REDIS_URL": services.redis_url,
        "MEMQ_WORKER_HEARTBEAT_DIR": str(services.data_dir / "heartbeats"),
        "DATABASE_URL": services.database_url,
        "MEMQ_LLM_MODEL": "openai/scripted",
        "MEMQ_LLM_API_BASE": llm.base_url,
        "MEMQ_LLM_API_KEY": "soak",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONWARNINGS": "ignore",
    }
    env.pop("MEMQ_MAILBOX_REDIS_URL", None)
    env.pop("MEMQ_MAILBOX_REDIS_CLUSTER", None)
    return env


def run(config: SoakConfig, data_dir: Path, progress=print) -> SoakReport:
    started = time.monotonic()
    services = SoakServices(data_dir, config.redis_port)
    services.start()
    llm = SoakLLM(timeout_delay=8.0).start()
    env = _environment(config, services, llm)
    os.environ.update({k: v for k, v in env.items() if k.startswith(("MEMQ_", "REDIS_URL", "DATABASE_URL", "LITELLM"))})
    from memq.shared.settings import get_settings, reset_settings

    reset_settings()
    settings = get_settings()
    from memq.shared.connections import forget_urls

    forget_urls()
    from memq.producer.client import Producer
    from memq.shared.db.migrate import upgrade

    upgrade(settings)
    services.wipe()
    pool = WorkerPool(env, data_dir / "logs", count=config.workers)
    try:
        producer = Producer(settings)
        launched = time.time()
        pool.start()
        progress(f"soak: {config.workers} workers starting (models load in each) ...")
        pool.wait_ready(services.client(), settings.key_prefix, launched)
        driver = LoadDriver(producer, config.conversations)
        ctx = SoakContext(services, llm, pool, driver, producer.celery, config.timing)
        from memq.worker.segmentation.detectors.registry import build_detector

        lookahead = build_detector(settings).lookahead
        verifier = Verifier(services.database_url, producer.redis, settings, TENANT, lookahead)
        conversations = [c.id for c in driver.conversations]
        phases: list[PhaseResult] = []
        windows: list[tuple[float, float]] = []
        owners: dict[tuple[float, float], str] = {}  # each loss window's phase
        confirmed: set[str] = set()
        chosen = [f for f in fault_kinds.ALL if not config.only or f.name in config.only]
        for fault in chosen:
            result = PhaseResult(fault.name, fault.label, target_seconds=fault.target)
            progress(f"soak: phase {fault.name}: {fault.label}")
            recovery = Recovery(driver, verifier, conversations, config.recovery_timeout)
            try:
                outcome = _phase(ctx, fault, config, on_healed=lambda o: recovery.watch(o, windows, confirmed))  # noqa: B023 - called by _phase, in this iteration
            except Exception as exc:  # the harness could not apply the fault: say so, restore, go on
                log.exception("soak_fault_failed", fault=fault.name)
                _restore(ctx)
                outcome = Outcome(time.time(), notes=f"[red]fault not applied: {exc}[/]")
                result.harness_error = str(exc)
                recovery.watch(outcome, windows, confirmed)
            windows += outcome.loss_windows
            owners.update((window, fault.name) for window in outcome.loss_windows)
            result.notes = outcome.notes
            result.target_seconds = outcome.target or result.target_seconds
            driver.settle(fault.name)
            result.recover_seconds = recovery.wait()
            if result.recover_seconds is not None:
                confirmed |= recovery.required
            pool.ensure_running()
            phases.append(result)

        progress("soak: flushing every conversation and waiting until all is stored ...")
        driver.settle("final")
        driver.flush_all()
        stuck = verifier.wait_idle(producer, conversations, config.recovery_timeout)
        report = _verify(driver, verifier, phases, owners, producer, settings, conversations)
        report.stuck = stuck
        report.worker_restarts = pool.restarts
        report.worker_stalls = pool.stalls()
        report.llm_answers = dict(llm.answered)
        report.seconds = round(time.monotonic() - started, 1)
        report.config = {**asdict(config), "messages": len(driver.acks), "producer_errors": driver.errors}
        return report
    finally:
        pool.stop()
        llm.stop()
        services.stop()


def _restore(ctx: SoakContext) -> None:
    """Bring every service back, whatever a failed fault left behind."""
    import signal

    ctx.llm.set_mode("ok")
    if ctx.services.redis.pid() is None:
        ctx.services.redis_start()
    if not ctx.services.postgres.running():
        ctx.services.postgres_start()
    for i in range(len(ctx.pool.workers)):
        ctx.pool.kill(i, signal.SIGCONT)
    ctx.pool.ensure_running()


class Recovery:
    """Times a phase's recovery while the load goes on: from the heal until every message
    acknowledged before it (outside a power loss's allowed window) is segmented."""

    def __init__(self, driver: LoadDriver, verifier: Verifier, conversations: list[str], timeout: float):
        self.driver, self.verifier, self.conversations, self.timeout = driver, verifier, conversations, timeout
        self.required: set[str] = set()
        self.seconds: float | None = None
        self._thread: threading.Thread | None = None

    def watch(self, outcome: Outcome, windows: list[tuple[float, float]], confirmed: set[str]) -> None:
        gaps = windows + outcome.loss_windows
        self.timeout = max(self.timeout, 2 * (outcome.target or 0))  # a long drain the fault predicted
        acks = list(self.driver.acks.values())  # the load thread keeps adding
        self.required = {
            a.message_id
            for a in acks
            if a.acked_at < outcome.healed_at and not any(lo <= a.acked_at <= hi for lo, hi in gaps)
        } - confirmed

        def run() -> None:
            if self.verifier.wait_caught_up(self.required, self.conversations, self.timeout) is not None:
                self.seconds = round(max(0.0, time.time() - outcome.healed_at), 1)

        self._thread = threading.Thread(target=run, name="soak-recovery", daemon=True)
        self._thread.start()

    def wait(self) -> float | None:
        if self._thread is not None:
            self._thread.join(self.timeout + 30)
        return self.seconds


def _phase(ctx: SoakContext, fault, config: SoakConfig, on_healed) -> Outcome:
    errors: list[BaseException] = []

    def load() -> None:
        try:
            ctx.driver.run(fault.name, config.messages_per_phase, config.rate)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=load, name=f"load-{fault.name}")
    thread.start()
    time.sleep(0.25 * config.messages_per_phase / config.rate)
    try:
        outcome = fault.apply(ctx)
    finally:  # a fault that failed must not leave its load running into the next phase's
        thread.join()
    on_healed(outcome)
    if errors:
        raise errors[0]
    return outcome


def _verify(
    driver, verifier, phases, windows: dict[tuple[float, float], str], producer, settings, conversations
) -> SoakReport:
    """``windows``: each window of a fault that may lose its last second of writes, and the
    phase of that fault: a message acknowledged in it and not stored is that phase's allowed
    loss, whichever phase sent it (a message of the phase before, settled just before the
    power loss, is lost with it)."""
    stored = verifier.stored()
    stored_ids = {mid for ids in stored.values() for mid in ids}
    duplicated = verifier.duplicated()
    by_phase = {p.fault: p for p in phases}
    for ack in driver.acks.values():
        phase = by_phase.get(ack.phase) or by_phase[phases[-1].fault]
        phase.acknowledged += 1
        if ack.message_id not in stored_ids:
            owner = next((name for (lo, hi), name in windows.items() if lo <= ack.acked_at <= hi), None)
            if owner is not None:
                by_phase[owner].lost_allowed += 1
            else:
                phase.lost += 1
                log.error("soak_lost", message_id=ack.message_id, phase=ack.phase, acked_at=ack.acked_at)
        phase.duplicated += duplicated.get(ack.message_id, 0)

    order: list[str] = []
    for conv in driver.conversations:
        kept = set(stored.get(conv.id, []))
        expected = [m for m in conv.order if m in kept]
        if stored.get(conv.id, []) != expected:
            order.append(conv.id)

    from memq.audit import audit
    from memq.shared.connections import pg_owner_connect
    from memq.shared.mailbox.quarantine import list_quarantined

    with pg_owner_connect(settings, autocommit=True) as conn:
        result = audit(producer.redis, conn, settings, [(TENANT, c) for c in conversations], expect_flushed=True)
    findings = [f"{f.check} {f.conversation}: {f.detail}" for f in result.findings]
    quarantined = len(list_quarantined(producer.redis, settings, TENANT))
    return SoakReport({}, phases, order, findings, quarantined, 0, {}, 0.0, [])


def render(report: SoakReport, console) -> None:
    from rich.table import Table

    table = Table(
        title=f"memq soak: {report.config.get('messages')} messages over "
        f"{report.config.get('conversations')} conversations"
    )
    for col in (
        "fault",
        "acknowledged",
        "lost",
        "lost ≤1 s before kill",
        "duplicated",
        "time to recover (s)",
        "target (s)",
        "notes",
    ):
        table.add_column(col, justify="left" if col in ("fault", "notes") else "right")
    for p in report.phases:
        rec = "[red]not recovered[/]" if p.recover_seconds is None else f"{p.recover_seconds:.1f}"
        if p.slow:
            rec = f"[red]{rec} (slow)[/]"
        lost = f"[red]{p.lost}[/]" if p.lost else "0"
        dup = f"[red]{p.duplicated}[/]" if p.duplicated else "0"
        table.add_row(
            p.label, str(p.acknowledged), lost, str(p.lost_allowed), dup, rec, f"{p.target_seconds:.0f}", p.notes
        )
    console.print(table)
    allowed = sum(p.lost_allowed for p in report.phases)
    console.print(
        f"lost beyond the last second before a Redis power loss: {sum(p.lost for p in report.phases)}; "
        f"lost within it (the documented price of appendfsync everysec): {allowed}"
    )
    console.print(
        f"order violations: {len(report.order_violations)}; quarantined: {report.quarantined}; "
        f"stuck at the end: {len(report.stuck)}; worker restarts: {report.worker_restarts}; "
        f"worker event loops stalled: {report.worker_stalls}; "
        f"LLM answers by mode: {report.llm_answers}; producer errors retried: {report.config.get('producer_errors')}"
    )
    for finding in report.audit_findings[:20]:
        console.print(f"[red]audit[/] {finding}")
    verdict = "[green]soak passed[/]" if report.ok else "[red]soak FAILED[/]"
    console.print(f"{verdict} in {report.seconds:.0f} s")
