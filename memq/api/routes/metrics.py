"""``GET /metrics``: Prometheus' text format, unauthenticated like the health checks (counts
only, no tenant's data; keep it inside the cluster's network).

The backlog (``memq.shared.mailbox.backlog``) is measured at each scrape: ``memq_backlog`` is
the figure the worker autoscaler follows (deploy/k8s/keda-scaledobject.yaml)."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Depends, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from memq.api.auth import services
from memq.api.services import Services
from memq.shared.mailbox.backlog import measure_backlog

router = APIRouter(tags=["health"])


class BacklogCollector(Collector):
    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def collect(self) -> Iterator[GaugeMetricFamily]:
        b = measure_backlog(self.svc.redis, self.svc.broker, self.svc.settings)
        yield GaugeMetricFamily(
            "memq_backlog",
            "Work waiting for workers: messages in the inboxes of conversations with a drain queued or "
            "running, plus stage tasks queued on the broker (what worker autoscaling follows).",
            value=b.total,
        )
        yield GaugeMetricFamily(
            "memq_inbox_messages",
            "Accepted messages not yet segmented (inboxes of waiting conversations).",
            value=b.inbox_messages,
        )
        yield GaugeMetricFamily(
            "memq_conversations_waiting", "Conversations with a drain queued or running.", value=b.conversations_waiting
        )
        yield GaugeMetricFamily(
            "memq_backlog_oldest_age_seconds",
            "Seconds since the oldest waiting conversation's drain was queued (0 when none waits).",
            value=b.oldest_wait_seconds,
        )
        queued = GaugeMetricFamily(
            "memq_queued_tasks", "Tasks on a broker queue, not yet taken by a worker.", labels=["queue"]
        )
        for queue, n in b.queued_tasks.items():
            queued.add_metric([queue], n)
        yield queued


@router.get("/metrics", response_class=Response, include_in_schema=False)  # Prometheus' text format, not JSON
def metrics(svc: Services = Depends(services)) -> Response:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BacklogCollector(svc))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
