"""``memq reindex``: re-embed stored messages (those without a vector, or with --all every
one in scope) after an upgrade changed how messages are indexed; with --episodes compute
the episodes' vectors again after an upgrade changed how episodes are indexed."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memq.cli.options import tenant_option
from memq.shared.connections import pg_connect, pg_owner_connect
from memq.shared.db.reindex import ReindexScope, count, count_episodes, reindex_episodes, reindex_messages
from memq.shared.embeddings import get_embedder
from memq.shared.settings import get_settings

if TYPE_CHECKING:
    import psycopg

    from memq.shared.embeddings import Embedder


@click.command("reindex")
@tenant_option
@click.option(
    "--conversation", "conversation_id", metavar="ID", help="Only this conversation (needs --tenant or MEMQ_TENANT)."
)
@click.option(
    "--all", "everything", is_flag=True, help="Re-embed every message in scope, not only those without a vector."
)
@click.option(
    "--batch", type=click.IntRange(1, 10_000), default=256, show_default=True, help="Messages per transaction."
)
@click.option(
    "--episodes",
    is_flag=True,
    help="Compute the episodes' vectors again as episode creation does now (the summary's embedding blended with "
    "its messages'), instead of re-embedding messages.",
)
def reindex_cmd(tenant: str | None, conversation_id: str | None, everything: bool, batch: int, episodes: bool) -> None:
    """Re-embed stored messages (or, with --episodes, episodes) so the vector legs of
    retrieval find them as new ones are found.

    Without --tenant every tenant's memories are in scope. Safe to stop and run again."""
    settings = get_settings()
    if conversation_id is not None and tenant is None:
        tenant = settings.tenant
    scope = ReindexScope(tenant=tenant, conversation_id=conversation_id, missing_only=not everything)
    if episodes:
        _run(
            tenant,
            ("episodes", "re-indexing", "re-indexed", "no episodes in scope"),
            lambda conn: count_episodes(conn, scope),
            lambda conn, embedder, advance: reindex_episodes(
                conn, embedder, scope, settings.episode_summary_weight, batch=min(batch, 256), progress=advance
            ),
        )
    else:
        _run(
            tenant,
            ("messages", "re-embedding", "re-embedded", "nothing to re-embed"),
            lambda conn: count(conn, scope),
            lambda conn, embedder, advance: reindex_messages(conn, embedder, scope, batch=batch, progress=advance),
        )


def _run(
    tenant: str | None,
    labels: tuple[str, str, str, str],
    total: Callable[[psycopg.Connection], int],
    work: Callable[[psycopg.Connection, Embedder, Callable[[int], None]], int],
) -> None:
    """Count what is in scope, then do the work with a progress bar. ``labels``: what,
    the progress verb, the verb of the result line, what to say when there is nothing.
    Without a tenant every tenant's memories are in scope: maintenance, as the owner."""
    what, doing, done_verb, nothing = labels
    settings = get_settings()
    with pg_connect(settings, tenant=tenant) if tenant else pg_owner_connect(settings) as conn:
        conn.autocommit = True
        expected = total(conn)
        if expected == 0:
            click.echo(nothing)
            return
        embedder = get_embedder(settings)
        columns = (TextColumn(f"[bold]{doing}[/] {what}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns) as progress:
            task = progress.add_task(what, total=expected)
            done = work(conn, embedder, lambda n: progress.advance(task, n))
    click.echo(f"{done_verb} {done} {what} with {embedder.name}")
