"""What the read side holds open: a PostgreSQL pool whose connections are scoped to one
tenant by row-level security for as long as they are lent, and the mailbox's Redis (open
segments, cached manifests, user state). Opened once per process and shared by every
``Memory`` bound from it."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from memq.shared.connections import MailboxClient
from memq.shared.settings import Settings

SPARE_WAIT_S = 0.002  # a spare connection is one the pool hands over at once, not one it makes


class Connections:
    """A pool (``max_size`` connections, made as needed) and the mailbox client."""

    def __init__(self, settings: Settings, pool: ConnectionPool, mailbox: MailboxClient | None = None) -> None:
        self.settings = settings
        self.pool = pool
        self._mailbox = mailbox

    @classmethod
    def open(
        cls, settings: Settings, *, max_size: int = 10, name: str = "memq", mailbox: MailboxClient | None = None
    ) -> Connections:
        """Starts the embedded servers when configured (development), then opens the pool.
        ``mailbox``: a mailbox client to share (default: one of its own, made when first used)."""
        from pgvector.psycopg import register_vector

        from memq.shared.client_timeouts import postgres_options
        from memq.shared.connections import database_url
        from memq.shared.db.tenant_scope import unscope
        from memq.shared.embedded import services as embedded

        embedded.up(settings)
        pool = ConnectionPool(
            database_url(settings),
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, **postgres_options(settings)},
            configure=register_vector,
            reset=unscope,  # a connection scoped to a tenant comes back as the owner's, with none
            open=True,
            name=name,
        )
        pool.wait(timeout=30)
        return cls(settings, pool, mailbox)

    @functools.cached_property
    def mailbox(self) -> MailboxClient:
        """The mailbox's Redis (a cluster client when the mailbox is on a Redis Cluster)."""
        if self._mailbox is not None:
            return self._mailbox
        from memq.shared.connections import mailbox_client

        return mailbox_client(self.settings)

    @contextmanager
    def scoped(self, tenant: str) -> Iterator[psycopg.Connection]:
        """A pooled connection scoped to ``tenant`` until it is returned (the pool's reset
        undoes the scope)."""
        from memq.shared.db.tenant_scope import scope

        with self.pool.connection() as conn:
            yield scope(conn, self.settings.database_app_role, tenant)

    @contextmanager
    def spare(self, tenant: str) -> Iterator[psycopg.Connection | None]:
        """A second pooled connection scoped to ``tenant`` when the pool has one free at
        once, else None (retrieval then runs its legs on one connection: ``legs.Spare``)."""
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
    def owner(self) -> Iterator[psycopg.Connection]:
        """A pooled connection as the schema's owner, across tenants (metrics, health)."""
        with self.pool.connection() as conn:
            yield conn

    def close(self) -> None:
        self.pool.close()
