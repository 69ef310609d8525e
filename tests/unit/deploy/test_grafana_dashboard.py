"""deploy/grafana/memq.json, checked statically: a dashboard Grafana imports (unique panel
ids, every panel inside the 24-column grid and not overlapping another, a Prometheus
datasource variable every query uses), whose queries read only memq's own metrics and
parse as PromQL-shaped expressions. That a running fleet exports every metric it reads is
tests/integration/test_metrics_fleet.py; the worker's scrape port agrees with its setting
here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # types-PyYAML is not installed
from prometheus_client import CollectorRegistry

from memq.shared.metrics import build

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = json.loads((ROOT / "deploy" / "grafana" / "memq.json").read_text())
# The backlog gauges are read at each scrape (memq/api/routes/metrics.py), not defined in memq.shared.metrics.
BACKLOG = {
    "memq_backlog",
    "memq_inbox_messages",
    "memq_conversations_waiting",
    "memq_backlog_oldest_age_seconds",
    "memq_inbox_oldest_age_seconds",
    "memq_open_conversations",
    "memq_segments_pending",
    "memq_quarantined_conversations",
    "memq_queued_tasks",
    "memq_pending_reviews",
    "memq_unconsolidated_episodes",
}


def panels() -> list[dict[str, Any]]:
    return DASHBOARD["panels"]


def queried() -> set[str]:
    return {name for p in panels() for t in p.get("targets", []) for name in re.findall(r"\bmemq_[a-z_]+\b", t["expr"])}


def defined() -> set[str]:
    """Every sample name memq.shared.metrics exports, and the backlog's."""
    registry = CollectorRegistry()
    build(registry)
    names = {sample.name for family in registry.collect() for sample in family.samples}
    families = {family.name for family in registry.collect()}
    for family in registry.collect():  # histograms and counters with labels have no sample before use
        names |= {family.name + s for s in ("_total", "_bucket", "_sum", "_count")}
    return names | families | BACKLOG


def test_panels_have_unique_ids_and_fit_the_grid_without_overlap():
    ids = [p["id"] for p in panels()]
    assert len(ids) == len(set(ids))
    cells: dict[tuple[int, int], int] = {}
    for p in panels():
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] >= 1, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']} overlaps panel {cells[(x, y)]}"
                cells[(x, y)] = p["id"]


def test_every_query_uses_the_datasource_variable_and_has_a_ref_id():
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for p in panels():
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert refs and len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            assert t["expr"].count("(") == t["expr"].count(")"), t["expr"]
            assert t["expr"].count("{") == t["expr"].count("}"), t["expr"]


def test_the_dashboard_reads_only_metrics_memq_defines():
    unknown = queried() - defined()
    assert not unknown, f"queried but not defined: {sorted(unknown)}"


def test_the_dashboard_covers_each_area_the_operators_watch():
    titles = {p["title"] for p in panels() if p["type"] == "row"}
    assert titles == {"Throughput", "Backlog", "Stage latency", "LLM health", "API", "Memory and quarantine"}
    # each metric memq defines is on the dashboard
    families = {name for name in defined() if not name.endswith(("_bucket", "_sum", "_count", "_total", "_created"))}
    shown = {re.sub(r"_(bucket|sum|count|total)$", "", n) for n in queried()}
    assert families - shown == set(), f"not on the dashboard: {sorted(families - shown)}"


def test_the_worker_metrics_port_agrees_across_the_deployment_files():
    env = dict(
        line.split("=", 1)
        for line in (ROOT / "deploy" / "k8s" / "memq.env").read_text().splitlines()
        if line and not line.startswith("#")
    )
    port = env["MEMQ_WORKER_METRICS_PORT"]
    worker = next(yaml.safe_load_all((ROOT / "deploy" / "k8s" / "worker.yaml").read_text()))
    template = worker["spec"]["template"]
    assert template["metadata"]["annotations"]["prometheus.io/port"] == port
    (container,) = template["spec"]["containers"]
    assert {"name": "metrics", "containerPort": int(port)} in container["ports"]
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    assert str(compose["x-memq"]["environment"]["MEMQ_WORKER_METRICS_PORT"]) == port
