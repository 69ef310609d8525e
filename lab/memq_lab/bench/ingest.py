"""Ingest throughput, in messages per second, each figure next to its floor measured in the
same run on the same Redis with the same payloads.

Library: ``Producer.add_messages`` with batches of 1, 10 and 100 real utterances (roles
alternating, increasing timestamps, caller message ids), ``ingest_messages`` per batch
size, batch k going to conversation k mod 20 (round-robin). Floor: a bare redis-py
pipeline on a client of the same type to the same Redis, one pipeline (one round trip)
per batch: the batch's messages JSON-encoded as the producer encodes them
(``encode_payload``, timed too: any producer serialises its messages) and appended with
one RPUSH to a scratch list per conversation. That is the least any producer must do;
what memq adds is validation, the Lua enqueue (dedup window, timestamp order, inbox,
indexes) and publishing a drain task when a conversation has none queued.

HTTP: the real API in a uvicorn subprocess (one worker process, as ``memq api`` runs it)
with a key for the bench tenant; ``clients`` concurrent clients (httpx, asyncio, each its
own keep-alive connection and conversation) sending batches of ``HTTP_BATCH`` messages
per request, ``http_messages`` per concurrency level, measured client-side. Floor: the
same clients sending the same bodies to a bare endpoint of the same server process and
stack (``memq_lab.bench.ingest_server``: same app, middleware, auth and request model, no
Redis).

Floor and memq runs alternate ``repeats(messages)`` times (3, more for a small run such
as the quick scale's), each with fresh conversations and ids, and the best of each is kept
(the machine is shared: the best run is the one least disturbed).

Isolation and cleanup: everything runs against a scratch Redis database of the same
server (``SCRATCH_DB``; the broker's URL with another database number) and under a key
prefix of the run (``bench-<run>``). The drain tasks the producer publishes land in that
database's Celery queues, where no worker listens (a worker consumes its own database),
so none is ever picked up; at the end the run removes exactly its own tasks (those whose
tenant is the run's) and every key under its prefix (on the mailbox Redis too, when
``MEMQ_MAILBOX_REDIS_URL`` puts the mailbox elsewhere: the prefix keeps the workers'
sweepers, which walk ``<key_prefix>:{s*}`` indexes, away from it), deletes the API key it
created and stops the server.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import math
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psutil

from memq_lab.bench.context import BenchContext
from memq_lab.bench.measurement import Measurement
from memq_lab.bench.sql import wait_quiet
from memq_lab.bench.texts import utterances

if TYPE_CHECKING:
    import redis

    from memq.shared.connections import MailboxClient
    from memq.shared.settings import Settings

BATCHES = (1, 10, 100)  # library batch sizes; the target is set at the largest
CONVERSATIONS = 20  # library: batches go round-robin over this many conversations
HTTP_BATCH = 10  # messages per HTTP request
REPEATS = 3  # floor and memq runs alternate at least this many times; the best of each is kept
# ... and more (at most MAX_REPEATS) when a run is smaller: a library run of 5,000 messages
# in batches of 100 lasts ~50 ms, and the best of 3 such runs still moved its ratio by
# +-0.06 from one bench to the next on this machine
MIN_MESSAGES = 50_000
MAX_REPEATS = 10
SCRATCH_DB = 14  # the bench's Redis database (the tests use 15, development 0)
TARGET = 0.5  # the issue's: library at batch 100, and HTTP, at least half their floors
ROLES = ("user", "assistant")

Batch = tuple[str, list[dict[str, Any]]]  # (conversation id, its messages in order)


# -- pure parts ---------------------------------------------------------------------------
def plan_batches(
    texts: Sequence[str], total: int, batch: int, conversations: int, tag: str, start: datetime
) -> list[Batch]:
    """``total`` messages in batches of ``batch`` (the last may be short), batch k for
    conversation ``<tag>-<k mod conversations>``. Message n of the whole run has text
    ``texts[n mod len]`` and timestamp ``start + n s`` (so each conversation's increase);
    roles alternate within a conversation; ids are ``<conversation>-<i>``."""
    if not texts or total < 1 or batch < 1 or conversations < 1:
        raise ValueError("plan_batches: texts, and a positive total, batch and number of conversations are needed")
    counts = [0] * conversations
    out: list[Batch] = []
    for k in range(math.ceil(total / batch)):
        c = k % conversations
        conv = f"{tag}-{c}"
        messages = []
        for n in range(k * batch, min(total, (k + 1) * batch)):
            i = counts[c]
            counts[c] += 1
            messages.append(
                {
                    "role": ROLES[i % 2],
                    "content": texts[n % len(texts)],
                    "timestamp": start + timedelta(seconds=n),
                    "message_id": f"{conv}-{i}",
                }
            )
        out.append((conv, messages))
    return out


def for_clients(batches: Sequence[Batch], clients: int) -> list[list[Batch]]:
    """Batch k to client k mod ``clients`` (with ``plan_batches(..., conversations=clients)``
    each client sends its own conversation, in order)."""
    return [list(batches[c::clients]) for c in range(clients)]


def request_body(messages: Sequence[dict[str, Any]]) -> bytes:
    """The JSON body of ``POST /v1/conversations/{id}/messages`` for these messages."""
    return json.dumps(
        {"messages": [{**m, "timestamp": m["timestamp"].isoformat()} for m in messages]}, ensure_ascii=False
    ).encode()


def repeats(messages: int) -> int:
    """How many times floor and memq runs of ``messages`` alternate: ``REPEATS``, or enough
    for ``MIN_MESSAGES`` in all (at most ``MAX_REPEATS``), so that a small run is not one
    scheduler hiccup."""
    return max(REPEATS, min(MAX_REPEATS, math.ceil(MIN_MESSAGES / max(1, messages))))


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0 < q <= 100) of ``values``."""
    if not values:
        raise ValueError("percentile of nothing")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def on_database(url: str, db: int) -> str:
    """The Redis URL ``url`` with database ``db`` (``redis://``, ``rediss://`` or ``unix://``)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "db"]
    if parts.scheme == "unix":  # the database is a query parameter
        return f"unix://{parts.netloc}{parts.path}?{urlencode([*query, ('db', str(db))])}"
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", urlencode(query), parts.fragment))


def task_tenant(raw: str | bytes) -> str | None:
    """The tenant (first argument) of a memq task as kombu's Redis transport queues it, or
    None for anything else."""
    try:
        message = json.loads(raw)
        if not str(message["headers"]["task"]).startswith("memq."):
            return None
        body = message["body"]
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    return args[0] if args and isinstance(args[0], str) else None


# -- measuring ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Rate:
    messages: int
    seconds: float
    latencies: tuple[float, ...] = ()  # seconds per call or request
    server_cpu: float | None = None  # the server's CPU seconds per wall second during the run
    client_cpu: float | None = None  # this process's, likewise
    drains: int | None = None  # drain tasks published during the run

    @property
    def per_second(self) -> float:
        return self.messages / self.seconds

    def ms(self, q: float) -> float:
        return round(percentile(self.latencies, q) * 1000, 2)


def best(rates: Sequence[Rate]) -> Rate:
    return max(rates, key=lambda r: r.per_second)


def scratch_settings(ctx: BenchContext) -> Settings:
    """The run's settings: the broker (and the mailbox, unless it is elsewhere) on the
    scratch database of the same Redis, every key under the run's prefix."""
    from memq.shared.connections import redis_url

    return ctx.settings.model_copy(
        update={"redis_url": on_database(redis_url(ctx.settings), SCRATCH_DB), "key_prefix": f"bench-{ctx.run_id}"}
    )


def _timed(calls: Sequence[Callable[[], object]], messages: int) -> Rate:
    latencies = []
    t0 = time.perf_counter()
    for call in calls:
        c0 = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - c0)
    return Rate(messages, time.perf_counter() - t0, tuple(latencies))


