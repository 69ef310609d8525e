"""``memq quota``: a tenant's quotas (messages per day, stored messages): show, set, recount."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from memq.cli.options import tenant_option
from memq.shared.settings import get_settings


@click.group("quota")
def quota_group() -> None:
    """Per-tenant quotas, held by the enqueue script (no producer passes them): messages a
    day (UTC) and stored messages. Defaults: MEMQ_QUOTA_MESSAGES_PER_DAY and
    MEMQ_QUOTA_STORED_MESSAGES (0: no limit); `memq quota set` gives a tenant its own."""


def _mailbox():
    from memq.producer.client import Producer

    producer = Producer(get_settings())
    return producer.redis, producer.scripts, producer.settings


@quota_group.command("show")
@tenant_option
@click.option("--json", "as_json", is_flag=True)
def quota_show(tenant: str | None, as_json: bool) -> None:
    """The tenant's limits and what it has used."""
    from memq.shared.mailbox.quota import usage

    client, _, settings = _mailbox()
    used = usage(client, settings, tenant or settings.tenant)
    if as_json:
        click.echo(json.dumps(asdict(used), indent=2))
        return

    def limit(name: str, value: int | None) -> str:
        text = "no limit" if value is None else f"{value:,}"
        return text + (" (the tenant's own)" if name in used.own else " (the default)")

    click.echo(f"tenant {used.tenant!r}")
    click.echo(f"  messages today   {used.used_today:,} of {limit('messages_per_day', used.messages_per_day)}")
    click.echo(f"  stored messages  {used.stored:,} of {limit('stored_messages', used.stored_messages)}")
    click.echo(f"  leased to shards, not used yet: {used.leased_today:,} today, {used.leased_stored:,} stored")


def _count(value: str | None, option: str) -> int | None:
    if value is None or value == "default":
        return None
    if value == "none":
        return 0
    try:
        count = int(value)
    except ValueError:
        count = -1
    if count < 1:
        raise click.BadParameter("a positive number of messages, 'none' (no limit) or 'default'", param_hint=option)
    return count


@quota_group.command("set")
@tenant_option
@click.option("--messages-per-day", "per_day", metavar="N|none|default", help="Messages the tenant may add a day.")
@click.option("--stored-messages", "stored", metavar="N|none|default", help="Messages the tenant may hold.")
def quota_set(tenant: str | None, per_day: str | None, stored: str | None) -> None:
    """Give the tenant its own limits ('none': no limit; 'default': the settings' again).
    They hold from the next batch: the shards' leases of the old ones are taken back."""
    from memq.shared.mailbox.quota import recount_stored, set_limits, usage

    if per_day is None and stored is None:
        raise click.UsageError("name a limit: --messages-per-day and/or --stored-messages")
    limits: dict[str, int | None] = {}
    if per_day is not None:
        limits["messages_per_day"] = _count(per_day, "--messages-per-day")
    if stored is not None:
        limits["stored_messages"] = _count(stored, "--stored-messages")
    client, scripts, settings = _mailbox()
    tenant = tenant or settings.tenant
    set_limits(client, scripts, settings, tenant, limits)
    used = usage(client, settings, tenant)
    if used.stored_messages is not None and "stored_messages" in limits:  # counted from now on: from the truth
        recount_stored(client, scripts, settings, tenant, _stored(client, settings, tenant))
    click.echo(
        f"tenant {tenant!r}: {used.messages_per_day or 'no limit'} messages a day, "
        f"{used.stored_messages or 'no limit'} stored messages"
    )


@quota_group.command("recount")
@tenant_option
def quota_recount(tenant: str | None) -> None:
    """Count the tenant's stored messages again (PostgreSQL's, and Redis' not yet stored):
    after quotas were first turned on for data that was already there."""
    from memq.shared.mailbox.quota import recount_stored

    client, scripts, settings = _mailbox()
    tenant = tenant or settings.tenant
    stored = _stored(client, settings, tenant)
    recount_stored(client, scripts, settings, tenant, stored)
    click.echo(f"tenant {tenant!r}: {stored:,} stored messages")


def _stored(client, settings, tenant: str) -> int:
    """The tenant's messages: PostgreSQL's, and those Redis holds that it does not yet."""
    from memq.shared.connections import pg_connect
    from memq.shared.mailbox.keys import conversation_keys
    from memq.shared.mailbox.status import queued_messages
    from memq.shared.users import active_conversation_pages

    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM episode_message WHERE tenant_id = %s", (tenant,)).fetchone()
    stored = int(row[0]) if row else 0
    for page in active_conversation_pages(client, settings, tenant):
        stored += sum(queued_messages(client, conversation_keys(settings, tenant, conv)) for conv in page)
    return stored
