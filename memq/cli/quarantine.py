"""``memq quarantine list`` and ``memq quarantine retry``."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click
from rich.console import Console
from rich.table import Table

from memq.cli.options import tenant_option


@click.group("quarantine")
def quarantine_group() -> None:
    """Messages and segments set aside after failing repeatedly (MEMQ_QUARANTINE_AFTER_FAILURES)."""


@quarantine_group.command("list")
@click.argument("conversation_id", required=False)
@tenant_option
@click.option("--all-tenants", is_flag=True, help="Every tenant's quarantine.")
def list_cmd(conversation_id: str | None, tenant: str | None, all_tenants: bool) -> None:
    """List quarantined items with the error that put them there."""
    from memq.shared.connections import mailbox_client
    from memq.shared.mailbox.quarantine import list_quarantined
    from memq.shared.settings import get_settings

    settings = get_settings()
    scope = None if all_tenants else (tenant or settings.tenant)
    items = list_quarantined(mailbox_client(settings), settings, scope, conversation_id)
    console = Console(width=None if sys.stdout.isatty() else 160)
    if not items:
        console.print("quarantine is empty")
        return
    table = Table(title=f"{len(items)} quarantined item(s)")
    for col in ("conversation", "kind", "id", "failures", "since (UTC)", "error"):
        table.add_column(col)
    for q in items:
        since = datetime.fromtimestamp(q.entry.at_us / 1e6, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(
            f"{q.tenant}/{q.conversation_id}", q.entry.kind, q.entry.field, str(q.entry.failures), since, q.entry.error
        )
    console.print(table)


@quarantine_group.command("retry")
@click.argument("conversation_id", required=False)
@click.argument("item", required=False)
@tenant_option
@click.option("--all", "retry_all", is_flag=True, help="Every quarantined item in scope.")
def retry_cmd(conversation_id: str | None, item: str | None, tenant: str | None, retry_all: bool) -> None:
    """Put quarantined items back to work: ITEM (as listed: m:<message id> or s:<episode
    id>) of CONVERSATION_ID, every item of CONVERSATION_ID, or --all."""
    from memq.shared import publisher
    from memq.shared.connections import mailbox_client
    from memq.shared.mailbox.quarantine import list_quarantined, retry_and_publish
    from memq.shared.mailbox.scripts import Scripts
    from memq.shared.settings import get_settings

    if not conversation_id and not retry_all:
        raise click.UsageError("name a conversation (and optionally an item), or pass --all")
    settings = get_settings()
    client = mailbox_client(settings)
    scripts = Scripts.register(client)
    scope = tenant or settings.tenant
    items = [
        q
        for q in list_quarantined(client, settings, scope, conversation_id)
        if item is None or q.entry.field == item or q.entry.id == item
    ]
    if not items:
        raise click.ClickException("nothing in the quarantine matches")
    app = publisher.publishing_app(settings)
    for q in items:
        done = retry_and_publish(client, scripts, settings, app, q.tenant, q.conversation_id, q.entry.field)
        if done is None:
            continue
        click.echo(f"retrying {done.kind} {done.id} of {q.tenant}/{q.conversation_id}")
