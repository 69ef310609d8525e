"""A Redis at its maxmemory (noeviction) refuses the producer's writes, for a conversation
it already holds as for a new one: StorageFull naming the cause, nothing of the batch
written, and the batch taken once room is made."""

from __future__ import annotations

import pytest
import redis
from drains import publish_drains_with

from memq.shared.errors import StorageFull


@pytest.fixture
def own_producer(own_redis, settings):
    from memq.producer.client import Producer
    from memq.shared.connections import mailbox_client

    mailbox = settings.model_copy(update={"mailbox_redis_url": own_redis.url, "mailbox_redis_cluster": False})
    producer = Producer(mailbox, client=mailbox_client(mailbox))
    publish_drains_with(producer, lambda tenant, conversation_id: None)
    yield producer
    producer.redis.close()


def test_a_full_redis_refuses_known_and_new_conversations_alike(own_producer, own_redis):
    import structlog

    from memq.shared.metrics import metrics

    counted = metrics().storage_full.labels(cause="redis_out_of_memory")
    before = counted._value.get()
    server = redis.Redis.from_url(own_redis.url)
    server.config_set("maxmemory-policy", "noeviction")
    first = own_producer.add_messages([{"conversation_id": "known", "role": "user", "content": "before"}])
    assert first[0].accepted
    keys = own_producer.keys("known")
    server.config_set("maxmemory", 1)
    try:
        for conv in ("known", "new"):
            batch = [{"conversation_id": conv, "role": "user", "content": f"while full {i}"} for i in range(3)]
            with pytest.raises(StorageFull) as full, structlog.testing.capture_logs() as logs:
                own_producer.add_messages(batch)
            assert {"event": "storage_full", "cause": "redis_out_of_memory"}.items() <= logs[-1].items()
            assert full.value.cause == "redis_out_of_memory"
            assert [r.status for r in full.value.results] == ["rejected"] * 3
        assert server.llen(keys.inbox) == 1  # nothing of either refused batch
        assert counted._value.get() == before + 2  # the operator's metric, wherever the producer runs
        assert not server.exists(own_producer.keys("new").inbox)
        with pytest.raises(StorageFull):
            own_producer.flush("known")
    finally:
        server.config_set("maxmemory", 0)
    again = own_producer.add_messages([{"conversation_id": "known", "role": "user", "content": "after"}])
    assert again[0].accepted and server.llen(keys.inbox) == 2
