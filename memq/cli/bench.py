"""``memq bench``: the benchmark (not a test). Starts what it needs (embedded services,
workers as real processes), prints one table with every figure next to its floor, and
writes JSON and PNG charts under ``.memq/bench/``."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("bench")
@click.option("--quick", is_flag=True, help="A smoke run: every figure, tiny sizes (under a minute).")
@click.option(
    "--scale",
    "scale",
    type=click.Choice(["default", "large"]),
    default="default",
    show_default=True,
    help="default: at most ~15 minutes here; large: 1M stored messages, at most ~60 minutes.",
)
@click.option(
    "--only",
    multiple=True,
    metavar="NAME",
    help="Only this family (ingest, pipeline, retrieval, resources) or measurement; repeatable.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the JSON here (it is always written under .memq/bench/).",
)
@click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("../shared/eval"),
    show_default=True,
    help="Evaluation data for real dialogue text and questions (optional: the "
    "shipped sample is used when it is absent).",
)
def bench_cmd(quick: bool, scale: str, only: tuple[str, ...], json_path: Path | None, data_dir: Path) -> None:
    """Measure ingest, pipeline, scale-out, retrieval at scale and resources."""
    scale = "quick" if quick else scale
    from rich.console import Console

    from memq.bench.charts import write_charts
    from memq.bench.context import SCALES, BenchContext
    from memq.bench.runner import families_for, run, table, write
    from memq.shared.db.migrate import upgrade
    from memq.shared.embedded import services
    from memq.shared.settings import get_settings

    try:
        families = families_for(only)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    settings = get_settings()
    services.up(settings)
    upgrade(settings)
    ctx = BenchContext(
        scale=SCALES[scale],
        settings=settings,
        data_dir=data_dir if data_dir.is_dir() else None,
        out_dir=settings.data_path / "bench",
    )
    if ctx.data_dir is None:
        ctx.console.print(f"[yellow]no evaluation data at {data_dir}: the shipped sample's text only[/]")
    found = run(ctx, families)
    Console(width=200).print(table(found, scale))
    path = write(found, ctx)
    charts = write_charts(found, ctx.out_dir)
    if json_path is not None:
        json_path.write_text(path.read_text())
    click.echo(f"wrote {path}" + "".join(f", {c}" for c in charts))
