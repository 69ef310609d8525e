"""The worker's liveness: a watchdog on the event loop of its main process.

Everything a Celery worker does besides running tasks (consuming, acknowledging, task
time limits, kombu's health checks) happens on one event loop in its main process. If
that loop stops turning, the worker is alive as a process yet does nothing, and says
nothing. The loop ticks a timer every ``MEMQ_WORKER_HEARTBEAT_SECONDS``; a watchdog
thread reads the tick and

- refreshes the worker's **heartbeat file** (``<MEMQ_WORKER_HEARTBEAT_DIR>/<node>.alive``)
  while the loop turns, or while the loop is waiting to reconnect to the broker (Celery's
  consumer retrying a lost connection is doing its job: restarting the worker would not
  help). ``memq worker-alive`` checks the file's age: the liveness probe of a container,
  with no broker round trip;
- logs ``worker_stalled`` (with where the loop is stuck: file, line and function, no
  values) once the loop has not ticked for ``MEMQ_WORKER_STALL_SECONDS``, and
  ``worker_resumed`` when it turns again;
- exits the process (code 70) after ``MEMQ_WORKER_STALL_EXIT_SECONDS`` of stall, so that
  whatever supervises it starts a fresh one (only a real worker process, never a worker
  running in a thread of another program).

A worker shutting down (warm or cold) stops its loop's timers on purpose while the pool
finishes the tasks in flight: that is not a stall, and the heartbeat stays fresh so that
a liveness probe does not kill a warm shutdown half-way.

The decision is the pure ``assess``; the thread and the files are thin around it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import FrameType
from typing import Any

import structlog
from celery import bootsteps

from memq.shared.settings import Settings, get_settings

log = structlog.get_logger("memq.watchdog")

#: Functions of Celery's consumer and kombu that wait for the broker to come back.
BROKER_WAIT = frozenset({"ensure_connected", "ensure_connection", "_ensure_connection", "retry_over_time"})

STALL_EXIT_CODE = 70  # EX_SOFTWARE


class Loop(Enum):
    STARTING = "starting"  # no tick yet
    TURNING = "turning"
    RECONNECTING = "reconnecting"  # not ticking, but waiting for the broker on purpose
    STOPPING = "stopping"  # a warm or cold shutdown: the loop stopped on purpose, tasks finish
    STALLED = "stalled"


def assess(
    now: float, last_tick: float | None, stall_after: float, waiting_for_broker: bool, stopping: bool = False
) -> Loop:
    """What the event loop is doing, from when it last ticked (monotonic seconds)."""
    if last_tick is None:
        return Loop.STARTING
    if now - last_tick < stall_after:
        return Loop.TURNING
    if stopping:
        return Loop.STOPPING
    return Loop.RECONNECTING if waiting_for_broker else Loop.STALLED


def shutting_down() -> bool:
    """Celery was asked to shut down (its signal handlers set these before the consumer
    stops its timers and the pool waits for the tasks in flight)."""
    from celery.worker import state

    return any(flag is not None and flag is not False for flag in (state.should_stop, state.should_terminate))


def is_alive(state: Loop) -> bool:
    return state is not Loop.STALLED


def heartbeat_path(settings: Settings, node: str) -> Path:
    folder = settings.worker_heartbeat_dir or settings.data_path / "heartbeats"
    safe = "".join(ch if ch.isalnum() or ch in "-_.@" else "_" for ch in node) or "worker"
    return folder / f"{safe}.alive"


def where(frame: FrameType | None) -> list[str]:
    """The innermost frames of a stack as ``file:line function`` (no values)."""
    out: list[str] = []
    while frame is not None and len(out) < 8:
        code = frame.f_code
        out.append(f"{os.path.basename(code.co_filename)}:{frame.f_lineno} {code.co_name}")
        frame = frame.f_back
    return out


def _function_names(frame: FrameType | None) -> set[str]:
    names: set[str] = set()
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back
    return names


@dataclass
class Watchdog:
    settings: Settings
    node: str
    last_tick: float | None = None
    loop_thread: int | None = None
    state: Loop = Loop.STARTING
    last_check: float | None = None

    def __post_init__(self) -> None:
        self.path = heartbeat_path(self.settings, self.node)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- called on the event loop ---------------------------------------------------
    def tick(self) -> None:
        self.last_tick = time.monotonic()
        self.loop_thread = threading.get_ident()

    # -- the watchdog thread ------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._run, name="memq-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.path.unlink(missing_ok=True)

    def _run(self) -> None:
        interval = self.settings.worker_heartbeat_seconds
        while not self._stop.wait(interval):
            try:
                self.check(time.monotonic())
            except Exception as exc:  # the watchdog must never take the worker down by accident
                log.warning("watchdog_error", error=type(exc).__name__)

    def check(self, now: float) -> Loop:
        overslept = self.last_check is not None and now - self.last_check > self.settings.worker_stall_seconds / 2
        self.last_check = now
        if overslept and self.last_tick is not None:
            # The watchdog itself did not run for a long while: the whole process was
            # suspended (SIGSTOP, a frozen VM), not its event loop. Judge from now on.
            self.last_tick = max(self.last_tick, now - self.settings.worker_heartbeat_seconds)
        frame = sys._current_frames().get(self.loop_thread) if self.loop_thread else None
        waiting = frame is not None and bool(_function_names(frame) & BROKER_WAIT)
        state = assess(now, self.last_tick, self.settings.worker_stall_seconds, waiting, shutting_down())
        if is_alive(state):
            self.path.write_text(str(os.getpid()))  # the pid lets a check tell a dead worker's leftover
        if state is Loop.STALLED and self.state is not Loop.STALLED:
            log.error(
                "worker_stalled",
                seconds=round(now - (self.last_tick or now), 1),
                node=self.node,
                where=where(frame),
                hint="the event loop of the worker's main process stopped; its heartbeat file is no longer refreshed",
            )
        elif state is not Loop.STALLED and self.state is Loop.STALLED:
            log.warning("worker_resumed", node=self.node, state=state.value)
        self.state = state
        exit_after = self.settings.worker_stall_exit_seconds
        if (
            state is Loop.STALLED
            and exit_after
            and self.last_tick is not None
            and now - self.last_tick >= exit_after
            and self.loop_thread == threading.main_thread().ident
        ):
            log.critical(
                "worker_stall_exit",
                seconds=round(now - self.last_tick, 1),
                node=self.node,
                hint="exiting so that the supervisor starts a fresh worker",
            )
            os._exit(STALL_EXIT_CODE)
        return state


class WatchdogStep(bootsteps.StartStopStep):
    """Consumer step: ticks the watchdog on the event loop for as long as the consumer runs
    (Celery cancels a failed connection's timers and starts the steps again after a
    reconnect, so the tick is registered on every start)."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, c: Any, **kwargs: Any) -> None:
        settings = get_settings()
        self.enabled = settings.worker_heartbeat_seconds > 0 and getattr(c, "timer", None) is not None
        self.watchdog = Watchdog(settings, getattr(c, "hostname", None) or "worker") if self.enabled else None
        self.entry = None

    def start(self, c: Any) -> None:
        if self.watchdog is None:
            return
        self.watchdog.tick()
        self.entry = c.timer.call_repeatedly(self.watchdog.settings.worker_heartbeat_seconds, self.watchdog.tick)
        self.watchdog.start()

    def stop(self, c: Any) -> None:
        if self.entry is not None:
            c.timer.cancel(self.entry)
            self.entry = None

    def shutdown(self, c: Any) -> None:
        self.stop(c)
        if self.watchdog is not None:
            self.watchdog.stop()


def heartbeat_age(path: Path) -> float | None:
    """Seconds since the heartbeat file was refreshed; None when there is none."""
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except FileNotFoundError:
        return None


def heartbeat_owner_gone(path: Path) -> bool:
    """The heartbeat file was left by a worker process that no longer exists (killed)."""
    try:
        pid = int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
