"""Metrics and logs of a running fleet: a real prefork worker (two pool processes) serving
its metrics from its main process, a real `memq api` process, the scripted LLM answering
through litellm, all on a broker database of their own (the tests' in-process worker never
takes their tasks). A conversation goes in over HTTP, is segmented, summarised and stored,
and a retrieval reads it back; then:

- every metric a panel of deploy/grafana/memq.json queries is exported by the worker or the API;
- the counts are the system's: episodes and boundaries counted across both pool processes
  equal the episodes stored, accepted messages equal those sent, one retrieval observed;
- the worker's log is JSON on every line, Celery's own task lines carrying their task id."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from browser import http_status
from processes import stop_process
from prometheus_client.parser import text_string_to_metric_families
from waiting import wait_until

from memq_lab.testing.scripted_llm import ScriptedLLM
from memq_lab.testing.tcp_proxy import free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MEMQ = str(ROOT / ".venv" / "bin" / "memq")
DASHBOARD = ROOT / "deploy" / "grafana" / "memq.json"
FLEET_DB = 11  # the tests' broker is db 15, the bench's 12
T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
SAID = [
    "I just moved from Lisbon to Porto, the new flat is near the river.",
    "Congratulations on the move to Porto! How is the flat?",
    "Bright and quiet, and my dog Pico loves the riverside walks.",
    "Different topic: my orchestra rehearses Brahms on Thursday.",
    "Brahms is a lovely programme for the cello section.",
    "The second movement is hard, I practise it every evening.",
]


def route(request: dict) -> dict:
    name = request["response_format"]["json_schema"]["name"]
    if name == "EpisodeTitleAndSummary":
        return {"title": "Ana talks with the assistant about her week", "summary": "Ana talks about her week."}
    if name == "TopicShift":
        signals = {"topic_shift": 0.1, "intent_shift": 0.1, "temporal_marker": 0.0}
        return {"is_boundary": False, "confidence": 0.2, "signals": signals, "updated_event_model": "a chat"}
    if name == "MemoryRatings":
        return {"ratings": []}
    if name == "Consolidation":
        return {"actions": []}
    raise AssertionError(f"unexpected request {name}")


def dashboard_metrics() -> set[str]:
    """The metric names the dashboard's queries read (label names and functions aside)."""
    import re

    names: set[str] = set()
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            names |= set(re.findall(r"\bmemq_[a-z_]+\b", target["expr"]))
    return names


def scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Sample name -> {sorted labels: value}."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(httpx.get(url, timeout=10).text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def total(samples: dict, name: str, **labels: str) -> float:
    return sum(v for key, v in samples.get(name, {}).items() if set(labels.items()) <= set(key))


