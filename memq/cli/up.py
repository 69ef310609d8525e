"""``memq up``: the deployment's topology on one machine, without Docker.

Starts (embedded unless REDIS_URL / DATABASE_URL are set) Redis and PostgreSQL, migrates,
then runs the API, N workers, one beat and Flower as child processes, says where each is
once it answers, and on one Ctrl-C (or SIGTERM) stops them all: a warm shutdown first
(workers finish or hand back their tasks; acks_late redelivers the rest), then a kill of
whatever is left after the grace period. A child that dies stops the fleet with its name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import urllib.request

import click

from memq.fleet import Role, fleet
from memq.shared.settings import get_settings


def _start(role: Role) -> subprocess.Popen[bytes]:
    # A session of its own: the terminal's Ctrl-C reaches memq up alone, which then stops
    # the children in order (and their own children, through the process group).
    return subprocess.Popen(role.argv, start_new_session=True)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status < 500)
    except OSError:
        return False


def _ready(roles: list[Role], workers: int, ping) -> bool:
    for role in roles:
        if role.name == "api" and role.url and not _answers(role.url + "/healthz"):
            return False
        if role.name == "flower" and role.url and not _answers(role.url + "/healthcheck"):
            return False
    return len(ping()) >= workers


def _stop(procs: dict[str, subprocess.Popen[bytes]], grace: float) -> None:
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs.values():
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
    for p in procs.values():  # the process groups: pool children, anything left behind
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()


@click.command("up")
@click.option("--workers", type=click.IntRange(1, 32), default=2, show_default=True, help="Worker processes.")
@click.option(
    "-c", "--concurrency", type=click.IntRange(1, 64), default=1, show_default=True, help="Pool processes per worker."
)
@click.option("--api-port", type=int, help="Port of the API (default MEMQ_API_PORT).")
@click.option("--flower-port", type=int, default=5555, show_default=True)
@click.option("--no-api", is_flag=True, help="Run without the HTTP API.")
@click.option("--no-flower", is_flag=True, help="Run without Flower.")
@click.option(
    "--grace", type=float, default=60.0, show_default=True, help="Seconds the fleet gets to stop before it is killed."
)
@click.option("--ready-timeout", type=float, default=300.0, show_default=True, help="Seconds to wait for readiness.")
def up_cmd(
    workers: int,
    concurrency: int,
    api_port: int | None,
    flower_port: int,
    no_api: bool,
    no_flower: bool,
    grace: float,
    ready_timeout: float,
) -> None:
    """Run the whole fleet here (API, workers, beat, Flower) until Ctrl-C."""
    from memq.cli.worker_commands import WORKER_STACK, require
    from memq.shared.db.migrate import upgrade
    from memq.shared.embedded import services
    from memq.shared.publisher import publishing_app

    require(*WORKER_STACK, *(() if no_flower else ("flower",)), *(() if no_api else ("fastapi", "uvicorn")))
    settings = get_settings()
    urls = services.up(settings)
    upgrade(settings)  # once, before the processes that would each migrate at start
    roles = fleet(
        workers=workers,
        concurrency=concurrency,
        host=settings.api_host,
        api_port=api_port or settings.api_port,
        flower_port=flower_port,
        api=not no_api,
        flower=not no_flower,
    )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())

    click.echo(f"redis     {urls.redis_url}{'  (embedded)' if urls.redis_embedded else ''}")
    click.echo(f"postgres  {urls.database_url}{'  (embedded)' if urls.database_embedded else ''}")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    died: str | None = None
    try:
        for role in roles:
            procs[role.name] = _start(role)
            click.echo(f"started   {role.name:<8} pid {procs[role.name].pid}")
        app = publishing_app(settings)
        deadline = time.monotonic() + ready_timeout
        ready = False
        while not stop.is_set():
            dead = [name for name, p in procs.items() if p.poll() is not None]
            if dead:
                died = dead[0]
                break
            if not ready:
                if _ready(roles, workers, lambda: app.control.ping(timeout=1.0) or []):
                    ready = True
                    where = ", ".join(f"{r.name} {r.url}" for r in roles if r.url)
                    click.secho(f"ready: {workers} worker(s), 1 beat; {where}. Ctrl-C stops everything.", fg="green")
                elif time.monotonic() > deadline:
                    raise click.ClickException(f"the fleet was not ready within {ready_timeout:g} s")
            stop.wait(1.0)
    finally:
        click.echo("stopping: warm shutdown of every process ...")
        _stop(procs, grace)
        click.echo("stopped")
    if died is not None:
        raise click.ClickException(f"{died} exited with code {procs[died].returncode}; the fleet was stopped")
