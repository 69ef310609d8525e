"""``memq demo``: the whole pipeline on the shipped sample conversation.

Starts the services (embedded unless REDIS_URL / DATABASE_URL are set), migrates,
starts a real Celery worker as a subprocess, replays the sample with a progress
bar, flushes, waits until every message is in an episode, prints the episodes, answers
three questions from memory and shows the manifest.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

if TYPE_CHECKING:
    from memq.memory import Memory

SAMPLE = Path(__file__).parents[1] / "producer" / "samples" / "demo_conversation.jsonl"  # shipped in the package
QUESTIONS = (
    "Where is Alex going on holiday, and with whom?",
    "Which database did we pick for the payments ledger?",
    "What did the seller say about the Cube bike?",
)


@click.command("demo")
@click.option(
    "--file", "path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=SAMPLE, show_default=True
)
@click.option("--detector", default=None, help="Detector profile (default MEMQ_DETECTOR).")
@click.option("--summaries/--no-summaries", default=True, help="Print each episode's summary too.")
@click.option(
    "--ask",
    "questions",
    multiple=True,
    help="Questions to answer from memory at the end (default: three about the sample conversation).",
)
def demo_cmd(path: Path, detector: str | None, summaries: bool, questions: tuple[str, ...]) -> None:
    """Run the pipeline end to end on the sample conversation and show its episodes."""
    import os

    from memq.shared.embedded import services
    from memq.shared.settings import get_settings, reset_settings

    if detector:
        os.environ["MEMQ_DETECTOR"] = detector
        reset_settings()
    settings = get_settings()
    console = Console(width=None if sys.stdout.isatty() else 150)
    urls = services.up(settings)
    console.print(
        f"[bold]services[/] redis {urls.redis_url} · postgres "
        f"{'embedded' if urls.database_embedded else urls.database_url}"
    )

    from memq.cli.actor import command_actor
    from memq.cli.episodes import episodes_table
    from memq.cli.producer_commands import replay_file
    from memq.producer.client import Producer
    from memq.producer.replay import read_jsonl
    from memq.shared.connections import pg_connect
    from memq.shared.db.episodes import list_episodes
    from memq.shared.db.migrate import upgrade
    from memq.shared.forget import forget_conversation
    from memq.worker_process import start_worker, stop_worker, wait_for_worker

    upgrade(settings)
    producer = Producer(settings)
    conversation_ids = sorted({item["conversation_id"] for _, item in read_jsonl(path)})
    with pg_connect(settings, tenant=settings.tenant) as conn:
        for cid in conversation_ids:
            forget_conversation(producer.redis, conn, producer.keys(cid), actor=command_actor())

    llm = f"LLM {settings.llm_model}" if settings.llm_enabled else "no LLM (extractive titles and summaries)"
    console.print(f"[bold]worker[/] starting (detector {settings.detector}, {llm}) ...")
    worker = start_worker(concurrency=2, hostname="demo@%h")
    try:
        wait_for_worker(producer, worker)
        started = time.monotonic()
        counts, conversations = replay_file(producer, path, conversation_id=None, batch_size=50)
        for cid in conversations:
            producer.flush(cid)
        total = sum(counts[k] for k in ("accepted", "clamped"))
        with Progress(
            TextColumn("[bold]segmenting[/] {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
        ) as progress:
            for cid in sorted(conversations):
                task = progress.add_task(cid, total=total)

                def show(status, task=task):
                    progress.update(task, completed=max(0, total - status.inbox - status.buffer - status.segments))

                producer.wait_idle(cid, timeout=600, on_progress=show)
                progress.update(task, completed=total)
        elapsed = time.monotonic() - started
    finally:
        stop_worker(worker)

    with pg_connect(settings, tenant=settings.tenant) as conn:
        for cid in sorted(conversations):
            episodes = list_episodes(conn, settings.tenant, cid)
            console.print(episodes_table(episodes, f"{cid}: {total} messages → {len(episodes)} episodes"))
            if summaries:
                for i, e in enumerate(episodes, start=1):
                    console.print(f"[bold]{i}. {e.title}[/]  [dim]({e.summary_source})[/]\n   {e.summary}")
    console.print(
        f"[green]done[/] in {elapsed:.1f} s: {counts['accepted'] + counts['clamped']} messages accepted, "
        f"{counts['duplicate']} duplicates skipped"
    )
    from memq.memory import Memory

    with Memory.open(settings, pool_size=2) as memory:
        _answer(console, memory, sorted(conversations), questions or (QUESTIONS if path == SAMPLE else ()))
        _manifest(console, memory, sorted(conversations))
    console.print("[dim]next: `make api` serves this over HTTP and MCP (README: Use it from your agent)[/]")


def _manifest(console: Console, memory: Memory, conversations: list[str]) -> None:
    """The manifest an agent would keep in its system prompt (MIRA)."""
    from rich.panel import Panel
    from rich.text import Text

    for cid in conversations:
        result = memory.manifest(cid)
        console.print(Panel(Text(result.text), title=f"[bold]memq manifest[/] {cid}", expand=False))


def _answer(console: Console, memory: Memory, conversations: list[str], questions: tuple[str, ...]) -> None:
    """What an agent would be shown for a few questions: retrieve_memory's markdown."""
    from rich.markdown import Markdown
    from rich.panel import Panel

    for question in questions:
        result = memory.retrieve(question, conversation_ids=conversations, detail="auto", limit=3, max_tokens=350)
        console.print(
            Panel(
                Markdown(result.text.replace("\n", "  \n")),
                title=f"[bold]memq retrieve[/] “{question}”",
                subtitle=f"{result.tokens} tokens · {result.timings_ms['total']:.0f} ms",
                expand=True,
            )
        )