def test_a_running_fleet_exports_what_the_dashboard_reads_and_logs_json(service_env, settings, db, tmp_path):
    import redis

    from memq.cli.worker_commands import worker_argv
    from memq.producer.client import Producer
    from memq.shared.db.api_keys import create_key
    from memq.worker_process import wait_warm

    tenant = f"t{uuid.uuid4().hex[:10]}"
    key, _ = create_key(db, tenant, "metrics")
    auth = {"Authorization": f"Bearer {key.key}"}
    broker_url = service_env["REDIS_URL"].rsplit("/", 1)[0] + f"/{FLEET_DB}"
    redis.Redis.from_url(broker_url).flushdb()
    worker_port, api_port = free_port(), free_port()
    api, worker = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{worker_port}"
    worker_log = tmp_path / "worker.log"
    with ScriptedLLM() as llm:
        llm.default = route
        env = {k: v for k, v in {**os.environ, **service_env}.items() if not k.startswith("MEMQ_MAILBOX_REDIS")}
        env.update(
            REDIS_URL=broker_url,
            MEMQ_WORKER_METRICS_PORT=str(worker_port),
            MEMQ_LLM_MODEL="openai/scripted",
            MEMQ_LLM_API_BASE=llm.base_url,
            MEMQ_LLM_API_KEY="test-key",
            MEMQ_LOG_FORMAT="json",
            MEMQ_LOG_LEVEL="INFO",
        )
        since = time.time()
        processes: list[subprocess.Popen] = [
            subprocess.Popen(
                worker_argv(concurrency=2, hostname="metrics@%h", pool="prefork", loglevel="INFO"),
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=worker_log.open("wb"),
            ),
            subprocess.Popen(
                [MEMQ, "api", "--port", str(api_port)],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            ),
        ]
        try:
            fleet = settings.model_copy(
                update={"redis_url": broker_url, "mailbox_redis_url": None, "mailbox_redis_cluster": False}
            )
            wait_warm(redis.Redis.from_url(broker_url), fleet.key_prefix, since, 2, log_hint=f"see {worker_log}")

            def api_ready() -> bool:
                code = processes[1].poll()
                assert code is None, f"the API ready: the process exited with code {code}"
                return http_status(f"{api}/readyz") == 200

            # polled every 0.2 s: readiness has no event to wait on
            wait_until(api_ready, 120, interval=0.2, message="the API ready")

            conv = "metrics-fleet"
            messages = [
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": text,
                    "timestamp": (T0 + timedelta(seconds=30 * i + (7200 if i >= 3 else 0))).isoformat(),
                }
                for i, text in enumerate(SAID)
            ]
            r = httpx.post(f"{api}/v1/conversations/{conv}/messages", json={"messages": messages}, headers=auth)
            assert r.status_code == 202, r.text
            assert httpx.post(f"{api}/v1/conversations/{conv}/flush", headers=auth).status_code == 202
            Producer(fleet).wait_idle(conv, tenant=tenant, timeout=180)
            episodes = httpx.get(f"{api}/v1/conversations/{conv}/episodes?format=json", headers=auth).json()
            stored = len(episodes["episodes"])
            assert stored >= 2  # two hours apart: a time gap
            r = httpx.post(
                f"{api}/v1/memory/retrieve?format=json", json={"query": "where does Ana live?"}, headers=auth
            )
            assert r.status_code == 200, r.text

            from_worker, from_api = scrape(f"{worker}/metrics"), scrape(f"{api}/metrics")
        finally:
            for p in processes:
                stop_process(p)

    exported = set(from_worker) | set(from_api)
    families = {name.removesuffix(suffix) for name in exported for suffix in ("_bucket", "_sum", "_count", "")}
    missing = {name for name in dashboard_metrics() if name not in exported and name not in families}
    assert not missing, f"the dashboard reads metrics nothing exports: {sorted(missing)}"

    # Counted across both pool processes (multiprocess mode) and equal to what was stored.
    assert total(from_worker, "memq_episodes_created_total", summary_source="llm") == stored
    assert total(from_worker, "memq_boundaries_total") == stored
    assert total(from_worker, "memq_llm_calls_total", stage="episode_summary", outcome="ok") == stored
    assert total(from_worker, "memq_embedding_texts_total") >= len(SAID)
    assert total(from_worker, "memq_task_seconds_count", task="memq.event_segmentation", state="SUCCESS") >= 1
    # The API's own: the messages it accepted, its requests by route template, one retrieval.
    assert total(from_api, "memq_messages_total", outcome="accepted") == len(SAID)
    route_ = "/v1/conversations/{conversation_id}/messages"
    assert total(from_api, "memq_http_request_seconds_count", route=route_, status="202") == 1
    assert total(from_api, "memq_retrieval_seconds_count") == 1
    assert total(from_api, "memq_backlog") == 0

    # The worker's log: JSON on every line; Celery's own task lines name their task.
    lines = [json.loads(line) for line in worker_log.read_text().splitlines() if line.strip()]
    celery_lines = [e for e in lines if str(e.get("logger", "")).startswith("celery.app.trace")]
    assert celery_lines and all(e.get("task_id") and e.get("task_name") for e in celery_lines), celery_lines[:3]
    created = [e for e in lines if e.get("event") == "episode_created"]
    assert len(created) == stored and all(e.get("task_id") and e.get("conversation_id") == conv for e in created)
