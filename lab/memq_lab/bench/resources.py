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

Targets (``TARGETS``; a floor measured in the same run where there is one):

- The model once per process that needs it. ``_model_alone`` runs a bare Python process
  that loads the configured embedding model and embeds the run's texts, nothing else
  (the least any process that embeds holds), then loads and uses a second copy. A pool
  process (the model, Celery, psycopg, the pipeline) and the API must hold less than that
  process with two copies (target ratio 1); the worker's main process at most half of it
  with one (it must not load the model); a busy pool process at most 1.5 x its idle self
  (working memory, no growth with the work).
- PostgreSQL at most 6 KiB per stored message (its text, its 384-float vector, its
  tsvector and their indexes) and 16 KiB per episode.
- Redis at most 3 x a waiting message's own encoded payload (the floor) per message
  buffered; an idle conversation at most 4 KiB besides the overlap tail it keeps for its
  next episode (``redis_bytes_idle_state``: at most ``overlap_tokens`` of the last
  messages' text, which a flush does not end: an inactivity collapse or a flush closes the
  event, not the conversation), and no key of it without a TTL
  (``redis_keys_without_ttl``, target 0): once its TTL passes it costs nothing.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from memq_lab.bench.context import BenchContext
from memq_lab.bench.measurement import Measurement
from memq_lab.bench.pipeline import Conversation, enqueue, key_bytes, memory_mib, plan
from memq_lab.bench.sql import one_row

# name -> target: a ratio to the floor where the measurement has one, else the value itself
# (every one "at most")
TARGETS: dict[str, float | None] = {
    "rss_worker_idle": 1.0,
    "rss_worker_busy": 1.5,
    "rss_worker_main": 0.5,
    "rss_api": 1.0,
    "pg_bytes_per_message": 6 * 1024,
    "pg_bytes_per_episode": 16 * 1024,
    "redis_bytes_per_buffered_message": 3.0,
    "redis_bytes_idle_conversation": None,
    "redis_bytes_idle_state": 4 * 1024,
    "redis_keys_without_ttl": 0,
}

# what ``_model_alone`` runs: the configured model in a bare process, its RSS after
# embedding the texts it reads on stdin, then the same with a second copy loaded and used
_MODEL_ALONE = """
import json, sys
import psutil
from memq.shared import embeddings
from memq.shared.settings import get_settings
texts, settings, copies, rss = json.loads(sys.stdin.read()), get_settings(), [], []
for _ in range(2):
    embeddings._build.cache_clear()  # a new instance: the first stays referenced
    copies.append(embeddings.get_embedder(settings))
    copies[-1].embed(texts)
    rss.append(psutil.Process().memory_info().rss)
print(json.dumps(rss))
"""


