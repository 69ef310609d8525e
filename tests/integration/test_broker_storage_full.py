"""A Redis without room must not stop a worker. kombu records every message it takes off a
queue (a hash and an index of unacknowledged messages in Redis) and removes the record when
the task is acknowledged; Redis refuses both writes at its maxmemory (OOM) and when it cannot
persist (MISCONF). On kombu's stock transport the refusal reached Celery as an unrecoverable
error and the worker stopped, the message taken off its queue and recorded nowhere: seen in
the soak's redis_full phase. memq's transport delivers the message (recorded in memory only)
and keeps the record when it cannot remove it, counting each refusal in
``memq_storage_full_total``."""

from __future__ import annotations

import os
import shutil

import pytest
import redis
from kombu import Connection, Consumer, Exchange, Queue
from kombu import Producer as KombuProducer
from kombu.transport.redis import Transport as StockTransport
from waiting import wait_until

from memq.shared.broker_transport import Transport as MemqTransport
from memq.shared.metrics import metrics
from memq.shared.storage_full import REDIS_CANNOT_PERSIST, REDIS_OUT_OF_MEMORY

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMQ_TEST_REDIS_CLUSTER") == "1", reason="runs its own Redis; once is enough"
)

QUEUE = Queue("full-probe", Exchange("full-probe"), routing_key="full-probe")


def _publish(url: str) -> None:
    with Connection(url, transport=MemqTransport) as sender:
        KombuProducer(sender.channel()).publish(
            {"n": 1}, exchange=QUEUE.exchange, routing_key="full-probe", declare=[QUEUE], serializer="json"
        )


def _consumer(url: str, transport):
    """A consumer of the queue on ``transport``, declared (which writes) while Redis has room."""
    conn = Connection(url, transport=transport)
    got: list = []
    callbacks = [lambda body, message: got.append(message)]
    Consumer(conn.default_channel, [QUEUE], callbacks=callbacks, accept=["json"]).consume()
    return conn, got


def _take(conn, got):
    """The published message, taken off its queue."""
    while not got:
        try:
            conn.drain_events(timeout=5)
        except TimeoutError:
            pytest.fail("the message was not delivered")
    return got[0]


def _unacked(client: redis.Redis) -> int:
    return int(client.zcard("unacked_index"))


def _counted(cause: str) -> float:
    return metrics().storage_full.labels(cause=cause)._value.get()


@pytest.fixture
def client(own_redis):
    return redis.Redis.from_url(own_redis.url)


def _fill(client: redis.Redis) -> None:
    """maxmemory below what Redis uses: every write that could grow it is refused (OOM)."""
    client.config_set("maxmemory", max(1, int(client.info("memory")["used_memory"]) // 2))


def test_the_stock_transport_fails_taking_a_message_from_a_full_redis(own_redis, client):
    _publish(own_redis.url)
    conn, got = _consumer(own_redis.url, StockTransport)
    _fill(client)
    try:
        with pytest.raises(redis.exceptions.OutOfMemoryError, match="ZADD unacked_index"):  # what stopped the worker
            _take(conn, got)
    finally:
        client.config_set("maxmemory", 0)


def test_a_message_taken_from_a_full_redis_is_delivered_and_acknowledged(own_redis, client):
    _publish(own_redis.url)
    conn, got = _consumer(own_redis.url, MemqTransport)
    _fill(client)
    before = _counted(REDIS_OUT_OF_MEMORY)
    try:
        message = _take(conn, got)
        assert message.payload == {"n": 1}
        assert _unacked(client) == 0  # recorded in the worker's memory only
        message.ack()  # no error: the worker goes on
        assert message.acknowledged
    finally:
        client.config_set("maxmemory", 0)
    # both refused: the record when the message was taken and, in kombu's MULTI (where a full
    # Redis refuses every command), its removal on the acknowledgement
    assert _counted(REDIS_OUT_OF_MEMORY) == before + 2


def test_an_acknowledgement_redis_cannot_persist_keeps_the_record_for_redelivery(own_redis, client, tmp_path):
    _publish(own_redis.url)
    conn, got = _consumer(own_redis.url, MemqTransport)
    message = _take(conn, got)
    assert _unacked(client) == 1
    # Redis cannot write a snapshot (its folder is gone) and stops writes: MISCONF
    gone = tmp_path / "gone"
    gone.mkdir()
    client.config_set("dir", str(gone))
    client.config_set("save", "3600 1")
    shutil.rmtree(gone)
    client.bgsave()
    before = _counted(REDIS_CANNOT_PERSIST)
    try:
        wait_until(lambda: client.info("persistence")["rdb_last_bgsave_status"] == "err", 10, 0.02, "a failed snapshot")
        with pytest.raises(redis.ResponseError, match="MISCONF"):
            client.set("probe", "1")
        message.ack()  # no error: the worker goes on
    finally:
        client.config_set("save", "")  # no snapshots configured: writes accepted again
    assert _counted(REDIS_CANNOT_PERSIST) == before + 1
    assert message.acknowledged
    assert _unacked(client) == 1  # the record stays: redelivered after the visibility timeout, a harmless repeat
