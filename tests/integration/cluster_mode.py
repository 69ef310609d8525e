"""The integration suite's Redis Cluster mode: ``MEMQ_TEST_REDIS_CLUSTER=1``.

The mailbox (per-conversation keys and Lua scripts) then runs on a real 3-node Redis
Cluster started from the same redis-server binary on loopback ports (``make
test-cluster``), while the Celery broker stays on the embedded standalone Redis's
database 15 (kombu has no Redis Cluster transport). Where the cluster lives:

    MEMQ_TEST_REDIS_CLUSTER_DIR    default <MEMQ_DATA_DIR>/test-cluster
    MEMQ_TEST_REDIS_CLUSTER_PORT   first of its ports, default 7100
    MEMQ_TEST_REDIS_CLUSTER_NODES  default 3

The cluster is left running after the session (like the other embedded servers, so the
next run starts in milliseconds); ``memq services down`` stops it.
"""

from __future__ import annotations

import os

FLAG = "MEMQ_TEST_REDIS_CLUSTER"


def enabled() -> bool:
    return os.environ.get(FLAG, "").strip().lower() in {"1", "true", "yes", "on"}


def cluster(settings):
    """The test cluster (``memq.shared.embedded.redis_cluster.EmbeddedRedisCluster``)."""
    from memq.shared.embedded.redis_cluster import embedded_test_cluster

    return embedded_test_cluster(settings.data_path)


def prepare(settings) -> dict[str, str]:
    """Start (or reuse) the test cluster, empty it on every primary, and return the
    environment that puts the mailbox on it."""
    nodes = cluster(settings)
    url = nodes.start()
    nodes.flush()
    return {"MEMQ_MAILBOX_REDIS_URL": url, "MEMQ_MAILBOX_REDIS_CLUSTER": "true"}