def library_rates(ctx: BenchContext, settings: Settings, tenant: str, batch: int) -> tuple[Rate, Rate]:
    """(memq, floor) for one batch size, each the best of ``repeats`` alternating runs."""
    from memq.producer.client import Producer
    from memq.shared import tasks
    from memq.shared.connections import mailbox_client, redis_client
    from memq.shared.mailbox.backlog import queue_lists
    from memq.shared.mailbox.codec import encode_payload, to_micros

    producer = Producer(settings)
    bare = mailbox_client(settings)
    broker = redis_client(settings)

    def queued() -> int:
        return sum(int(broker.llen(name)) for name in queue_lists(tasks.SEGMENTATION_QUEUE))

    texts = [u.text for u in utterances(ctx.data_dir)]
    start = datetime.now(UTC) - timedelta(days=2)
    total = ctx.scale.ingest_messages
    scratch = f"{settings.key_prefix}:floor"

    def floor_call(conv: str, messages: list[dict[str, Any]]) -> Callable[[], object]:
        def call() -> object:
            payloads = [
                encode_payload(m["message_id"], m["role"], m["content"], to_micros(m["timestamp"]), None)
                for m in messages
            ]
            pipe = bare.pipeline(transaction=False)
            pipe.rpush(f"{scratch}:{conv}", *payloads)
            return pipe.execute()

        return call

    def memq_call(conv: str, messages: list[dict[str, Any]]) -> Callable[[], object]:
        return lambda: producer.add_messages(messages, conversation_id=conv, tenant=tenant)

    # Warm both: the scripts loaded, the connections (and the Celery publisher's) open.
    warm = plan_batches(texts, batch, batch, 1, f"lib{batch}-warm", start)
    memq_call(*warm[0])()
    floor_call(*warm[0])()
    memq_runs, floor_runs = [], []
    for rep in range(repeats(total)):
        plan = plan_batches(texts, total, batch, CONVERSATIONS, f"lib{batch}-r{rep}", start)
        floor_runs.append(_timed([floor_call(c, m) for c, m in plan], total))
        before = queued()
        memq = _timed([memq_call(c, m) for c, m in plan], total)
        memq_runs.append(replace(memq, drains=queued() - before))
    bare.close()
    broker.close()
    return best(memq_runs), best(floor_runs)


