"""``memq reindex``: re-embed stored messages (those without a vector, or with --all every
one in scope) after an upgrade changed how messages are indexed."""

from __future__ import annotations

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memq.cli.options import tenant_option
from memq.shared.connections import pg_connect, pg_owner_connect
from memq.shared.db.reindex import ReindexScope, count, reindex_messages
from memq.shared.embeddings import get_embedder
from memq.shared.settings import get_settings


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
def reindex_cmd(tenant: str | None, conversation_id: str | None, everything: bool, batch: int) -> None:
    """Re-embed stored messages so the vector leg of retrieval finds them.

    Without --tenant every tenant's messages are in scope. Safe to stop and run again."""
    settings = get_settings()
    if conversation_id is not None and tenant is None:
        tenant = settings.tenant
    scope = ReindexScope(tenant=tenant, conversation_id=conversation_id, missing_only=not everything)
    # every tenant's messages (no --tenant): maintenance, as the owner
    with pg_connect(settings, tenant=tenant) if tenant else pg_owner_connect(settings) as conn:
        conn.autocommit = True
        total = count(conn, scope)
        if total == 0:
            click.echo("nothing to re-embed")
            return
        embedder = get_embedder(settings)
        columns = (TextColumn("[bold]re-embedding[/] messages"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns) as progress:
            task = progress.add_task("messages", total=total)
            done = reindex_messages(conn, embedder, scope, batch=batch, progress=lambda n: progress.advance(task, n))
    click.echo(f"re-embedded {done} messages with {embedder.name}")
