"""``memq bench``: the benchmark (not a test). Starts what it needs (embedded services,
workers as real processes), prints one table with every figure next to its floor, and
writes JSON and PNG charts under ``.memq/bench/``."""

from __future__ import annotations

from pathlib import Path

import click

from memq_lab import eval_data


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
    help="Only this family (ingest, pipeline, retrieval, read_path, resources) or measurement; repeatable.",
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
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    envvar=eval_data.ENV,
    show_envvar=True,
    help="The public evaluation data sets' folder, for real dialogue text and questions (optional: "
    "without it, the shipped sample's text only).",
)
def bench_cmd(quick: bool, scale: str, only: tuple[str, ...], json_path: Path | None, data_dir: Path | None) -> None:
    """Measure ingest, pipeline, scale-out, retrieval at scale, the read path end to end and resources."""
    scale = "quick" if quick else scale
    from rich.console import Console

    from memq.shared.db.migrate import upgrade
    from memq.shared.embedded import services
    from memq.shared.settings import get_settings
    from memq_lab.bench.charts import write_charts
    from memq_lab.bench.context import SCALES, BenchContext
    from memq_lab.bench.runner import families_for, run, table, write

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
        data_dir=data_dir,
        out_dir=settings.data_path / "bench",
    )
    if data_dir is None:
        ctx.console.print(
            f"[yellow]no evaluation data (--data or {eval_data.ENV}): the shipped sample's text only[/]; "
            "for real dialogue text and questions, a folder holding:"
        )
        ctx.console.print(eval_data.listing(), markup=False, highlight=False)
    found = run(ctx, families)
    Console(width=200).print(table(found, scale))
    path = write(found, ctx)
    charts = write_charts(found, ctx.out_dir)
    if json_path is not None:
        json_path.write_text(path.read_text())
    click.echo(f"wrote {path}" + "".join(f", {c}" for c in charts))
