"""Clients for Redis and PostgreSQL, built from settings and the resolved service URLs.

Two Redis roles: the Celery broker (always a plain Redis at ``REDIS_URL``; kombu has
no Redis Cluster transport) and the mailbox, the per-conversation queues and state
that scale with traffic, at ``MEMQ_MAILBOX_REDIS_URL`` when set (optionally a Redis
Cluster), else on the broker's Redis.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, TypeAlias

import redis
from redis.cluster import RedisCluster

from memq.shared.client_timeouts import postgres_options, redis_options
from memq.shared.embedded import services
from memq.shared.settings import Settings, SettingsKey, by_value, get_settings

if TYPE_CHECKING:  # PostgreSQL's driver is the worker's and API's (memq[worker]), not the producer's
    import psycopg

# Made with decode_responses=True: replies are str where redis-py's types say bytes | str,
# so the callers that need str cast them.
MailboxClient: TypeAlias = redis.Redis | RedisCluster


@functools.lru_cache(maxsize=8)
def _redis_url(key: SettingsKey) -> str:
    return services.redis_url(key.settings)


@functools.lru_cache(maxsize=8)
def _database_url(key: SettingsKey) -> str:
    return services.database_url(key.settings)


def redis_url(settings: Settings | None = None) -> str:
    """The broker's Redis URL (REDIS_URL, or the embedded server's in development)."""
    return _redis_url(by_value(settings or get_settings()))


def database_url(settings: Settings | None = None) -> str:
    """PostgreSQL's URL (DATABASE_URL, or the embedded server's in development)."""
    return _database_url(by_value(settings or get_settings()))


def forget_urls() -> None:
    """Forget the resolved URLs (after the embedded servers moved, e.g. in the soak)."""
    _redis_url.cache_clear()
    _database_url.cache_clear()


def redis_client(settings: Settings | None = None) -> redis.Redis:
    """The broker's Redis, for short commands (no blocking calls: every reply is awaited at
    most ``MEMQ_REDIS_SOCKET_TIMEOUT_SECONDS``)."""
    settings = settings or get_settings()
    return redis.Redis.from_url(redis_url(settings), decode_responses=True, **redis_options(settings))


def mailbox_client(settings: Settings | None = None) -> MailboxClient:
    """The mailbox's Redis: a ``RedisCluster`` when ``MEMQ_MAILBOX_REDIS_CLUSTER`` is set."""
    settings = settings or get_settings()
    url = settings.mailbox_redis_url or redis_url(settings)
    if settings.mailbox_redis_cluster:
        return RedisCluster.from_url(url, decode_responses=True, **redis_options(settings))
    return redis.Redis.from_url(url, decode_responses=True, **redis_options(settings))


def _pg(settings: Settings, autocommit: bool, timeouts: dict[str, int] | None = None) -> psycopg.Connection:
    """``timeouts``: PostgreSQL settings in milliseconds for this session, e.g.
    ``{"statement_timeout": 5000, "lock_timeout": 5000}``."""
    import psycopg
    from pgvector.psycopg import register_vector

    options = " ".join(f"-c {name}={int(ms)}" for name, ms in (timeouts or {}).items())
    extra: dict[str, Any] = {"options": options} if options else {}
    conn = psycopg.connect(database_url(settings), autocommit=autocommit, **postgres_options(settings), **extra)
    register_vector(conn)
    return conn


def pg_connect(
    settings: Settings | None = None,
    *,
    tenant: str | None,
    autocommit: bool = False,
    timeouts: dict[str, int] | None = None,
) -> psycopg.Connection:
    """A connection scoped to ``tenant`` by row-level security (``SET ROLE`` to the
    application role, ``memq.tenant`` set for the session: ``shared/db/tenant_scope.py``).
    ``tenant=None``: the application role with no tenant, which sees nothing until a
    ``tenant_transaction``. Every tenant's work goes through here. ``timeouts``: see ``_pg``."""
    from memq.shared.db.tenant_scope import scope

    settings = settings or get_settings()
    conn = _pg(settings, autocommit, timeouts)
    try:
        return scope(conn, settings.database_app_role, tenant)
    except BaseException:
        conn.close()
        raise


def pg_owner_connect(
    settings: Settings | None = None, *, autocommit: bool = False, timeouts: dict[str, int] | None = None
) -> psycopg.Connection:
    """A connection as the DATABASE_URL user, the schema's owner, which row-level security
    does not restrict: only for work across tenants (migrations, audit, metrics, sweeps,
    the key lookup that finds a request's tenant); docs/isolation.md lists them."""
    return _pg(settings or get_settings(), autocommit, timeouts)
