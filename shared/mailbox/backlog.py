"""memq's backlog: the work waiting for workers, the figure worker autoscaling follows.

A Celery queue's length alone is wrong here: a drain task stands for every message in its
conversation's inbox (one task, hundreds of messages), and tasks a worker has prefetched
leave the list. The backlog is therefore the messages waiting in the inboxes of the
conversations with a drain queued or running, plus the stage tasks still queued on the
broker (episode creation, review, consolidation, maintenance).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import cast

import redis

from memq.shared import tasks
from memq.shared.connections import MailboxClient
from memq.shared.mailbox.codec import arrival_micros
from memq.shared.mailbox.keys import all_shards, conversation_keys, split_member
from memq.shared.settings import Settings

# kombu's Redis transport keeps a queue's priorities in lists named "<queue>\x06\x16<step>"
# (steps 3, 6, 9) beside the plain one (step 0).
_PRIORITY_SEPARATOR = "\x06\x16"
_PRIORITY_STEPS = (3, 6, 9)


@dataclass(frozen=True)
class Backlog:
    inbox_messages: int  # accepted, not yet segmented
    conversations_waiting: int  # with a drain queued or running
    oldest_wait_seconds: float  # since the oldest of those drains was queued (0 when none)
    queued_tasks: dict[str, int]  # per broker queue, not yet taken by a worker
    open_conversations: int = 0  # with an open event or unread inbox (the shards' active indexes)
    segments_pending: int = 0  # closed segments whose episode is not yet written
    quarantined_conversations: int = 0  # with something in the quarantine
    oldest_message_age_seconds: float = 0.0  # since the oldest unread inbox message was accepted (0 when none)

    @property
    def total(self) -> int:
        """What the autoscaler divides by a worker's share: messages plus queued tasks."""
        return self.inbox_messages + sum(self.queued_tasks.values())


def queue_lists(queue: str) -> list[str]:
    return [queue, *(f"{queue}{_PRIORITY_SEPARATOR}{step}" for step in _PRIORITY_STEPS)]


def measure_backlog(
    mailbox: MailboxClient, broker: redis.Redis, settings: Settings, *, now: float | None = None
) -> Backlog:
    """One pass over the shards' indexes and the broker's queues (pipelined: one round trip
    per shard, one more per shard with waiting drains, and one for the broker)."""
    now = time.time() if now is None else now
    messages = conversations = 0
    oldest: float | None = None
    first_message: float | None = None  # when the oldest unread message was accepted (s)
    sizes = [0, 0, 0]  # open conversations, pending segments, quarantined conversations
    for shard in all_shards(settings.key_prefix, settings.redis_shards):
        pipe = mailbox.pipeline(transaction=False)  # one slot: the shard's keys share its hash tag
        pipe.zrange(shard.drains, 0, -1, withscores=True)
        for index in (shard.active, shard.pending, shard.quarantined):
            pipe.zcard(index)
        drains, *counts = pipe.execute()
        sizes = [a + int(b) for a, b in zip(sizes, counts, strict=True)]
        waiting = cast(list[tuple[str, float]], drains)
        if not waiting:
            continue
        conversations += len(waiting)
        first = min(float(score) for _, score in waiting)
        oldest = first if oldest is None else min(oldest, first)
        pipe = mailbox.pipeline(transaction=False)
        for member, _ in waiting:
            inbox = conversation_keys(settings, *split_member(str(member))).inbox
            pipe.llen(inbox)
            pipe.lindex(inbox, 0)
        replies = pipe.execute()
        messages += sum(int(n) for n in replies[0::2])
        heads = [arrival_micros(item) / 1e6 for item in replies[1::2] if item is not None]
        if heads:
            first_message = min(heads) if first_message is None else min(first_message, *heads)
    pipe = broker.pipeline(transaction=False)
    for queue in tasks.ALL_QUEUES:
        for name in queue_lists(queue):
            pipe.llen(name)
    lengths = iter(pipe.execute())
    queued = {queue: sum(int(next(lengths)) for _ in queue_lists(queue)) for queue in tasks.ALL_QUEUES}
    open_conversations, segments_pending, quarantined = sizes
    return Backlog(
        messages,
        conversations,
        max(0.0, now - oldest) if oldest is not None else 0.0,
        queued,
        open_conversations=open_conversations,
        segments_pending=segments_pending,
        quarantined_conversations=quarantined,
        oldest_message_age_seconds=max(0.0, now - first_message) if first_message is not None else 0.0,
    )
