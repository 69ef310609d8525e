"""Worker commands: ``memq worker``, ``memq beat``, ``memq flower`` (thin wrappers
over Celery's own, with memq's queues and scheduler)."""

from __future__ import annotations

import os
import sys

import click

from shared import tasks


def celery_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "worker.app", *args]


def worker_argv(concurrency: int | None = None, hostname: str | None = None, pool: str = "prefork", loglevel: str = "INFO") -> list[str]:
    argv = celery_argv("worker", "-Q", ",".join(tasks.ALL_QUEUES), "-P", pool, "-l", loglevel, "--without-mingle", "--without-gossip")
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
        from worker.segmentation.detectors.registry import PROFILES

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
    argv = celery_argv("beat", "-S", "redbeat.RedBeatScheduler", "-l", "INFO", *extra)
    os.execv(argv[0], argv)


@click.command("flower", context_settings={"ignore_unknown_options": True})
@click.option("--port", default=5555, show_default=True)
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
def flower_cmd(port: int, extra) -> None:
    """Run Flower, Celery's monitor (queue lengths, tasks, Prometheus /metrics)."""
    argv = celery_argv("flower", f"--port={port}", *extra)
    os.execv(argv[0], argv)
