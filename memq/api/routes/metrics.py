"""``GET /metrics``: Prometheus' text format, unauthenticated like the health checks (counts
only, no tenant's data; keep it inside the cluster's network).

Two parts: this process' own metrics (memq.shared.metrics: HTTP latency, retrieval latency
and tokens, messages offered through the API) and the fleet's backlog, read from Redis and
PostgreSQL at each scrape (any API replica answers the same). ``memq_backlog`` is the figure
the worker autoscaler follows (deploy/k8s/keda-scaledobject.yaml). docs/observability.md
lists every metric."""

from __future__ import annotations

import os
from collections.abc import Iterator

from fastapi import APIRouter, Depends, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from memq.api.auth import services
from memq.api.services import Services
from memq.shared.db.memory_backlog import memory_backlog
from memq.shared.mailbox.backlog import measure_backlog
from memq.shared.metrics import metrics as process_metrics

router = APIRouter(tags=["health"])


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


class BacklogCollector(Collector):
    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def collect(self) -> Iterator[GaugeMetricFamily]:
        b = measure_backlog(self.svc.redis, self.svc.broker, self.svc.settings)
        yield _gauge(
            "memq_backlog",
            "Work waiting for workers: messages in the inboxes of conversations with a drain queued or "
            "running, plus stage tasks queued on the broker (what worker autoscaling follows).",
            b.total,
        )
        yield _gauge(
            "memq_inbox_messages",
            "Accepted messages not yet segmented (inboxes of waiting conversations).",
            b.inbox_messages,
        )
        yield _gauge(
            "memq_conversations_waiting", "Conversations with a drain queued or running.", b.conversations_waiting
        )
        yield _gauge(
            "memq_backlog_oldest_age_seconds",
            "Seconds since the oldest waiting conversation's drain was queued (0 when none waits).",
            b.oldest_wait_seconds,
        )
        yield _gauge(
            "memq_inbox_oldest_age_seconds",
            "Seconds since the oldest message still unread in a waiting inbox was accepted (0 when none).",
            b.oldest_message_age_seconds,
        )
        yield _gauge(
            "memq_open_conversations",
            "Conversations with an open event or unread messages (not yet closed into episodes).",
            b.open_conversations,
        )
        yield _gauge("memq_segments_pending", "Closed segments whose episode is not yet written.", b.segments_pending)
        yield _gauge(
            "memq_quarantined_conversations",
            "Conversations with a message or segment in the quarantine (memq quarantine list).",
            b.quarantined_conversations,
        )
        queued = GaugeMetricFamily(
            "memq_queued_tasks", "Tasks on a broker queue, not yet taken by a worker.", labels=["queue"]
        )
        for queue, n in b.queued_tasks.items():
            queued.add_metric([queue], n)
        yield queued
        with self.svc.connections.pool.connection(timeout=5) as conn:
            m = memory_backlog(conn)
        yield _gauge(
            "memq_pending_reviews", "Retrieved memories noted for review, not yet reviewed.", m.pending_reviews
        )
        yield _gauge(
            "memq_unconsolidated_episodes",
            "Episodes semantic consolidation has not yet read (grows without bound when it is off).",
            m.unconsolidated_episodes,
        )


@router.get("/metrics", response_class=Response, include_in_schema=False)  # Prometheus' text format, not JSON
def metrics(svc: Services = Depends(services)) -> Response:
    process_metrics()  # made on first use: a fresh process exports its families at zero
    own: CollectorRegistry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # `memq api --workers N`: the sum over the N processes
        own = CollectorRegistry()
        multiprocess.MultiProcessCollector(own)
    backlog = CollectorRegistry(auto_describe=False)
    backlog.register(BacklogCollector(svc))
    return Response(generate_latest(own) + generate_latest(backlog), media_type=CONTENT_TYPE_LATEST)
