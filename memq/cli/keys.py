"""``memq keys``: create, list and revoke the HTTP API's bearer keys."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from memq.cli.actor import command_actor
from memq.cli.options import tenant_option
from memq.shared.settings import get_settings

if TYPE_CHECKING:
    import psycopg


@click.group("keys")
def keys_group() -> None:
    """Bearer keys of the HTTP API: one tenant each, several per tenant for rotation."""


@keys_group.command("create")
@tenant_option
@click.option("--name", default="", help="What the key is for (shown in `memq keys list`).")
def keys_create(tenant: str | None, name: str) -> None:
    """Create a key and print it once; only its hash is stored."""
    from memq.shared.connections import pg_connect
    from memq.shared.db.api_keys import create_key
    from memq.shared.db.migrate import upgrade

    settings = get_settings()
    upgrade(settings)
    if len(name) > 200 or "\x00" in name:
        raise click.BadParameter("at most 200 characters, no NUL", param_hint="--name")
    tenant = tenant or settings.tenant
    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        new, row = create_key(conn, tenant, name, actor=command_actor())
    click.echo(new.key)
    click.echo(f"key {row.id} for tenant {row.tenant!r} created; it is shown only now", err=True)


@keys_group.command("list")
@tenant_option
@click.option("--json", "as_json", is_flag=True)
def keys_list(tenant: str | None, as_json: bool) -> None:
    """Keys (ids, tenants, names, when created and revoked); never the keys themselves."""
    from memq.shared.db.api_keys import list_keys

    with _connect(tenant) as conn:
        rows = list_keys(conn, tenant)
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "id": r.id,
                        "tenant": r.tenant,
                        "name": r.name,
                        "created_at": r.created_at.isoformat(),
                        "revoked_at": r.revoked_at.isoformat() if r.revoked_at else None,
                    }
                    for r in rows
                ],
                indent=2,
            )
        )
        return
    for r in rows:
        state = f"revoked {r.revoked_at:%Y-%m-%d %H:%M}" if r.revoked_at else "active"
        click.echo(f"{r.id}  {r.tenant}  {state}  created {r.created_at:%Y-%m-%d %H:%M}  {r.name}")
    if not rows:
        click.echo("no keys")


@keys_group.command("revoke")
@click.argument("key_id")
@tenant_option
def keys_revoke(key_id: str, tenant: str | None) -> None:
    """Revoke a key by its id (from `memq keys list`); the API refuses it within seconds."""
    from memq.shared.db.api_keys import revoke_key

    with _connect(tenant) as conn:
        row = revoke_key(conn, key_id, tenant, actor=command_actor())
    if row is None:
        raise click.ClickException(f"no key {key_id!r}" + (f" of tenant {tenant!r}" if tenant else ""))
    click.echo(f"key {row.id} of tenant {row.tenant!r} revoked")


def _connect(tenant: str | None) -> psycopg.Connection:
    """Scoped to --tenant when given; else the keys of every tenant, as the owner."""
    from memq.shared.connections import pg_connect, pg_owner_connect

    if tenant:
        return pg_connect(get_settings(), tenant=tenant, autocommit=True)
    return pg_owner_connect(get_settings(), autocommit=True)
