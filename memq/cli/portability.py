"""``memq export`` and ``memq import``: a tenant (or one conversation) as a JSON Lines file,
and back into this or another deployment (docs/portability.md)."""

from __future__ import annotations

import itertools
import json
import os
import sys
from contextlib import nullcontext
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memq.cli.actor import command_actor
from memq.cli.options import tenant_option
from memq.cli.output import reading
from memq.shared.settings import get_settings


@click.command("export")
@tenant_option
@click.option("--conversation", "conversation_id", metavar="ID", help="Only this conversation.")
@click.option("--user", "user_id", metavar="ID", help="Only the conversations of this user.")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write to this file (default: stdout)."
)
def export_cmd(tenant: str | None, conversation_id: str | None, user_id: str | None, output: Path | None) -> None:
    """Export a tenant's memory (messages, episodes, facts, reviews) as JSON Lines.

    Streams from one consistent snapshot in constant memory. Redis' in-flight state
    (messages not yet in an episode) and API keys are not exported."""
    partial = output.with_name(output.name + ".partial") if output else None
    columns = (TextColumn("[bold]exporting[/] records"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    stdout = sys.stdout  # the file's lines go here; while memq reads, anything else it prints goes to stderr
    with reading(tenant) as memory:
        chunks = memory.export(conversation_id=conversation_id, user_id=user_id, actor=command_actor())
        total = memory.export_size(conversation_id=conversation_id, user_id=user_id)
        with (
            open(partial, "w", encoding="utf-8") if partial else nullcontext(stdout) as out,
            Progress(*columns, console=Console(stderr=True)) as progress,
        ):
            task = progress.add_task("records", total=total)
            for lines in chunks:
                out.write(lines)
                progress.advance(task, lines.count("\n"))
            out.flush()
    if output and partial:
        os.replace(partial, output)  # a file under the final name is always whole
        click.echo(f"exported tenant {memory.tenant} to {output}", err=True)


def _file_tenant(file: str, first: bytes) -> str | None:
    """The tenant a file was exported from, as its header names it. A file whose first
    line is no export header is refused before anything is opened: it says which file and
    what its first line is instead."""
    from memq.memory.portability.format import FormatError, check_header, parse_line

    try:
        header = parse_line(first, 1)
        check_header(header)
    except FormatError as exc:
        raise click.UsageError(
            f"{file} is not a memq export ({exc}); memq import reads the JSON Lines files `memq export` writes"
        ) from None
    tenant = header.get("tenant")
    return tenant if isinstance(tenant, str) else None


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@tenant_option
@click.option(
    "--batch", type=click.IntRange(1, 100_000), default=1000, show_default=True, help="Records per transaction."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def import_cmd(file: str, tenant: str | None, batch: int, as_json: bool) -> None:
    """Import a file written by `memq export` (idempotent: importing twice changes nothing).

    With --tenant every record goes to that tenant (ids are then derived from it);
    by default to the file's. Vectors are computed again when the file's embedding
    model is not the configured one. A broken record stops the import there: what came
    before it is imported, and the line and the reason are printed."""
    from memq.memory.portability.importer import ImportStopped

    settings = get_settings()
    size = None if file == "-" else os.path.getsize(file)
    columns = (TextColumn("[bold]importing[/]"), BarColumn(), DownloadColumn(), TimeElapsedColumn())
    with open(file, "rb") if file != "-" else nullcontext(sys.stdin.buffer) as stream:
        first = stream.readline()
        source = _file_tenant(file, first)
        target = tenant or source  # by default, the tenant the file was exported from
        with reading(target) as memory, Progress(*columns, console=Console(stderr=True)) as progress:
            task = progress.add_task("bytes", total=size)
            report = memory.import_lines(
                itertools.chain([first], stream),
                batch=batch,
                progress=lambda n: progress.advance(task, n),
                actor=command_actor(),
            )
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        note = ", re-embedded with " + settings.embedding_model if report.reembedded else ""
        click.echo(f"imported into tenant {report.tenant} from {report.source_tenant}: {report.summary()}{note}")
    if report.stopped is not None:
        raise ImportStopped(report)