def _server_env(ctx: BenchContext, settings: Settings, rate_limited: bool = False) -> dict[str, str]:
    from memq.shared.connections import database_url

    env = dict(os.environ)
    env.update(
        {
            "REDIS_URL": str(settings.redis_url),
            "DATABASE_URL": database_url(ctx.settings),
            "MEMQ_KEY_PREFIX": settings.key_prefix,
            "MEMQ_DATA_DIR": str(ctx.settings.data_path),
            "MEMQ_API_AUTH": "true",
        }
    )
    if not rate_limited:
        # capacity is measured, not the per-key limits: their checks still run on every
        # request (their Redis round trips are part of the cost), at rates never reached
        never = "1000000000"
        for limit in ("", "_MESSAGES"):
            env.update({f"MEMQ_API_RATE_LIMIT{limit}_PER_SECOND": never, f"MEMQ_API_RATE_LIMIT{limit}_BURST": never})
    env.pop("MEMQ_REDIS_URL", None)  # REDIS_URL above is the one
    if settings.mailbox_redis_url:
        env["MEMQ_MAILBOX_REDIS_URL"] = settings.mailbox_redis_url
    return env


@contextlib.contextmanager
def api_server(
    ctx: BenchContext, settings: Settings, *, rate_limited: bool = False
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The API with the bench's noop endpoint, in a subprocess on a free port (with the
    settings' per-key rate limits when ``rate_limited``, else limits never reached)."""
    import httpx

    from memq_lab.testing.tcp_proxy import free_port

    port = free_port()
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    log_path = ctx.out_dir / "bench-api.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "memq_lab.bench.ingest_server", "--port", str(port)],
            env=_server_env(ctx, settings, rate_limited),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, process, log_path, httpx)
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _wait_ready(url: str, process: subprocess.Popen[bytes], log_path: Path, httpx: Any) -> None:
    deadline = time.monotonic() + 300
    last = "no answer"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"the bench API exited with code {process.returncode}; {log_path} ends: {_tail(log_path)}"
            )
        try:
            answer = httpx.get(f"{url}/healthz", timeout=2)
            if answer.status_code == 200:
                return
            last = f"HTTP {answer.status_code}"
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.3)
    raise RuntimeError(f"the bench API did not answer within 300 s ({last}); {log_path} ends: {_tail(log_path)}")


