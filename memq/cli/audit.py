"""``memq audit [--tenant T | --all-tenants] [--flushed] [CONV...]``: prove the
invariants (see ``memq.audit``) and exit 1 on any violation."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.table import Table

from memq.cli.options import tenant_option


@click.command("audit")
@click.argument("conversation_ids", nargs=-1)
@tenant_option
@click.option("--all-tenants", is_flag=True, help="Every tenant's conversations.")
@click.option("--flushed", is_flag=True, help="Also require empty inboxes, open events and waiting segments.")
@click.option("--quiet", is_flag=True, help="Print only violations and the verdict.")
def audit_cmd(
    conversation_ids: tuple[str, ...], tenant: str | None, all_tenants: bool, flushed: bool, quiet: bool
) -> None:
    """Prove from PostgreSQL and Redis that every accepted message is in exactly one
    episode, in order, and that nothing is stuck, lost or hidden in the quarantine."""
    from memq.audit import audit, conversations_in_scope
    from memq.shared.connections import mailbox_client, pg_owner_connect
    from memq.shared.ids import check_conversation_id
    from memq.shared.settings import get_settings

    settings = get_settings()
    client = mailbox_client(settings)
    if all_tenants and (tenant or conversation_ids):
        raise click.UsageError("--all-tenants takes no --tenant and no conversation ids")
    scope_tenant = None if all_tenants else (tenant or settings.tenant)
    with pg_owner_connect(settings, autocommit=True) as conn:
        if conversation_ids:
            assert scope_tenant is not None  # --all-tenants takes no conversation ids
            targets = [
                (scope_tenant, check_conversation_id(c, settings.conversation_id_max_length)) for c in conversation_ids
            ]
        else:
            targets = conversations_in_scope(client, conn, settings, scope_tenant)
        report = audit(client, conn, settings, targets, expect_flushed=flushed)

    console = Console(width=None if sys.stdout.isatty() else 150)
    bad = {f.conversation for f in report.findings}
    if not quiet:
        table = Table(title=f"memq audit: {len(report.summaries)} conversation(s)")
        for col in (
            "conversation",
            "stored",
            "episodes",
            "gaps",
            "open",
            "waiting",
            "inbox",
            "quarantined",
            "accepted",
            "verdict",
        ):
            table.add_column(col, justify="left" if col in ("conversation", "verdict") else "right")
        for s in report.summaries:
            verdict = "[red]FAIL[/]" if s.conversation in bad else "[green]ok[/]"
            table.add_row(
                s.conversation,
                str(s.stored),
                str(s.episodes),
                str(s.gaps),
                str(s.open),
                str(s.waiting),
                str(s.inbox),
                str(s.quarantined),
                str(s.accepted),
                verdict,
            )
        console.print(table)
    for f in report.findings:
        console.print(f"[red]{f.check}[/] {f.conversation}: {f.detail}")
    if report.ok:
        console.print(f"[green]audit passed[/]: {len(report.summaries)} conversation(s), no violation")
        return
    console.print(f"[red]audit failed[/]: {len(report.findings)} violation(s) in {len(bad)} conversation(s)")
    sys.exit(1)
