"""``memq soak``: the fault-injection soak (see ``memq_lab.soak``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console


@click.command("soak")
@click.option("--quick", is_flag=True, help="The short run `make test` uses (fewer messages, shorter faults).")
@click.option("--conversations", type=int, help="Conversations to spread the load over.")
@click.option("--messages-per-phase", type=int, help="Messages acknowledged per fault phase.")
@click.option("--rate", type=float, help="Messages per second.")
@click.option("--only", multiple=True, help="Run only these faults (names as in the report's JSON).")
@click.option(
    "--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the report as JSON here."
)
@click.option(
    "--data-dir", type=click.Path(file_okay=False, path_type=Path), help="Where the soak's own services live."
)
def soak_cmd(quick, conversations, messages_per_phase, rate, only, json_path, data_dir) -> None:
    """Replay thousands of messages over many conversations through real Redis,
    PostgreSQL, Celery workers and a scripted LLM while injecting faults; print lost,
    duplicated and time to recover per fault, and exit 1 unless nothing was lost."""
    from memq.shared.settings import get_settings
    from memq_lab.soak.faults import ALL
    from memq_lab.soak.runner import SoakConfig, render, run

    config = SoakConfig.quick() if quick else SoakConfig()
    for name, value in (("conversations", conversations), ("messages_per_phase", messages_per_phase), ("rate", rate)):
        if value is not None:
            setattr(config, name, value)
    unknown = set(only) - {f.name for f in ALL}
    if unknown:
        raise click.BadParameter(
            f"unknown fault(s) {sorted(unknown)}; choose from {[f.name for f in ALL]}", param_hint="--only"
        )
    config.only = tuple(only)
    folder = data_dir or get_settings().data_path / "soak"
    console = Console(width=None if sys.stdout.isatty() else 170)
    report = run(config, folder, progress=lambda m: console.print(f"[dim]{m}[/]"))
    render(report, console)
    if json_path:
        json_path.write_text(report.to_json())
    if not report.ok:
        sys.exit(1)
