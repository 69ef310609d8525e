"""Redis adapter for one conversation's queue state, as a worker sees it.

A drainer takes the conversation's lock (a token with a lease), loads the open event
and its ``EventState``, reads inbox messages in order and commits each step with
``commit_step.lua``, which is fenced by the lock token and by the expected inbox
front. A crash before a commit leaves the message at the inbox front and the state
as it was; after a commit, the step is complete. Either way any worker can resume.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

import redis

from shared.mailbox.codec import QueuedMessage, decode_item
from shared.mailbox.keys import ConversationKeys, GlobalKeys
from shared.mailbox.scripts import Scripts
from shared.settings import Settings
from worker.segmentation.engine import ClosedSegment
from worker.segmentation.event_state import EventState


class LockLost(Exception):
    """Another worker took over this conversation (our lease ran out)."""


class InboxMoved(Exception):
    """The inbox front is not the message we processed (should never happen under the lock)."""


def episode_id_for(tenant: str, conversation_id: str, first_seq: int) -> str:
    """Deterministic: the same segment always gets the same episode id."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memq:{tenant}/{conversation_id}/{first_seq}"))


@dataclass
class ConversationStore:
    client: redis.Redis
    scripts: Scripts
    settings: Settings
    tenant: str
    conversation_id: str
    token: str = ""

    def __post_init__(self) -> None:
        self.keys = ConversationKeys(self.settings.key_prefix, self.tenant, self.conversation_id)
        self.globals = GlobalKeys(self.settings.key_prefix)

    @property
    def lease_ms(self) -> int:
        return int(self.settings.lock_lease_seconds * 1000)

    # -- lock ---------------------------------------------------------------------
    def acquire(self) -> bool:
        token = uuid.uuid4().hex
        if self.client.set(self.keys.lock, token, nx=True, px=self.lease_ms):
            self.token = token
            return True
        return False

    def release(self) -> bool:
        if not self.token:
            return False
        released = self.scripts.release_lock(
            keys=[self.keys.lock, self.keys.inbox, self.keys.buffer, self.globals.active, self.keys.state],
            args=[self.token, self.keys.member],
        )
        self.token = ""
        return bool(released)

    def mark_drain_started(self) -> None:
        """Clear the 'drain queued' mark: a message arriving from now on queues a new drain."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hdel(self.keys.state, "drain_queued")
        pipe.zrem(self.globals.drains, self.keys.member)
        pipe.execute()

    def mark_drain_queued(self) -> bool:
        """Mark a drain as queued unless one already is; True when the caller must publish it."""
        now = time.time()
        if not self.client.hsetnx(self.keys.state, "drain_queued", repr(now)):
            return False
        self.client.zadd(self.globals.drains, {self.keys.member: now})
        return True

    def touch_drain_queued(self) -> None:
        """A queued drain waiting for the lock is not stalled: refresh its mark."""
        self.client.zadd(self.globals.drains, {self.keys.member: time.time()}, xx=True)

    # -- reading ------------------------------------------------------------------
    def load(self) -> tuple[list[QueuedMessage], EventState, str | None]:
        pipe = self.client.pipeline(transaction=True)
        pipe.lrange(self.keys.buffer, 0, -1)
        pipe.hmget(self.keys.state, ["event", "flush_requested"])
        items, (event, flush) = pipe.execute()
        return [decode_item(i) for i in items], EventState.from_json(event), flush

    def peek_inbox(self, count: int) -> list[QueuedMessage]:
        return [decode_item(i) for i in self.client.lrange(self.keys.inbox, 0, count - 1)]

    def flush_requested(self) -> str | None:
        return self.client.hget(self.keys.state, "flush_requested")

    # -- writing ------------------------------------------------------------------
    def commit(
        self,
        *,
        head: QueuedMessage | None,
        drop: int,
        push: QueuedMessage | None,
        segment: ClosedSegment | None,
        state: EventState,
        clear_flush: bool = False,
    ) -> str | None:
        """Apply one step atomically; return the episode id of a closed segment."""
        episode_id = ""
        payload = ""
        if segment is not None:
            episode_id = episode_id_for(self.tenant, self.conversation_id, segment.messages[0].seq)
            payload = json.dumps(self.segment_record(episode_id, segment), ensure_ascii=False, separators=(",", ":"))
        fields = ["event", state.to_json()]
        deletes = ["flush_requested"] if clear_flush else []
        args: list[Any] = [
            self.token,
            self.lease_ms,
            head.raw if head else "",
            drop,
            push.raw if push else "",
            episode_id,
            payload,
            repr(time.time()),
            self.keys.member,
            len(fields) // 2,
            *fields,
            *deletes,
        ]
        try:
            self.scripts.commit_step(
                keys=[
                    self.keys.inbox,
                    self.keys.buffer,
                    self.keys.state,
                    self.keys.lock,
                    self.keys.segments,
                    self.globals.pending,
                    self.globals.active,
                ],
                args=args,
            )
        except redis.ResponseError as exc:
            if "LOCK" in str(exc):
                raise LockLost(self.keys.member) from exc
            if "HEAD" in str(exc):
                raise InboxMoved(self.keys.member) from exc
            raise
        return episode_id or None

    def segment_record(self, episode_id: str, segment: ClosedSegment) -> dict[str, Any]:
        return {
            "episode_id": episode_id,
            "tenant": self.tenant,
            "conversation_id": self.conversation_id,
            "messages": [m.to_record() for m in segment.messages],
            "overlap": list(segment.overlap),
            "reason": segment.reason,
            "surprise": segment.surprise,
            "detector": segment.detector,
            "source": segment.source,
            "token_count": segment.token_count,
            "cut_at": time.time(),
        }

    # -- closed segments ------------------------------------------------------------
    def pending_segment_ids(self) -> list[str]:
        return list(self.client.hkeys(self.keys.segments))

    def segment(self, episode_id: str) -> dict[str, Any] | None:
        raw = self.client.hget(self.keys.segments, episode_id)
        return json.loads(raw) if raw else None

    def finish_segment(self, episode_id: str) -> None:
        self.scripts.finish_segment(
            keys=[self.keys.segments, self.globals.pending],
            args=[episode_id, f"{self.keys.member}/{episode_id}"],
        )
