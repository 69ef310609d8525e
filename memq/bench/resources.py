"""What memq holds: memory of its processes, bytes in PostgreSQL and in Redis.

- Worker processes: RSS and PSS (proportional set size: shared pages counted once across
  the processes sharing them) of the worker's main process and its pool process, idle
  (warm, nothing queued) and busy (the highest seen while the pipeline benchmark's
  conversations go through; measured by ``pipeline``). The main process must not hold the
  embedding model: only pool processes load it.
- The API process (``memq api``): RSS once warm and after serving retrievals.
- PostgreSQL: table + index bytes per stored message and per episode (whole tables, as
  they stand after this run's data went in).
- Redis: bytes per message waiting in an inbox (no worker running), and what an idle
  conversation keeps (its state and dedup window) with the TTL after which it costs nothing.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

import httpx

from memq.bench.context import BenchContext
from memq.bench.measurement import Measurement
from memq.bench.pipeline import Conversation, enqueue, memory_mib, one_row, plan


def _redis_inbox_bytes(ctx: BenchContext, conversations: list[Conversation]) -> tuple[float, int]:
    """Bytes per message waiting in an inbox (nothing consumes: no worker runs yet)."""
    from memq.producer.client import Producer

    producer = Producer(ctx.settings)
    tenant = ctx.tenant("inbox")
    total = enqueue(producer, tenant, conversations)
    held = 0
    for c in conversations:
        keys = producer.keys(c.id, tenant)
        held += sum(producer.redis.memory_usage(k) or 0 for k in (keys.inbox, keys.state, keys.ids))
    for c in conversations:
        producer.redis.delete(*producer.keys(c.id, tenant).all())
        with contextlib.suppress(Exception):
            producer.redis.zrem(producer.keys(c.id, tenant).shard.active, producer.keys(c.id, tenant).member)
            producer.redis.zrem(producer.keys(c.id, tenant).shard.drains, producer.keys(c.id, tenant).member)
    return held / total, total


def _table_bytes(ctx: BenchContext) -> dict[str, tuple[float, int]]:
    """Table + index bytes per row of the two tables that grow with messages."""
    from memq.shared.connections import pg_owner_connect

    found = {}
    with pg_owner_connect(ctx.settings, autocommit=True) as conn:
        for table in ("episode_message", "episodic_memory"):
            size, rows = one_row(conn, f"SELECT pg_total_relation_size('{table}'), (SELECT count(*) FROM {table})")
            found[table] = (size / max(1, rows), int(rows))
    return found


def _api(ctx: BenchContext) -> tuple[float, float]:
    """RSS (MiB) of ``memq api`` once ready, and after 30 retrievals."""
    from memq.shared.connections import pg_owner_connect
    from memq.shared.db.api_keys import create_key
    from memq.testing.tcp_proxy import free_port

    port = free_port()
    memq = str(Path(sys.executable).with_name("memq"))
    log = (ctx.out_dir / "bench-api.log").open("ab")
    server = subprocess.Popen([memq, "api", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    tenant = ctx.tenant("api")
    with pg_owner_connect(ctx.settings, autocommit=True) as conn:
        key, row = create_key(conn, tenant, "memq bench")
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"memq api did not start; see {ctx.out_dir / 'bench-api.log'}")
            time.sleep(0.2)
        (ready, _), headers = memory_mib(server.pid), {"Authorization": f"Bearer {key.key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
            for i in range(30):
                client.post("/v1/memory/retrieve", json={"query": f"what did we plan for the trip {i}?"})
        served, _ = memory_mib(server.pid)
        return ready, served
    finally:
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=30)
        if server.poll() is None:
            server.kill()
        log.close()
        with pg_owner_connect(ctx.settings, autocommit=True) as conn:
            conn.execute("DELETE FROM api_key WHERE id = %s", (row.id,))  # the bench's key leaves no row


def run(ctx: BenchContext) -> list[Measurement]:
    from memq.bench.pipeline import pipeline_run

    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    conversations = plan(ctx, max(60, ctx.scale.pipeline_messages // 4), max(3, ctx.scale.pipeline_conversations // 4))
    inbox_bytes, queued = _redis_inbox_bytes(ctx, conversations)
    # the pipeline family's one-process worker when it ran, else a short run of its own
    worker = ctx.shared.get("pipeline_run_1") or pipeline_run(ctx, 1, conversations, profile=False)
    m = worker.memory
    tables = _table_bytes(ctx)
    api_ready, api_served = _api(ctx)
    mib = "MiB"

    def memory(name: str, key: str, process: str) -> Measurement:
        return Measurement(
            name,
            m[f"{key}_rss"],
            mib,
            higher_is_better=False,
            params={"pss": round(m[f"{key}_pss"], 1), "process": process},
        )

    return [
        memory("rss_worker_idle", "pool_idle", "pool (warm, idle)"),
        memory("rss_worker_busy", "pool_busy", "pool (highest while busy)"),
        memory("rss_worker_main", "main_idle", "main (loads no model)"),
        Measurement(
            "rss_api", api_ready, mib, higher_is_better=False, params={"after_30_retrievals": round(api_served, 1)}
        ),
        Measurement(
            "pg_bytes_per_message",
            tables["episode_message"][0],
            "bytes",
            higher_is_better=False,
            params={"rows": tables["episode_message"][1], "table": "episode_message + indexes"},
        ),
        Measurement(
            "pg_bytes_per_episode",
            tables["episodic_memory"][0],
            "bytes",
            higher_is_better=False,
            params={"rows": tables["episodic_memory"][1], "table": "episodic_memory + indexes"},
        ),
        Measurement(
            "redis_bytes_per_buffered_message",
            inbox_bytes,
            "bytes",
            higher_is_better=False,
            params={"messages": queued},
        ),
        Measurement(
            "redis_bytes_idle_conversation",
            worker.idle_conversation_bytes,
            "bytes",
            higher_is_better=False,
            params={"ttl_days": round(worker.idle_ttl_days, 1), "keys_without_ttl": worker.keys_without_ttl},
        ),
    ]
