"""What the HTTP service and the MCP server share: settings, a PostgreSQL pool, the
mailbox Redis client, the producer (the same Lua enqueue as the library) and the API
keys. Built once per process (``Services.start``)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool
from redis import Redis

from memq.api.keystore import KeyStore
from memq.producer.client import Producer
from memq.shared.settings import Settings

SPARE_WAIT_S = 0.002  # a spare connection is one the pool hands over at once, not one it makes


@dataclass
class Services:
    settings: Settings
    pool: ConnectionPool
    producer: Producer
    keys: KeyStore

    @property
    def redis(self):
        return self.producer.redis

    @classmethod
    def start(cls, settings: Settings, *, load_model: bool = True) -> Services:
        from memq.shared.connections import database_url
        from memq.shared.db.api_keys import active_key, active_keys
        from memq.shared.db.tenant_scope import unscope
        from memq.shared.embedded import services as embedded

        embedded.up(settings)
        pool = ConnectionPool(
            database_url(settings),
            min_size=1,
            max_size=10,
            kwargs={"autocommit": True},
            configure=register_vector,
            reset=unscope,  # a connection scoped to a request's tenant comes back as the owner's, with none
            open=True,
            name="memq-api",
        )
        pool.wait(timeout=30)

        # The key store looks keys up before a request's tenant is known: as the owner.
        def load_keys() -> dict[str, tuple[bytes, str]]:
            with pool.connection() as conn:
                return active_keys(conn)

        def load_key(key_id: str) -> tuple[bytes, str] | None:
            with pool.connection() as conn:
                return active_key(conn, key_id)

        keys = KeyStore(load_keys, settings.api_keys_refresh_seconds, load_key)
        keys.start()
        if load_model:  # before the first request, not during it
            from memq.shared.embeddings import get_embedder

            get_embedder(settings)
        return cls(settings, pool, Producer(settings), keys)

    @functools.cached_property
    def broker(self) -> Redis:
        """The broker's Redis (REDIS_URL), for reading queue lengths."""
        from memq.shared.connections import redis_client

        return redis_client(self.settings)

    @contextmanager
    def conn(self, tenant: str) -> Iterator[psycopg.Connection]:
        """A pooled connection scoped to ``tenant`` by row-level security until it is
        returned (the pool's reset undoes the scope)."""
        from memq.shared.db.tenant_scope import scope

        with self.pool.connection() as conn:
            yield scope(conn, self.settings.database_app_role, tenant)

    @contextmanager
    def spare_conn(self, tenant: str) -> Iterator[psycopg.Connection | None]:
        """A second pooled connection scoped to ``tenant`` when the pool has one free at
        once, else None (retrieval then runs its legs on one connection: ``legs.Spare``)."""
        from psycopg_pool import PoolTimeout

        from memq.shared.db.tenant_scope import scope

        try:
            conn = self.pool.getconn(timeout=SPARE_WAIT_S)
        except PoolTimeout:
            yield None
            return
        try:
            yield scope(conn, self.settings.database_app_role, tenant)
        finally:
            self.pool.putconn(conn)

    @contextmanager
    def owner_conn(self) -> Iterator[psycopg.Connection]:
        """A pooled connection as the schema's owner, across tenants (metrics, health)."""
        with self.pool.connection() as conn:
            yield conn

    def close(self) -> None:
        self.keys.stop()
        self.pool.close()
