"""Redis key names.

All keys of one conversation share the hash tag ``{tenant/conversation}`` so that a
script touching them runs on one Redis Cluster slot. The few global indexes (which
conversations are active, which drains or episodes wait) are single keys next to them.
"""

from __future__ import annotations

from dataclasses import dataclass


def member(tenant: str, conversation_id: str) -> str:
    """The name of a conversation in the global indexes: ``tenant/conversation``."""
    return f"{tenant}/{conversation_id}"


def split_member(value: str) -> tuple[str, str]:
    tenant, _, conversation_id = value.partition("/")
    return tenant, conversation_id


@dataclass(frozen=True)
class GlobalKeys:
    prefix: str

    @property
    def active(self) -> str:
        """ZSET member -> arrival time (epoch s) of its newest message."""
        return f"{self.prefix}:active"

    @property
    def drains(self) -> str:
        """ZSET member -> time a drain task was queued and not yet started."""
        return f"{self.prefix}:drains"

    @property
    def pending(self) -> str:
        """ZSET ``member/episode_id`` -> time the segment was cut, until its episode exists."""
        return f"{self.prefix}:pending"


@dataclass(frozen=True)
class ConversationKeys:
    prefix: str
    tenant: str
    conversation_id: str

    @property
    def _base(self) -> str:
        return f"{self.prefix}:{{{self.tenant}/{self.conversation_id}}}"

    @property
    def inbox(self) -> str:
        """LIST of accepted messages not yet seen by segmentation, oldest first."""
        return f"{self._base}:inbox"

    @property
    def buffer(self) -> str:
        """LIST of messages of the open event (segmented, not yet in an episode)."""
        return f"{self._base}:buffer"

    @property
    def state(self) -> str:
        """HASH of counters, the event model and flags (see ``state_fields``)."""
        return f"{self._base}:state"

    @property
    def ids(self) -> str:
        """SET of message ids already accepted (duplicate detection)."""
        return f"{self._base}:ids"

    @property
    def segments(self) -> str:
        """HASH episode_id -> closed segment waiting for episode creation."""
        return f"{self._base}:segments"

    @property
    def lock(self) -> str:
        """STRING holding the token of the one worker draining this conversation."""
        return f"{self._base}:lock"

    @property
    def member(self) -> str:
        return member(self.tenant, self.conversation_id)
