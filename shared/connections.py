"""Clients for Redis and PostgreSQL, built from settings and the resolved service URLs."""

from __future__ import annotations

import functools

import psycopg
import redis
from pgvector.psycopg import register_vector

from shared.embedded.services import ServiceUrls, resolve_urls
from shared.settings import Settings, get_settings


@functools.lru_cache(maxsize=8)
def _urls(settings: Settings) -> ServiceUrls:
    return resolve_urls(settings)


def service_urls(settings: Settings | None = None) -> ServiceUrls:
    return _urls(settings or get_settings())


def redis_client(settings: Settings | None = None) -> redis.Redis:
    """A Redis client for short commands (no blocking calls: 10 s socket timeout)."""
    url = service_urls(settings).redis_url
    return redis.Redis.from_url(url, decode_responses=True, socket_timeout=10, socket_connect_timeout=5, health_check_interval=30)


def pg_connect(settings: Settings | None = None, *, autocommit: bool = False) -> psycopg.Connection:
    conn = psycopg.connect(service_urls(settings).database_url, autocommit=autocommit, connect_timeout=10)
    register_vector(conn)
    return conn
