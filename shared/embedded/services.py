"""Bring the services memq needs up or down, and tell where they are.

``redis_url`` / ``database_url`` are what every process calls, each for the service it
needs (a producer never needs PostgreSQL): an explicit ``REDIS_URL`` / ``DATABASE_URL``
wins; otherwise, in development (``MEMQ_ENV``, the default), the embedded server's
address, with a clear error saying how to start it when it is not running. In production
an unset URL is an error: nothing ever starts or writes to a local server there.
"""

from __future__ import annotations

from dataclasses import dataclass

from memq.shared.embedded.postgres_server import EmbeddedPostgres
from memq.shared.embedded.redis_server import EmbeddedRedis
from memq.shared.errors import ServiceError
from memq.shared.settings import Settings

_SETTING = {"redis": "REDIS_URL", "postgres": "DATABASE_URL"}
_EXAMPLE = {"redis": "redis://redis.internal:6379/0", "postgres": "postgresql://memq:...@db.internal:5432/memq"}


@dataclass(frozen=True)
class ServiceUrls:
    redis_url: str
    database_url: str
    redis_embedded: bool
    database_embedded: bool


def embedded_redis(settings: Settings) -> EmbeddedRedis:
    """The embedded server of ``MEMQ_EMBEDDED_REDIS_PORT``: in ``<data dir>/redis`` on the
    default port, in ``redis-<port>`` on another, so that servers on two ports (a
    developer's on one, the tests' on the default) never share a data folder."""
    port = settings.embedded_redis_port
    default = type(settings).model_fields["embedded_redis_port"].default
    return EmbeddedRedis(settings.data_path, port, folder_name="redis" if port == default else f"redis-{port}")


def embedded_postgres(settings: Settings) -> EmbeddedPostgres:
    return EmbeddedPostgres(
        settings.data_path, settings.embedded_database_name, settings.embedded_postgres_shared_buffers_mb
    )


def _refuse_in_production(settings: Settings, service: str) -> None:
    if settings.env == "production":
        raise ServiceError(
            f"{_SETTING[service]} is not set and MEMQ_ENV=production: production processes never "
            f"start or use an embedded {service} server. Set {_SETTING[service]} (e.g. "
            f"{_SETTING[service]}={_EXAMPLE[service]}), or MEMQ_ENV=development on a developer machine."
        )


def up(settings: Settings) -> ServiceUrls:
    """Start whatever embedded server is needed (idempotent) and return the URLs."""
    if settings.redis_url is None:
        _refuse_in_production(settings, "redis")
    if settings.database_url is None:
        _refuse_in_production(settings, "postgres")
    redis_url = settings.redis_url or embedded_redis(settings).start()
    database_url = settings.database_url or embedded_postgres(settings).start()
    return ServiceUrls(redis_url, database_url, settings.redis_url is None, settings.database_url is None)


def down(settings: Settings) -> list[str]:
    """Stop the embedded servers that are running; return what was stopped."""
    stopped = []
    if embedded_redis(settings).stop():
        stopped.append("redis")
    if embedded_postgres(settings).stop():
        stopped.append("postgres")
    from memq.shared.embedded.redis_cluster import embedded_test_cluster  # started only by the tests' cluster mode

    if embedded_test_cluster(settings.data_path).stop():
        stopped.append("redis test cluster")
    return stopped


def redis_url(settings: Settings) -> str:
    """Where Redis is, without starting anything."""
    if settings.redis_url is not None:
        return settings.redis_url
    _refuse_in_production(settings, "redis")
    server = embedded_redis(settings)
    if server.pid() is None:
        raise ServiceError(
            "REDIS_URL is not set and the embedded redis-server is not running. "
            "Run `memq services up` (or `make services-up`), or set REDIS_URL."
        )
    return server.url


def database_url(settings: Settings) -> str:
    """Where PostgreSQL is, without starting anything."""
    if settings.database_url is not None:
        return settings.database_url
    _refuse_in_production(settings, "postgres")
    pg = embedded_postgres(settings)
    if not pg.running() or not pg.url_file.exists():
        raise ServiceError(
            "DATABASE_URL is not set and the embedded PostgreSQL is not running. "
            "Run `memq services up` (or `make services-up`), or set DATABASE_URL."
        )
    return pg.url_file.read_text().strip()


def resolve_urls(settings: Settings) -> ServiceUrls:
    """Where Redis and PostgreSQL both are, without starting anything."""
    return ServiceUrls(
        redis_url(settings), database_url(settings), settings.redis_url is None, settings.database_url is None
    )
