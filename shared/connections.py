"""Clients for Redis and PostgreSQL, built from settings and the resolved service URLs.

Two Redis roles: the Celery broker (always a plain Redis at ``REDIS_URL``; kombu has
no Redis Cluster transport) and the mailbox, the per-conversation queues and state
that scale with traffic, at ``MEMQ_MAILBOX_REDIS_URL`` when set (optionally a Redis
Cluster), else on the broker's Redis.
"""

from __future__ import annotations

import functools
from typing import TypeAlias

import psycopg
import redis
from pgvector.psycopg import register_vector
from redis.cluster import RedisCluster

from shared.embedded.services import ServiceUrls, resolve_urls
from shared.settings import Settings, get_settings

_SOCKET = {"socket_timeout": 10, "socket_connect_timeout": 5}

# Made with decode_responses=True: replies are str where redis-py's types say bytes | str,
# so the callers that need str cast them.
MailboxClient: TypeAlias = redis.Redis | RedisCluster


@functools.lru_cache(maxsize=8)
def _urls(settings: Settings) -> ServiceUrls:
    return resolve_urls(settings)


def service_urls(settings: Settings | None = None) -> ServiceUrls:
    return _urls(settings or get_settings())


def redis_client(settings: Settings | None = None) -> redis.Redis:
    """The broker's Redis, for short commands (no blocking calls: 10 s socket timeout)."""
    url = service_urls(settings).redis_url
    return redis.Redis.from_url(url, decode_responses=True, health_check_interval=30, **_SOCKET)


def mailbox_client(settings: Settings | None = None) -> MailboxClient:
    """The mailbox's Redis: a ``RedisCluster`` when ``MEMQ_MAILBOX_REDIS_CLUSTER`` is set."""
    settings = settings or get_settings()
    url = settings.mailbox_redis_url or service_urls(settings).redis_url
    if settings.mailbox_redis_cluster:
        return RedisCluster.from_url(url, decode_responses=True, **_SOCKET)
    return redis.Redis.from_url(url, decode_responses=True, health_check_interval=30, **_SOCKET)


def pg_connect(settings: Settings | None = None, *, autocommit: bool = False) -> psycopg.Connection:
    conn = psycopg.connect(service_urls(settings).database_url, autocommit=autocommit, connect_timeout=10)
    register_vector(conn)
    return conn
