"""Cluster mode itself (``MEMQ_TEST_REDIS_CLUSTER=1``, ``make test-cluster``): the mailbox
really is on a 3-node Redis Cluster, conversations spread over its nodes, and every
mailbox script and pipeline runs there without a CROSSSLOT (or any other) error, while
the Celery broker stays on the standalone Redis."""

from __future__ import annotations

import cluster_mode
import pytest
import redis
from invariants import assert_every_message_in_exactly_one_episode

pytestmark = pytest.mark.skipif(
    not cluster_mode.enabled(),
    reason="only in the Redis Cluster test mode: set MEMQ_TEST_REDIS_CLUSTER=1 (or run `make test-cluster`)",
)

CONVERSATIONS = 30


def _node(url_or_host_port: str) -> redis.Redis:
    host, port = url_or_host_port.removeprefix("redis://").split(":")
    return redis.Redis(host=host, port=int(port), decode_responses=True, socket_timeout=10)


def test_the_mailbox_is_a_three_node_cluster_and_the_broker_is_not(producer, settings, service_env):
    from redis.cluster import RedisCluster

    assert settings.mailbox_redis_cluster and service_env["MEMQ_MAILBOX_REDIS_CLUSTER"] == "true"
    assert isinstance(producer.redis, RedisCluster)
    nodes = cluster_mode.cluster(settings)
    assert nodes.healthy()
    assert settings.mailbox_redis_url == nodes.url
    primaries = producer.redis.get_primaries()
    assert sorted(p.port for p in primaries) == nodes.ports and len(primaries) == nodes.nodes >= 3
    owners = nodes.slot_owners()
    assert len(owners) == 16384 and len(set(owners.values())) == nodes.nodes  # every slot served, by every node
    for port in nodes.ports:
        info = _node(f"127.0.0.1:{port}").info("cluster")
        assert info["cluster_enabled"] == 1
    broker = redis.Redis.from_url(service_env["REDIS_URL"], socket_timeout=10)
    assert broker.info("cluster")["cluster_enabled"] == 0  # kombu has no cluster transport
    assert broker.connection_pool.connection_kwargs["port"] not in nodes.ports


def test_conversations_spread_over_the_nodes_and_every_script_runs_without_crossslot(
    worker, producer, db, settings, tenant
):
    from memq.shared.forget import forget_conversation

    nodes = cluster_mode.cluster(settings)
    owners = nodes.slot_owners()
    convs = [f"spread-{i:02d}" for i in range(CONVERSATIONS)]
    batch = [
        {
            "conversation_id": conv,
            "role": "user" if n % 2 == 0 else "assistant",
            "content": f"message {n} of {conv}: long enough to count towards an event's minimum size",
            "message_id": f"{conv}-m{n}",
        }
        for n in range(3)
        for conv in convs
    ]
    # One batch over every conversation: one pipeline of enqueue scripts, spread over nodes.
    results = producer.add_messages(batch)
    assert [r.status for r in results] == ["accepted"] * len(batch)
    again = producer.add_messages(batch)  # and the dedup window works on every node
    assert [r.status for r in again] == ["duplicate"] * len(batch)

    placed = {}
    for conv in convs:
        keys = producer.keys(conv)
        slots = {producer.redis.cluster_keyslot(k) for k in [*keys.all(), *_shard_keys(keys)]}
        assert len(slots) == 1, f"{conv}: its keys and shard indexes span slots {slots}"
        slot = slots.pop()
        owner = owners[slot]
        # The conversation physically lives on that node; the others redirect there.
        assert _node(owner).exists(keys.inbox, keys.state, keys.ids) == 3
        for port in nodes.ports:
            if f"127.0.0.1:{port}" != owner:
                with pytest.raises(redis.exceptions.MovedError, match=f"{slot} {owner}"):
                    _node(f"127.0.0.1:{port}").exists(keys.inbox)
        placed[conv] = owner
    assert len(set(placed.values())) >= 2, f"all {CONVERSATIONS} conversations landed on one node: {placed}"

    # Drain (snapshot, sync, commit_steps, release), close (request_flush, finish_segment)
    # and create episodes on every node: any CROSSSLOT would leave work behind or fail a task.
    for conv in convs:
        assert producer.flush(conv)
    for conv in convs:
        status = producer.wait_idle(conv, timeout=120)
        assert not status.quarantined and not status.failing, (conv, status)
        assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, conv, 3)

    # forget_conversation's pipeline (per-key DELs, shard index removals) on every node.
    for conv in convs:
        keys = producer.keys(conv)
        assert forget_conversation(producer.redis, db, keys).episodes >= 1
        assert _node(placed[conv]).exists(*keys.all()) == 0
        assert producer.redis.zscore(keys.shard.active, keys.member) is None
        assert producer.redis.zscore(keys.shard.drains, keys.member) is None


def _shard_keys(keys) -> list[str]:
    shard = keys.shard
    return [shard.active, shard.drains, shard.pending, shard.quarantined]
