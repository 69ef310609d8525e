"""What the HTTP service and the MCP server share: settings, the read side's connections
(a PostgreSQL pool scoped per request to its tenant, the mailbox's Redis), the producer
(the same Lua enqueue as the library) and the API keys. Built once per process
(``Services.start``); a request's memory is ``memory(tenant)``."""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import psycopg
from redis import Redis

from memq.api.fair_share import Turns
from memq.api.keystore import KeyStore
from memq.api.rate_limit import MessageRate, RateLimiter
from memq.memory import Connections, Memory
from memq.producer.client import Producer
from memq.shared.settings import Settings


@dataclass
class Services:
    settings: Settings
    connections: Connections
    producer: Producer
    keys: KeyStore
    rate_limiter: RateLimiter
    turns: Turns = field(init=False)  # the process' fair share among keys (memq.api.fair_share)
    message_rate: MessageRate = field(init=False)  # each key's messages a second (memq.api.rate_limit)

    def __post_init__(self) -> None:
        self.turns = Turns(self.settings.api_concurrency_per_key)
        self.message_rate = MessageRate(self.producer.redis, self.settings)

    @property
    def redis(self):
        return self.producer.redis

    @classmethod
    def start(cls, settings: Settings, *, load_model: bool = True) -> Services:
        from memq.shared.db.api_keys import active_key, active_keys
        from memq.shared.embedded import services as embedded

        embedded.up(settings)  # first: the URLs below are the embedded servers' in development
        producer = Producer(settings)  # its Redis is the mailbox's: the read side shares it
        connections = Connections.open(settings, max_size=10, name="memq-api", mailbox=producer.redis)

        # The key store looks keys up before a request's tenant is known: as the owner.
        def load_keys() -> dict[str, tuple[bytes, str]]:
            with connections.owner() as conn:
                return active_keys(conn)

        def load_key(key_id: str) -> tuple[bytes, str] | None:
            with connections.owner() as conn:
                return active_key(conn, key_id)

        keys = KeyStore(load_keys, settings.api_keys_refresh_seconds, load_key)
        keys.start()
        if load_model:  # before the first request, not during it
            from memq.shared.embeddings import get_embedder

            get_embedder(settings)
        return cls(settings, connections, producer, keys, RateLimiter(producer.redis, settings))

    def memory(self, tenant: str) -> Memory:
        """The read side bound to ``tenant`` (cheap: the connections are the process's)."""
        return Memory(self.connections, tenant)

    @functools.cached_property
    def broker(self) -> Redis:
        """The broker's Redis (REDIS_URL), for reading queue lengths."""
        from memq.shared.connections import redis_client

        return redis_client(self.settings)

    def conn(self, tenant: str) -> AbstractContextManager[psycopg.Connection]:
        """A pooled connection scoped to ``tenant`` by row-level security until it is
        returned (the pool's reset undoes the scope)."""
        return self.connections.scoped(tenant)

    def owner_conn(self) -> AbstractContextManager[psycopg.Connection]:
        """A pooled connection as the schema's owner, across tenants (metrics, health)."""
        return self.connections.owner()

    def close(self) -> None:
        self.keys.stop()
        self.connections.close()
