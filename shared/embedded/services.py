"""Bring the services memq needs up or down, and tell where they are.

``resolve_urls`` is what every process calls: an explicit ``REDIS_URL`` /
``DATABASE_URL`` wins; otherwise the embedded servers' addresses are used, and a
clear error says how to start them when they are not running.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.embedded.postgres_server import EmbeddedPostgres
from shared.embedded.redis_server import EmbeddedRedis
from shared.errors import ServiceError
from shared.settings import Settings


@dataclass(frozen=True)
class ServiceUrls:
    redis_url: str
    database_url: str
    redis_embedded: bool
    database_embedded: bool


def embedded_redis(settings: Settings) -> EmbeddedRedis:
    return EmbeddedRedis(settings.data_path, settings.embedded_redis_port)


def embedded_postgres(settings: Settings) -> EmbeddedPostgres:
    return EmbeddedPostgres(settings.data_path, settings.embedded_database_name)


def up(settings: Settings) -> ServiceUrls:
    """Start whatever embedded server is needed (idempotent) and return the URLs."""
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
    from shared.embedded.redis_cluster import embedded_test_cluster  # started only by the tests' cluster mode

    if embedded_test_cluster(settings.data_path).stop():
        stopped.append("redis test cluster")
    return stopped


def resolve_urls(settings: Settings) -> ServiceUrls:
    """Where Redis and PostgreSQL are, without starting anything."""
    redis_url = settings.redis_url
    if redis_url is None:
        server = embedded_redis(settings)
        if server.pid() is None:
            raise ServiceError(
                "REDIS_URL is not set and the embedded redis-server is not running. "
                "Run `memq services up` (or `make services-up`), or set REDIS_URL."
            )
        redis_url = server.url
    database_url = settings.database_url
    if database_url is None:
        pg = embedded_postgres(settings)
        if not pg.running() or not pg.url_file.exists():
            raise ServiceError(
                "DATABASE_URL is not set and the embedded PostgreSQL is not running. "
                "Run `memq services up` (or `make services-up`), or set DATABASE_URL."
            )
        database_url = pg.url_file.read_text().strip()
    return ServiceUrls(redis_url, database_url, settings.redis_url is None, settings.database_url is None)
