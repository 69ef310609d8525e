"""Worker commands: ``memq worker``, ``memq beat``, ``memq flower`` (thin wrappers
over Celery's own, with memq's queues and scheduler)."""

from __future__ import annotations

import importlib.util
import os
import sys

import click

from memq.shared import tasks

# What the Celery app imports when it loads (the memq[worker] extra); checked before exec so
# that a producer-only install says which extra is missing instead of Celery's traceback.
WORKER_STACK = ("psycopg", "pgvector", "torch", "tokenizers", "litellm", "fsrs", "redbeat")


def require(*modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)


def celery_argv(*args: str) -> list[str]:
    flower = args[:1] == ("flower",)
    require(*WORKER_STACK, *(("flower",) if flower else ()))
    # Flower on kombu's own transport: its Broker page knows brokers by the URL's scheme
    # (memq/worker/monitor_app.py)
    return [sys.executable, "-m", "celery", "-A", "memq.worker.monitor_app" if flower else "memq.worker.app", *args]


def worker_argv(
    concurrency: int | None = None, hostname: str | None = None, pool: str = "prefork", loglevel: str = "INFO"
) -> list[str]:
    argv = celery_argv(
        "worker", "-Q", ",".join(tasks.ALL_QUEUES), "-P", pool, "-l", loglevel, "--without-mingle", "--without-gossip"
    )
    if concurrency:
        argv += ["-c", str(concurrency)]
    if hostname:
        argv += ["-n", hostname]
    return argv


@click.command("worker", context_settings={"ignore_unknown_options": True})
@click.option("-c", "--concurrency", type=int, help="Processes (default MEMQ_WORKER_CONCURRENCY).")
@click.option("-n", "--hostname", help="Worker name, e.g. w1@%h.")
@click.option("--detector", help="Detector profile (sets MEMQ_DETECTOR; see `memq eval --list`).")
@click.option("--verbose", is_flag=True, help="Log every message's boundary score and factors.")
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
def worker_cmd(concurrency, hostname, detector, verbose, extra) -> None:
    """Run a Celery worker on memq's queues."""
    if detector:
        from memq.worker.segmentation.detectors.registry import PROFILES

        if detector not in PROFILES:
            raise click.BadParameter(f"choose one of: {', '.join(PROFILES)}", param_hint="--detector")
        os.environ["MEMQ_DETECTOR"] = detector
    if verbose:
        os.environ["MEMQ_BOUNDARY_VERBOSE"] = "true"
    argv = worker_argv(concurrency, hostname) + list(extra)
    os.execv(argv[0], argv)


@click.command("beat", context_settings={"ignore_unknown_options": True})
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
def beat_cmd(extra) -> None:
    """Run the periodic scheduler (inactivity collapse, stalled-work sweep). RedBeat's
    Redis lock keeps a second beat from duplicating tasks."""
    argv = beat_argv("INFO", *extra)
    os.execv(argv[0], argv)


def beat_argv(loglevel: str = "INFO", *extra: str) -> list[str]:
    from memq.shared.celery_config import BEAT_SCHEDULER

    return celery_argv("beat", "-S", BEAT_SCHEDULER, "-l", loglevel, *extra)


@click.command("flower", context_settings={"ignore_unknown_options": True})
@click.option("--port", default=5555, show_default=True)
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
def flower_cmd(port: int, extra) -> None:
    """Run Flower, Celery's monitor (queue lengths, tasks, Prometheus /metrics)."""
    argv = celery_argv("flower", f"--port={port}", *extra)
    os.execv(argv[0], argv)


@click.command("worker-alive")
@click.option(
    "--max-age", type=float, help="Seconds a heartbeat may be old (default 10 x MEMQ_WORKER_HEARTBEAT_SECONDS)."
)
def worker_alive_cmd(max_age: float | None) -> None:
    """Exit 0 when every worker on this machine (or in this container) has a fresh
    heartbeat file: its event loop turned recently, or it is waiting to reconnect to the
    broker. A liveness probe that needs no broker round trip (see memq.worker.watchdog)."""
    from pathlib import Path

    from memq.shared.settings import get_settings
    from memq.worker.watchdog import heartbeat_age, heartbeat_owner_gone, heartbeat_path

    settings = get_settings()
    if settings.worker_heartbeat_seconds <= 0:
        raise click.ClickException("the watchdog is off (MEMQ_WORKER_HEARTBEAT_SECONDS=0): nothing to check")
    limit = max_age if max_age is not None else 10 * settings.worker_heartbeat_seconds
    folder = heartbeat_path(settings, "x").parent
    files = []
    for path in sorted(Path(folder).glob("*.alive")):
        if heartbeat_owner_gone(path):  # a worker killed outright cannot remove its file
            path.unlink(missing_ok=True)
            click.echo(f"{path.stem}: left by a worker process that is gone; removed")
        else:
            files.append(path)
    if not files:
        raise click.ClickException(
            f"no worker heartbeat in {folder}: is a worker running here (MEMQ_WORKER_HEARTBEAT_DIR)?"
        )
    stale = []
    for path in files:
        age = heartbeat_age(path)
        state = "gone" if age is None else f"{age:.1f} s"
        click.echo(f"{path.stem}: heartbeat {state} old")
        if age is None or age > limit:
            stale.append(path.stem)
    if stale:
        raise click.ClickException(
            f"stalled (heartbeat older than {limit:.0f} s): {', '.join(stale)}; see worker_stalled in its log"
        )
