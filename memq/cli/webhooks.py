"""``memq webhooks``: a tenant's endpoints (add, list, remove) and their deliveries
(deliveries, retry); see docs/webhooks.md."""

from __future__ import annotations

import json

import click

from memq.cli.actor import command_actor
from memq.cli.options import tenant_option
from memq.shared.settings import get_settings


@click.group("webhooks")
def webhooks_group() -> None:
    """HTTPS endpoints told about new episodes, facts, forgotten and quarantined conversations."""


@webhooks_group.command("add")
@click.argument("url")
@tenant_option
@click.option("--events", "events", multiple=True, help="An event to send (repeat, or comma-separated); default all.")
@click.option("--content", is_flag=True, help="Send titles, summaries and fact texts too, not only ids.")
def add_cmd(url: str, tenant: str | None, events: tuple[str, ...], content: bool) -> None:
    """Register URL and print its signing secret once."""
    from memq.shared.connections import pg_connect
    from memq.shared.db.migrate import upgrade
    from memq.shared.webhooks.destinations import Destinations
    from memq.shared.webhooks.endpoints import add_endpoint

    settings = get_settings()
    upgrade(settings)
    wanted = [e.strip() for item in events for e in item.split(",") if e.strip()]
    with pg_connect(settings, tenant=tenant or settings.tenant, autocommit=True) as conn:
        endpoint, secret = add_endpoint(
            conn,
            tenant or settings.tenant,
            url,
            Destinations(settings.webhook_allowance),
            wanted or None,
            content,
            actor=command_actor(),
        )
    click.echo(json.dumps({**endpoint.to_json(), "secret": secret}, indent=2))
    click.echo("Keep the secret: it is not shown again (it verifies the memq-signature header).", err=True)


@webhooks_group.command("list")
@tenant_option
def list_cmd(tenant: str | None) -> None:
    """The tenant's endpoints (as JSON lines)."""
    from memq.shared.connections import pg_connect
    from memq.shared.webhooks.endpoints import list_endpoints

    settings = get_settings()
    with pg_connect(settings, tenant=tenant or settings.tenant, autocommit=True) as conn:
        for endpoint in list_endpoints(conn, tenant or settings.tenant):
            click.echo(json.dumps(endpoint.to_json()))


@webhooks_group.command("remove")
@click.argument("webhook_id")
@tenant_option
def remove_cmd(webhook_id: str, tenant: str | None) -> None:
    """Remove an endpoint and its deliveries."""
    from memq.shared.connections import pg_connect
    from memq.shared.webhooks.endpoints import remove_endpoint

    settings = get_settings()
    with pg_connect(settings, tenant=tenant or settings.tenant, autocommit=True) as conn:
        if not remove_endpoint(conn, tenant or settings.tenant, webhook_id, actor=command_actor()):
            raise click.ClickException(f"tenant {tenant or settings.tenant!r} has no webhook {webhook_id!r}")
    click.echo(f"removed {webhook_id}")


@webhooks_group.command("deliveries")
@tenant_option
@click.option("--failed", is_flag=True, help="Only the deliveries that failed after their last attempt.")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 10_000))
def deliveries_cmd(tenant: str | None, failed: bool, limit: int) -> None:
    """The latest deliveries, newest first (as JSON lines)."""
    from memq.shared.connections import pg_connect
    from memq.shared.webhooks.deliveries import list_deliveries

    settings = get_settings()
    with pg_connect(settings, tenant=tenant or settings.tenant, autocommit=True) as conn:
        for delivery in list_deliveries(conn, tenant or settings.tenant, failed_only=failed, limit=limit):
            click.echo(json.dumps(delivery.to_json()))


@webhooks_group.command("retry")
@click.argument("delivery_id")
@tenant_option
def retry_cmd(delivery_id: str, tenant: str | None) -> None:
    """Send a delivery again (a failed one gets a new round of attempts)."""
    from memq.shared import publisher
    from memq.shared.connections import pg_connect
    from memq.shared.webhooks.deliveries import reopen

    settings = get_settings()
    with pg_connect(settings, tenant=tenant or settings.tenant, autocommit=True) as conn:
        if not reopen(conn, delivery_id, tenant or settings.tenant):
            raise click.ClickException(f"tenant {tenant or settings.tenant!r} has no delivery {delivery_id!r}")
    publisher.webhook_delivery(publisher.publishing_app(settings), delivery_id)
    click.echo(f"delivery {delivery_id} queued")