def _tail(path: Path, size: int = 2000) -> str:
    """The end of a log, for an error message (the log itself is overwritten by the next run)."""
    try:
        return path.read_bytes()[-size:].decode(errors="replace")
    except OSError as exc:
        return f"(unreadable: {exc})"


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every client of the run: httpx makes one per client otherwise
    (~40 ms each, loading the CA bundle), which took more of a small run than its requests."""
    return ssl.create_default_context()


async def _load(url: str, key: str, path: str, work: list[list[tuple[str, bytes]]], messages: int, server: Any) -> Rate:
    """Each client (its own keep-alive connection) sends its requests one after the other,
    all clients at once; timed from the first request to the last answer, the server's and
    this process's CPU time over the same window."""
    import httpx

    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    clients = [httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60, verify=_tls()) for _ in work]
    latencies: list[float] = []

    async def one(client: httpx.AsyncClient, requests: list[tuple[str, bytes]]) -> None:
        for conv, body in requests:
            t0 = time.perf_counter()
            response = await client.post(path.format(conversation_id=conv), content=body)
            latencies.append(time.perf_counter() - t0)
            if response.status_code != 202:
                raise RuntimeError(f"POST {path}: {response.status_code} {response.text[:300]}")

    try:
        await asyncio.gather(*(c.get("/healthz") for c in clients))  # connections open before the clock
        cpu0, own0, t0 = sum(server.cpu_times()[:2]), time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(c, w) for c, w in zip(clients, work)))
        seconds = time.perf_counter() - t0
        cpu, own = sum(server.cpu_times()[:2]) - cpu0, time.process_time() - own0
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))
    return Rate(messages, seconds, tuple(latencies), round(cpu / seconds, 2), round(own / seconds, 2))


def http_rate(url: str, key: str, path: str, work: list[list[tuple[str, bytes]]], messages: int, server: Any) -> Rate:
    return asyncio.run(_load(url, key, path, work, messages, server))


def http_rates(ctx: BenchContext, url: str, key: str, process: subprocess.Popen[bytes]) -> dict[int, tuple[Rate, Rate]]:
    """clients -> (memq, floor), each the best of ``repeats`` alternating runs."""
    from memq_lab.bench.ingest_server import NOOP_PATH

    server = psutil.Process(process.pid)
    texts = [u.text for u in utterances(ctx.data_dir)]
    start = datetime.now(UTC) - timedelta(days=1)
    real = "/v1/conversations/{conversation_id}/messages"

    total = ctx.scale.http_messages

    def work(tag: str, clients: int) -> list[list[tuple[str, bytes]]]:
        plan = plan_batches(texts, total, HTTP_BATCH, clients, tag, start)
        return [[(c, request_body(m)) for c, m in part] for part in for_clients(plan, clients)]

    http_rate(url, key, real, work("http-warm", 2), total, server)  # the first requests of each path
    http_rate(url, key, NOOP_PATH, work("http-warm-noop", 2), total, server)
    found = {}
    for clients in ctx.scale.http_clients:
        memq_runs, floor_runs = [], []
        for rep in range(repeats(total)):
            floor_runs.append(http_rate(url, key, NOOP_PATH, work(f"noop{clients}-r{rep}", clients), total, server))
            memq_runs.append(http_rate(url, key, real, work(f"http{clients}-r{rep}", clients), total, server))
        found[clients] = (best(memq_runs), best(floor_runs))
    return found


# -- cleanup ------------------------------------------------------------------------------
def remove_tasks(broker: redis.Redis, tenants: set[str]) -> int:
    """Remove the memq tasks of ``tenants`` from the broker's queues; how many were removed."""
    from memq.shared import tasks
    from memq.shared.mailbox.backlog import queue_lists

    removed = 0
    for queue in tasks.ALL_QUEUES:
        for name in queue_lists(queue):
            for raw in cast(list[str], broker.lrange(name, 0, -1)):
                if task_tenant(raw) in tenants:
                    removed += int(broker.lrem(name, 0, raw))
    return removed


def remove_keys(client: MailboxClient, prefix: str) -> int:
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    pipe = client.pipeline(transaction=False)
    for key in keys:  # one DEL per key: a Redis Cluster pipeline refuses a multi-key DEL
        pipe.delete(key)
    return sum(int(n) for n in pipe.execute()) if keys else 0


