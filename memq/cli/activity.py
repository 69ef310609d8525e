"""``memq activity``: the tenant's activity log, newest first (who created and revoked keys,
forgot conversations and users, exported and imported, registered and removed webhooks;
docs/isolation.md). Not ``memq audit``, which checks the pipeline's invariants."""

from __future__ import annotations

import json
from datetime import datetime

import click

from memq.cli.options import tenant_option
from memq.cli.output import answer_only_on_stdout
from memq.shared.activity import ACTIONS, Recorded
from memq.shared.paging import PAGE_DEFAULT
from memq.shared.settings import get_settings


def _since(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    from memq.shared.activity import check_since
    from memq.shared.errors import ValidationError

    if value is None:
        return None
    try:
        return check_since(datetime.fromisoformat(value))
    except ValueError as exc:  # not ISO-8601, or without its offset (ValidationError is a ValueError)
        reason = str(exc).removeprefix("since: ") if isinstance(exc, ValidationError) else "is not an ISO-8601 time"
        raise click.BadParameter(f"{value!r} {reason}; e.g. 2026-03-02T09:15:00Z") from None


@click.command("activity")
@tenant_option
@click.option("--json", "as_json", is_flag=True, help="Print the entries as a JSON array.")
@click.option(
    "--limit", default=PAGE_DEFAULT, show_default=True, type=click.IntRange(1, 10_000), help="The newest N entries."
)
@click.option("--action", type=click.Choice(ACTIONS), help="Only this action.")
@click.option("--since", callback=_since, metavar="TIME", help="Only entries at or after TIME (ISO-8601 with Z).")
def activity_cmd(tenant: str | None, as_json: bool, limit: int, action: str | None, since: datetime | None) -> None:
    """The tenant's activity log, newest first: who did what to keys, conversations, users,
    exports, imports and webhooks. Forgotten conversation and user ids show as their hash."""
    from memq.shared.connections import pg_connect
    from memq.shared.db.activity import activity_page

    settings = get_settings()
    tenant = tenant or settings.tenant
    with answer_only_on_stdout(), pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        entries, _ = activity_page(conn, tenant, limit=limit, action=action, since=since)
    if as_json:
        click.echo(json.dumps([e.to_json() for e in entries], indent=2))
        return
    for e in entries:
        click.echo(_line(e))
    if not entries:
        click.echo(f"no activity in tenant {tenant!r}" + (f" for {action}" if action else ""))


def _line(recorded: Recorded) -> str:
    e = recorded.entry
    who = e.actor.name + (f" ({e.actor.detail})" if e.actor.detail else "")
    named = [
        f"{k} {v}"
        for k, v in (
            ("conversation", e.conversation_id),
            ("user", e.user_id),
            ("key", e.key_id),
            ("webhook", e.webhook_id),
        )
        if v
    ]
    counts = ", ".join(f"{k} {v}" for k, v in e.counts.items())
    return "  ".join(p for p in (f"{recorded.at:%Y-%m-%d %H:%M:%S}", e.action, who, *named, counts) if p)
