"""The servers memq runs besides its workers: ``memq api`` (the HTTP API, with the MCP
server at /mcp) and ``memq mcp`` (the MCP server on stdio)."""

from __future__ import annotations

import os
import socket
import tempfile

import click

from memq.cli.options import tenant_option
from memq.mcp_server import tool_names
from memq.shared.settings import get_settings


def port_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now (uvicorn binds it later)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: TIME_WAIT is no conflict
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


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
    from memq.cli.actor import command_actor
    from memq.shared.connections import pg_connect
    from memq.shared.db.migrate import upgrade
    from memq.shared.embedded import services

    settings = get_settings()
    host, port = host or settings.api_host, port or settings.api_port
    if not port_free(host, port):  # before anything slow (services, migrations, the embedding model)
        raise click.ClickException(
            f"port {port} on {host} is in use (another `memq api`?): stop it, or choose another with "
            "--port / MEMQ_API_PORT"
        )
    services.up(settings)
    upgrade(settings)
    if settings.api_auth and settings.env == "production":
        # Replicas come and go: no key file per start; keys are made on purpose.
        click.echo("MEMQ_ENV=production: callers need a key from `memq keys create --tenant T`")
    elif settings.api_auth:
        with pg_connect(settings, tenant=settings.tenant, autocommit=True) as conn:
            _, created = ensure_local_key(settings, conn, command_actor())
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
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # each uvicorn process counts its own requests: they write to files /metrics sums
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="memq-api-metrics-")
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


@click.command(
    "mcp",
    help="Run the MCP server on stdio (for agent frameworks that start it as a subprocess). "
    f"Tools: {', '.join(tool_names())}, in one tenant.",  # from the server's table: cannot drift
)
@tenant_option
def mcp_cmd(tenant: str | None) -> None:
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
