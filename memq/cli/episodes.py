"""``memq episodes CONVERSATION_ID``: the conversation's episodes as a table."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.table import Table

from memq.cli.options import tenant_option
from memq.cli.output import reading
from memq.shared.episode_listing import EpisodeListing


def episodes_table(episodes: list[EpisodeListing], title: str) -> Table:
    table = Table(title=title, show_lines=False, expand=True)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("time range (UTC)", no_wrap=True)
    table.add_column("msgs", justify="right")
    table.add_column("title", ratio=3)
    table.add_column("surprise", justify="right")
    table.add_column("ended by", no_wrap=True)
    table.add_column("summary by", no_wrap=True)
    table.add_column("tools")
    for i, e in enumerate(episodes, start=1):
        same_day = e.start_at.date() == e.end_at.date()
        end = e.end_at.strftime("%H:%M") if same_day else e.end_at.strftime("%m-%d %H:%M")
        table.add_row(
            str(i),
            f"{e.start_at:%m-%d %H:%M}–{end}",
            str(e.message_count),
            e.title,
            f"{e.surprise:.2f}",
            f"{e.boundary_reason} ({e.boundary_source})",
            e.summary_source,
            ", ".join(e.tools_used),
        )
    return table


@click.command("episodes")
@click.argument("conversation_id")
@tenant_option
@click.option("--summaries", is_flag=True, help="Print each summary below the table.")
def episodes_cmd(conversation_id: str, tenant: str | None, summaries: bool) -> None:
    """List a conversation's episodic memories."""
    with reading(tenant) as memory:
        episodes = memory.episodes(conversation_id)
    console = Console(width=None if sys.stdout.isatty() else 150)
    console.print(episodes_table(episodes, f"{len(episodes)} episodes of {conversation_id}"))
    if summaries:
        for i, e in enumerate(episodes, start=1):
            console.print(f"[bold]{i}. {e.title}[/]\n{e.summary}\n")
