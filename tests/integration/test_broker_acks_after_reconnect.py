"""After a lost broker connection Celery collects the kombu connection (detaching its
transport) and closes it. A message delivered on it and not yet acknowledged (a task still
running: memq keeps them running, shared/celery_config.py) must still be acknowledged when
its task ends, and closing the channel must not fail. On kombu's stock transport both
raised an AttributeError (no connection parameters without the transport), which Celery
takes for an unrecoverable error: the worker stopped. Seen in the soak after Redis
restarts."""

from __future__ import annotations

import os

import pytest
import redis
from kombu import Connection, Consumer, Exchange, Queue
from kombu import Producer as KombuProducer
from kombu.transport.redis import Transport as StockTransport

from memq.shared.broker_transport import Transport as MemqTransport

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMQ_TEST_REDIS_CLUSTER") == "1", reason="runs its own Redis; once is enough"
)


def _delivered_unacked(url: str, transport):
    queue = Queue("ack-probe", Exchange("ack-probe"), routing_key="ack-probe")
    with Connection(url, transport=transport) as sender:
        KombuProducer(sender.channel()).publish(
            {"n": 1}, exchange=queue.exchange, routing_key="ack-probe", declare=[queue], serializer="json"
        )
    conn = Connection(url, transport=transport)
    got: list = []
    consumer = Consumer(
        conn.default_channel, [queue], callbacks=[lambda body, message: got.append(message)], accept=["json"]
    )
    consumer.consume()
    while not got:
        try:
            conn.drain_events(timeout=5)
        except TimeoutError:
            pytest.fail("the message was not delivered")
    return conn, got[0]


def _unacked(url: str) -> int:
    return int(redis.Redis.from_url(url).zcard("unacked_index"))


def _collected(conn):
    """The state Celery's consumer leaves a connection in after a connection error: the
    kombu connection collected (its transport detached), the channel's Redis pools gone
    (kombu drops them when it closes the channel's clients)."""
    channel = conn.default_channel
    conn.collect()
    channel._disconnect_pools()
    return channel


def test_stock_transport_cannot_acknowledge_after_the_connection_was_collected(own_redis):
    conn, message = _delivered_unacked(own_redis.url, StockTransport)
    _collected(conn)
    with pytest.raises(AttributeError):  # what stopped a worker as an "unrecoverable error"
        message.ack()


def test_memq_transport_acknowledges_after_the_connection_was_collected(own_redis):
    conn, message = _delivered_unacked(own_redis.url, MemqTransport)
    assert _unacked(own_redis.url) == 1
    channel = _collected(conn)
    message.ack()  # the task ended after its connection was gone: the ack still lands
    assert _unacked(own_redis.url) == 0
    channel.close()  # and closing the channel again is no error either
