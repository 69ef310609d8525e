"""Redis key names, laid out so that every script and transaction touches one hash slot.

A conversation belongs to one of ``shards`` shards (a stable hash of
``tenant/conversation``). Every key of the conversation *and* its shard's indexes
carry the shard's hash tag ``{s<n>}``, so a Lua script that appends a message and
marks the conversation active, or commits a step and records a closed segment, runs
on a single Redis Cluster slot. Periodic tasks (inactivity collapse, stalled-work
sweep, quarantine listing) walk the shards one by one.

    memq:{s17}:t1/conv-42:inbox       LIST   accepted messages not yet segmented
    memq:{s17}:t1/conv-42:buffer      LIST   the open event, numbered
    memq:{s17}:t1/conv-42:state       HASH   counters, event model, flags (see memq.worker.conversation_store)
    memq:{s17}:t1/conv-42:ids         ZSET   message id -> accepted at (ms): the dedup window
    memq:{s17}:t1/conv-42:segments    HASH   episode id -> closed segment awaiting its episode
    memq:{s17}:t1/conv-42:lock        STRING token of the one worker draining the conversation
    memq:{s17}:t1/conv-42:quarantine  HASH   item id -> what failed repeatedly, and why
    memq:{s17}:t1/conv-42:manifest    STRING the cached manifest (memq/memory/context/service.py)
    memq:{s17}:t1/conv-42:vectors     HASH   message id -> its embedding (segmentation's, reused by episode creation)
    memq:{s17}:t1/conv-42:webhooks    HASH   event id -> a webhook event PostgreSQL could not record yet
    memq:{s17}:active                 ZSET   member -> arrival time of its newest message (s)
    memq:{s17}:drains                 ZSET   member -> when a drain was queued or last heartbeat (s)
    memq:{s17}:pending                ZSET   member/episode_id -> when the segment was cut (s)
    memq:{s17}:quarantined            ZSET   member -> when something of it was quarantined (s)
    memq:{s17}:webhooks               ZSET   member -> since when it holds deferred webhook events (s)
    memq:{s17}:quota:t1               HASH   the shard's lease of tenant t1's quotas (enqueue.lua takes from it)
    memq:{q:t1}:quota                 HASH   tenant t1's quota limits and what its shards hold (its own slot)

The number of shards is fixed for the lifetime of the data (``MEMQ_REDIS_SHARDS``):
changing it moves conversations to other keys.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memq.shared.settings import Settings


def member(tenant: str, conversation_id: str) -> str:
    """The name of a conversation in the shard indexes: ``tenant/conversation``."""
    return f"{tenant}/{conversation_id}"


def split_member(value: str) -> tuple[str, str]:
    tenant, _, conversation_id = value.partition("/")
    return tenant, conversation_id


def shard_of(tenant: str, conversation_id: str, shards: int) -> int:
    return zlib.crc32(member(tenant, conversation_id).encode()) % shards


@dataclass(frozen=True)
class ShardKeys:
    prefix: str
    shard: int

    @property
    def tag(self) -> str:
        return f"{self.prefix}:{{s{self.shard}}}"

    @property
    def active(self) -> str:
        return f"{self.tag}:active"

    @property
    def drains(self) -> str:
        return f"{self.tag}:drains"

    @property
    def pending(self) -> str:
        return f"{self.tag}:pending"

    @property
    def quarantined(self) -> str:
        return f"{self.tag}:quarantined"

    @property
    def webhooks(self) -> str:
        return f"{self.tag}:webhooks"

    def quota_lease(self, tenant: str) -> str:
        return f"{self.tag}:quota:{tenant}"


def quota_key(prefix: str, tenant: str) -> str:
    """A tenant's quota hash: its limits and what its shards were granted (its own slot)."""
    return f"{prefix}:{{q:{tenant}}}:quota"


def all_shards(prefix: str, shards: int) -> list[ShardKeys]:
    return [ShardKeys(prefix, n) for n in range(shards)]


@dataclass(frozen=True)
class ConversationKeys:
    prefix: str
    tenant: str
    conversation_id: str
    shards: int

    @property
    def shard(self) -> ShardKeys:
        return ShardKeys(self.prefix, shard_of(self.tenant, self.conversation_id, self.shards))

    @property
    def _base(self) -> str:
        return f"{self.shard.tag}:{self.tenant}/{self.conversation_id}"

    @property
    def inbox(self) -> str:
        return f"{self._base}:inbox"

    @property
    def buffer(self) -> str:
        return f"{self._base}:buffer"

    @property
    def state(self) -> str:
        return f"{self._base}:state"

    @property
    def ids(self) -> str:
        return f"{self._base}:ids"

    @property
    def segments(self) -> str:
        return f"{self._base}:segments"

    @property
    def lock(self) -> str:
        return f"{self._base}:lock"

    @property
    def quarantine(self) -> str:
        return f"{self._base}:quarantine"

    @property
    def manifest(self) -> str:
        return f"{self._base}:manifest"

    @property
    def webhooks(self) -> str:
        return f"{self._base}:webhooks"

    @property
    def member(self) -> str:
        return member(self.tenant, self.conversation_id)

    @property
    def vectors(self) -> str:
        return f"{self._base}:vectors"

    def all(self) -> list[str]:
        """Every per-conversation key (for forget and tests)."""
        return [
            self.inbox,
            self.buffer,
            self.state,
            self.ids,
            self.segments,
            self.lock,
            self.quarantine,
            self.manifest,
            self.vectors,
            self.webhooks,
        ]


def conversation_keys(settings: Settings, tenant: str, conversation_id: str) -> ConversationKeys:
    return ConversationKeys(settings.key_prefix, tenant, conversation_id, settings.redis_shards)
