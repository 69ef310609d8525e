"""The service's commands: ``memq api`` (the HTTP API with the MCP server at /mcp),
``memq mcp`` (the MCP server on stdio), ``memq keys`` (create, list, revoke bearer keys),
``memq forget``, ``memq manifest`` and ``memq context``."""

from __future__ import annotations

import json

import click

from memq.cli.options import tenant_option
from memq.cli.retrieve import _answer_only_on_stdout, _print
from memq.shared.settings import get_settings


@click.command("api")
@click.option(
    "--host",
    help="Interface to listen on (default MEMQ_API_HOST, 127.0.0.1). See the README before "
    "exposing it beyond loopback.",
)
@click.option("--port", type=int, help="Port (default MEMQ_API_PORT, 8765).")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True, help="uvicorn worker processes.")
def api_cmd(host: str | None, port: int | None, workers: int) -> None:
    """Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs) and the MCP server at /mcp."""
    import uvicorn

    from memq.api.local_key import ensure_local_key, key_file
    from memq.shared.connections import pg_connect
    from memq.shared.db.migrate import upgrade
    from memq.shared.embedded import services

    settings = get_settings()
    host, port = host or settings.api_host, port or settings.api_port
    services.up(settings)
    upgrade(settings)
    if settings.api_auth and settings.env == "production":
        # Replicas come and go: no key file per start; keys are made on purpose.
        click.echo("MEMQ_ENV=production: callers need a key from `memq keys create --tenant T`")
    elif settings.api_auth:
        with pg_connect(settings, autocommit=True) as conn:
            _, created = ensure_local_key(settings, conn)
        click.echo(
            f"{'created' if created else 'using'} the API key for tenant {settings.tenant!r}: {key_file(settings)}"
        )
    else:
        click.secho(
            "MEMQ_API_AUTH=false: every caller is tenant " + repr(settings.tenant) + "; keep this on a trusted network",
            fg="yellow",
            err=True,
        )
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.secho(
            f"listening on {host}: put TLS in front (a reverse proxy) and keep the keys secret", fg="yellow", err=True
        )
    click.echo(f"memq API on http://{host}:{port} (docs /docs, MCP /mcp)")
    uvicorn.run(
        "memq.api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_config=None,
        proxy_headers=True,
        access_log=False,
    )


@click.command("mcp")
@tenant_option
def mcp_cmd(tenant: str | None) -> None:
    """Run the MCP server on stdio (for agent frameworks that start it as a subprocess).
    Tools: retrieve_memory, search_facts, recent_memory, manifest, session_context, in one tenant."""
    from memq.api.services import Services
    from memq.mcp_server import build_server
    from memq.shared.db.migrate import upgrade
    from memq.shared.logging import configure_logging

    settings = get_settings()
    configure_logging(settings.model_copy(update={"log_level": "WARNING"}), force=True)  # stdout is the protocol
    svc = Services.start(settings)
    upgrade(settings)
    try:
        build_server(svc, tenant=tenant or settings.tenant).run("stdio")
    finally:
        svc.close()


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
    with pg_connect(settings, autocommit=True) as conn:
        new, row = create_key(conn, tenant or settings.tenant, name)
    click.echo(new.key)
    click.echo(f"key {row.id} for tenant {row.tenant!r} created; it is shown only now", err=True)


@keys_group.command("list")
@tenant_option
@click.option("--json", "as_json", is_flag=True)
def keys_list(tenant: str | None, as_json: bool) -> None:
    """Keys (ids, tenants, names, when created and revoked); never the keys themselves."""
    from memq.shared.connections import pg_connect
    from memq.shared.db.api_keys import list_keys

    with pg_connect(get_settings(), autocommit=True) as conn:
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
    from memq.shared.connections import pg_connect
    from memq.shared.db.api_keys import revoke_key

    with pg_connect(get_settings(), autocommit=True) as conn:
        row = revoke_key(conn, key_id, tenant)
    if row is None:
        raise click.ClickException(f"no key {key_id!r}" + (f" of tenant {tenant!r}" if tenant else ""))
    click.echo(f"key {row.id} of tenant {row.tenant!r} revoked")


@click.command("forget")
@click.argument("conversation_id")
@tenant_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def forget_cmd(conversation_id: str, tenant: str | None, yes: bool) -> None:
    """Forget a conversation: every episode, message, review note and Redis trace of it."""
    from memq.producer.client import Producer
    from memq.shared.connections import pg_connect
    from memq.shared.errors import Busy
    from memq.shared.forget import forget_conversation
    from memq.shared.ids import check_conversation_id

    settings = get_settings()
    with _answer_only_on_stdout():
        check_conversation_id(conversation_id, settings.conversation_id_max_length)
    if not yes:
        click.confirm(
            f"forget conversation {conversation_id!r} of tenant {tenant or settings.tenant!r} for good?", abort=True
        )
    producer = Producer(settings)
    try:
        with pg_connect(settings, autocommit=True) as conn:
            done = forget_conversation(
                producer.redis, conn, producer.keys(conversation_id, tenant), wait_seconds=settings.forget_wait_seconds
            )
    except Busy as exc:
        raise click.ClickException(str(exc)) from None
    if done.existed:
        click.echo(f"forgot {conversation_id}: {done.episodes} episodes, {done.messages} messages")
    else:
        click.echo(f"nothing to forget: no conversation {conversation_id!r}")


@click.command("manifest")
@click.argument("conversation_id")
@tenant_option
@click.option("--depth", type=int, help="Most entries (default MEMQ_MANIFEST_DEPTH).")
@click.option("--timezone", "tz", help="IANA time zone for days and times (default UTC).")
@click.option("--json", "as_json", is_flag=True)
def manifest_cmd(conversation_id: str, tenant: str | None, depth: int | None, tz: str | None, as_json: bool) -> None:
    """The conversation's episodes as a tree by day, the open segment marked Active."""
    from memq.shared.context.service import manifest

    with _answer_only_on_stdout():
        result = manifest(conversation_id, tenant=tenant, depth=depth, tz=tz, settings=get_settings())
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        click.echo(result.text)


@click.command("context")
@click.argument("conversation_id")
@tenant_option
@click.option("--max-tokens", type=int, help="Budget (default MEMQ_SESSION_MAX_TOKENS).")
@click.option("--timezone", "tz", help="IANA time zone (default UTC).")
@click.option("--json", "as_json", is_flag=True)
def context_cmd(
    conversation_id: str, tenant: str | None, max_tokens: int | None, tz: str | None, as_json: bool
) -> None:
    """What an agent reads at the top of a new session of the conversation."""
    from memq.shared.context.service import session_context

    with _answer_only_on_stdout():
        result = session_context(conversation_id, tenant=tenant, max_tokens=max_tokens, tz=tz, settings=get_settings())
    _print(result.text, result.to_json(), as_json)
