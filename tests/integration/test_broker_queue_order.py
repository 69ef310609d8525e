"""Through kombu and memq's broker transport on a real Redis: with drains waiting in the
segmentation queue, an episode task queued after them is delivered first (the worker's
BRPOP asks the episodes queue first, memq.shared.queue_order), and the drains then come in
their own order."""

from __future__ import annotations

import os

import pytest
from kombu import Connection, Consumer, Exchange, Queue
from kombu import Producer as KombuProducer

from memq.shared import tasks
from memq.shared.broker_transport import Transport

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMQ_TEST_REDIS_CLUSTER") == "1", reason="runs its own Redis; once is enough"
)


def _queue(name: str) -> Queue:
    return Queue(name, Exchange(name), routing_key=name)


def test_an_episode_task_is_delivered_before_the_drains_queued_ahead_of_it(own_redis):
    queues = [_queue(name) for name in tasks.ALL_QUEUES]  # the worker's -Q order: segmentation first
    by_name = {q.name: q for q in queues}
    with Connection(own_redis.url, transport=Transport) as sender:
        publish = KombuProducer(sender.channel()).publish
        for n in range(3):
            q = by_name[tasks.SEGMENTATION_QUEUE]
            publish({"n": f"drain-{n}"}, exchange=q.exchange, routing_key=q.routing_key, declare=[q])
        q = by_name[tasks.EPISODES_QUEUE]
        publish({"n": "episode"}, exchange=q.exchange, routing_key=q.routing_key, declare=[q])

    got: list[str] = []

    def take(body, message):
        got.append(body["n"])
        message.ack()

    with Connection(own_redis.url, transport=Transport) as conn:
        consumer = Consumer(conn.default_channel, queues, callbacks=[take], accept=["json"])
        consumer.qos(prefetch_count=1)  # as the worker (worker_prefetch_multiplier 1)
        consumer.consume()
        while len(got) < 4:
            conn.drain_events(timeout=10)
    assert got == ["episode", "drain-0", "drain-1", "drain-2"]
