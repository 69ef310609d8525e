"""``memq services up|down|status`` and ``memq migrate``."""

from __future__ import annotations

import click

from memq.shared.embedded import services
from memq.shared.settings import get_settings


@click.group("services")
def services_group() -> None:
    """Start or stop the embedded Redis and PostgreSQL (when REDIS_URL / DATABASE_URL are unset)."""


@services_group.command("up")
def up_cmd() -> None:
    """Start what is needed (idempotent) and print where the services are."""
    urls = services.up(get_settings())
    click.echo(f"redis     {urls.redis_url}{'  (embedded)' if urls.redis_embedded else ''}")
    click.echo(f"postgres  {urls.database_url}{'  (embedded)' if urls.database_embedded else ''}")


@services_group.command("down")
def down_cmd() -> None:
    """Stop the embedded servers (external ones are left alone)."""
    stopped = services.down(get_settings())
    click.echo("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))


@services_group.command("status")
def status_cmd() -> None:
    """Say where the services are, without starting anything."""
    urls = services.resolve_urls(get_settings())
    click.echo(f"redis     {urls.redis_url}")
    click.echo(f"postgres  {urls.database_url}")


@click.command("migrate")
def migrate_cmd() -> None:
    """Bring the database schema to the newest migration (Alembic, files in migrations/).
    Safe to run from several processes at once: one migrates, the others wait for it."""
    from memq.shared.db.migrate import upgrade

    done = upgrade(get_settings())
    if done.migrated:
        click.echo(f"database schema migrated from {done.before or 'empty'} to revision {done.after}")
    else:
        waited = " (after waiting for another process's migration)" if done.waited else ""
        click.echo(f"database schema already at revision {done.after}{waited}")