def cleanup(ctx: BenchContext, settings: Settings, tenant: str, key_id: str | None) -> None:
    from memq.shared.connections import mailbox_client, pg_owner_connect, redis_client

    broker = redis_client(settings)
    tasks_removed = remove_tasks(broker, {tenant})
    mailbox = mailbox_client(settings)
    keys_removed = remove_keys(mailbox, settings.key_prefix)
    broker.close()
    mailbox.close()
    if key_id is not None:
        with pg_owner_connect(ctx.settings, autocommit=True) as conn:
            conn.execute("DELETE FROM api_key WHERE id = %s", (key_id,))
    ctx.console.print(f"  cleaned up: {keys_removed} Redis keys, {tasks_removed} drain tasks, the API key")


# -- the family ---------------------------------------------------------------------------
def library_measurements(ctx: BenchContext, settings: Settings, tenant: str) -> list[Measurement]:
    found = []
    for batch in BATCHES:
        rate, floor = library_rates(ctx, settings, tenant, batch)
        ctx.console.print(
            f"  library, batch {batch}: {rate.per_second:,.0f} messages/s (floor {floor.per_second:,.0f}), "
            f"{rate.drains} drain tasks published"
        )
        found.append(
            Measurement(
                "ingest_library" if batch == max(BATCHES) else f"ingest_library_batch{batch}",
                rate.per_second,
                "messages/s",
                floor=floor.per_second,
                target=TARGET if batch == max(BATCHES) else None,
                params={
                    "batch": batch,
                    "messages": rate.messages,
                    "conversations": CONVERSATIONS,
                    "calls": len(rate.latencies),
                    "runs": repeats(rate.messages),
                    "drains": rate.drains,
                    "p50_ms": rate.ms(50),
                    "p99_ms": rate.ms(99),
                    "floor_p50_ms": floor.ms(50),
                },
            )
        )
    return found


def http_measurements(ctx: BenchContext, settings: Settings, key: str) -> list[Measurement]:
    with api_server(ctx, settings) as (url, process):
        levels = http_rates(ctx, url, key, process)
    top = max(levels)
    found = []
    for clients, (rate, floor) in levels.items():
        ctx.console.print(
            f"  HTTP, {clients} clients: {rate.per_second:,.0f} messages/s (floor {floor.per_second:,.0f}), "
            f"p50 {rate.ms(50)} ms, p99 {rate.ms(99)} ms, server CPU {rate.server_cpu} (floor {floor.server_cpu})"
        )
        found.append(
            Measurement(
                "ingest_http" if clients == top else f"ingest_http_c{clients}",
                rate.per_second,
                "messages/s",
                floor=floor.per_second,
                target=TARGET if clients == top else None,
                params={
                    "clients": clients,
                    "batch": HTTP_BATCH,
                    "messages": rate.messages,
                    "runs": repeats(rate.messages),
                    "p50_ms": rate.ms(50),
                    "p99_ms": rate.ms(99),
                    "floor_p50_ms": floor.ms(50),
                    "floor_p99_ms": floor.ms(99),
                    "server_cpu": rate.server_cpu,
                    "floor_server_cpu": floor.server_cpu,
                    "client_cpu": rate.client_cpu,
                },
            )
        )
    return found


def run(ctx: BenchContext) -> list[Measurement]:
    from memq.shared.connections import pg_owner_connect
    from memq.shared.db.api_keys import create_key

    settings = scratch_settings(ctx)
    tenant = ctx.tenant("ingest")
    key_id: str | None = None
    with pg_owner_connect(ctx.settings, autocommit=True) as conn:
        # PostgreSQL is not measured here, but a vacuum it runs takes the cores the clients
        # and Redis run on
        wait_quiet(conn, say=ctx.console.print)
    try:
        found = library_measurements(ctx, settings, tenant)
        with pg_owner_connect(ctx.settings, autocommit=True) as conn:
            new, _ = create_key(conn, tenant, name="memq bench ingest")
        key_id = new.id
        return found + http_measurements(ctx, settings, new.key)
    finally:
        cleanup(ctx, settings, tenant, key_id)