def _model_alone(conversations: list[Conversation]) -> Callable[[], tuple[float, float]]:
    """Starts a bare Python process that loads the configured embedding model and embeds the
    run's texts, then a second copy; the returned call waits for it and gives its RSS in MiB
    with one copy (the least any process that embeds holds) and with two. Started before
    the API, the two load their models at the same time."""
    with tempfile.TemporaryFile("w+") as texts:  # its stdin: a pipe would block this process until it reads
        json.dump([m["content"] for c in conversations for m in c.messages], texts)
        texts.seek(0)
        process = subprocess.Popen(
            [sys.executable, "-c", _MODEL_ALONE], stdin=texts, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def result() -> tuple[float, float]:
        try:
            stdout, stderr = process.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            process.kill()
            raise RuntimeError("the bare model process did not finish in 600 s") from None
        if process.returncode != 0:
            raise RuntimeError(f"the bare model process failed: {stderr[-2000:]}")
        one, two = json.loads(stdout.strip().splitlines()[-1])
        return one / (1024 * 1024), two / (1024 * 1024)

    return result


def _payload_bytes(conversations: list[Conversation]) -> float:
    """A waiting message's own size: its JSON payload as the producer encodes it (with a
    sent time of today's number of digits), mean over the run's messages."""
    from memq.shared.mailbox.codec import encode_payload

    sizes = [
        len(encode_payload(m["message_id"], m["role"], m["content"], 1_764_000_000_000_000, None).encode())
        for c in conversations
        for m in c.messages
    ]
    return sum(sizes) / max(1, len(sizes))


def _redis_inbox_bytes(ctx: BenchContext, conversations: list[Conversation]) -> tuple[float, int]:
    """Bytes per message waiting in an inbox (nothing consumes: no worker runs yet)."""
    from memq.producer.client import Producer

    producer = Producer(ctx.settings)
    tenant = ctx.tenant("inbox")
    total = enqueue(producer, tenant, conversations)
    held = 0
    for c in conversations:
        keys = producer.keys(c.id, tenant)
        held += sum(key_bytes(producer.redis, k) for k in (keys.inbox, keys.state, keys.ids))
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
    from memq_lab.testing.tcp_proxy import free_port

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
    from memq_lab.bench.pipeline import forget, pipeline_run

    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    conversations = plan(ctx, max(60, ctx.scale.pipeline_messages // 4), max(3, ctx.scale.pipeline_conversations // 4))
    inbox_bytes, queued = _redis_inbox_bytes(ctx, conversations)
    # the pipeline family's one-process worker when it ran, else a short run of its own
    worker = ctx.shared.get("pipeline_run_1")
    if worker is None:
        [worker] = pipeline_run(ctx, 1, conversations)
        forget(ctx, [worker], conversations)
    m = worker.memory
    alone_rss = _model_alone(conversations)
    try:
        tables = _table_bytes(ctx)
        api_ready, api_served = _api(ctx)
    finally:
        model_once, model_twice = alone_rss()
    mib = "MiB"
    alone = {"model_once_rss": round(model_once, 1), "model_twice_rss": round(model_twice, 1)}

    def size(name: str, value: float, unit: str, floor: float | None = None, **params: object) -> Measurement:
        return Measurement(name, value, unit, floor=floor, higher_is_better=False, target=TARGETS[name], params=params)

    def memory(name: str, key: str, process: str, floor: float) -> Measurement:
        return size(name, m[f"{key}_rss"], mib, floor, pss=round(m[f"{key}_pss"], 1), process=process, **alone)

    return [
        memory("rss_worker_idle", "pool_idle", "pool (warm, idle); floor: the model twice", model_twice),
        memory("rss_worker_busy", "pool_busy", "pool (highest while busy); floor: the pool idle", m["pool_idle_rss"]),
        memory("rss_worker_main", "main_idle", "main (loads no model); floor: the model once", model_once),
        size(
            "rss_api",
            api_ready,
            mib,
            model_twice,
            after_30_retrievals=round(api_served, 1),
            floor_is="the model twice",
            **alone,
        ),
        size(
            "pg_bytes_per_message",
            tables["episode_message"][0],
            "bytes",
            rows=tables["episode_message"][1],
            table="episode_message + indexes",
        ),
        size(
            "pg_bytes_per_episode",
            tables["episodic_memory"][0],
            "bytes",
            rows=tables["episodic_memory"][1],
            table="episodic_memory + indexes",
        ),
        size(
            "redis_bytes_per_buffered_message",
            inbox_bytes,
            "bytes",
            floor=_payload_bytes(conversations),
            messages=queued,
            floor_is="the message's encoded payload",
        ),
        size(
            "redis_bytes_idle_conversation",
            worker.idle_conversation_bytes,
            "bytes",
            ttl_days=round(worker.idle_ttl_days, 1),
            overlap_bytes=round(worker.idle_overlap_bytes),
        ),
        size(
            "redis_bytes_idle_state",
            worker.idle_conversation_bytes - worker.idle_overlap_bytes,
            "bytes",
            excludes="the overlap tail's text (overlap_bytes above): the next episode's context, kept by design",
        ),
        size("redis_keys_without_ttl", worker.keys_without_ttl, "keys", conversations=len(conversations)),
    ]
