"""The backlog the worker autoscaler follows, measured on a Redis of the test's own (so the
counts are exact): messages waiting in inboxes plus tasks queued on the broker."""

from __future__ import annotations

import pytest

from memq.shared import tasks
from memq.shared.mailbox.backlog import measure_backlog

pytestmark = pytest.mark.integration


def test_backlog_counts_inbox_messages_and_queued_tasks(own_redis, settings):
    import redis

    from memq.producer.client import Producer
    from memq.shared.connections import mailbox_client

    mine = settings.model_copy(
        update={
            "redis_url": own_redis.url,
            "mailbox_redis_url": None,
            "mailbox_redis_cluster": False,
            "tenant": "t-backlog",
        }
    )
    broker = redis.Redis.from_url(own_redis.url, decode_responses=True)
    mailbox = mailbox_client(mine)
    empty = measure_backlog(mailbox, broker, mine)
    assert (empty.total, empty.conversations_waiting, empty.oldest_wait_seconds) == (0, 0, 0.0)
    assert (empty.open_conversations, empty.segments_pending, empty.quarantined_conversations) == (0, 0, 0)
    assert empty.oldest_message_age_seconds == 0.0

    producer = Producer(mine)  # no worker runs: everything stays waiting
    producer.add_messages([{"conversation_id": "a", "role": "user", "content": f"message {i}"} for i in range(5)])
    producer.add_messages([{"conversation_id": "b", "role": "user", "content": f"message {i}"} for i in range(3)])
    backlog = measure_backlog(mailbox, broker, mine, now=None)
    assert backlog.inbox_messages == 8
    assert backlog.conversations_waiting == 2
    # one drain task per conversation, however many messages it carries
    assert backlog.queued_tasks[tasks.SEGMENTATION_QUEUE] == 2
    assert backlog.total == 10
    # both conversations have unread messages; nothing is cut or quarantined yet
    assert (backlog.open_conversations, backlog.segments_pending, backlog.quarantined_conversations) == (2, 0, 0)
    assert backlog.oldest_wait_seconds >= 0.0
    later = measure_backlog(mailbox, broker, mine, now=broker.time()[0] + 60)
    assert later.oldest_wait_seconds >= 59.0
    assert 59.0 <= later.oldest_message_age_seconds <= 62.0  # conversation a's first message, by Redis' clock
