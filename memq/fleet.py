"""The fleet ``memq up`` runs on one machine: which processes, with which commands.

The same roles as a deployment (deploy/compose.yaml, deploy/k8s): the HTTP API, N Celery
workers, one beat and Flower, each a ``memq`` subcommand. Pure: the plan is data, and the
supervisor in ``memq.cli.up`` starts and stops it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Role:
    name: str
    argv: tuple[str, ...]
    url: str | None = None  # where a person looks at it


def fleet(
    *,
    workers: int,
    concurrency: int,
    host: str,
    api_port: int,
    flower_port: int,
    api: bool = True,
    flower: bool = True,
    python: str = sys.executable,
) -> list[Role]:
    """The processes of a one-machine fleet, in start order (the API first: it migrates)."""
    memq = (python, "-m", "memq")
    roles = []
    if api:
        roles.append(Role("api", (*memq, "api", "--host", host, "--port", str(api_port)), f"http://{host}:{api_port}"))
    roles += [
        Role(f"worker{i}", (*memq, "worker", "-n", f"w{i}@%h", "-c", str(concurrency))) for i in range(1, workers + 1)
    ]
    roles.append(Role("beat", (*memq, "beat")))
    if flower:
        roles.append(
            Role(
                "flower",
                (*memq, "flower", "--port", str(flower_port), f"--address={host}"),
                f"http://{host}:{flower_port}",
            )
        )
    return roles
