"""The read path end to end: what an agent waits for when it asks memq, next to what the
query's embedding alone costs, on the same query strings in the same run.

Corpus: the first 400 turns of LoCoMo's conv-26 (100 with ``--quick``), replayed once
through the real producer and workers into a tenant of its own (kept between runs: the next
run measures at once); its first 100 questions (20), asked in that conversation. Without the
LoCoMo data (``--data`` / ``MEMQ_EVAL_DATA``), the shipped sample and the demo's questions. Two paths, each against the
embedding alone (the bound model's ``embed`` of the same string, in this process):

- ``read_path_library``: ``Memory.retrieve`` bound once (what ``memq retrieve``, the MCP
  tools and the API call), markdown at the default budget, recorded for review as in use;
- ``read_path_http``: ``POST /v1/memory/retrieve`` of the API in a subprocess, from one
  keep-alive client (httpx), with a bearer key.

Each question is asked in three passes after a warm-up, the embedding and the read taking
turns at going first; the figure is the p50 (p95 in the parameters).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memq_lab.bench.context import BenchContext
from memq_lab.bench.measurement import Measurement

TURNS = 400
QUESTIONS = 100
QUICK = (100, 20)  # turns, questions of ``--quick``
PASSES = 3
WARM_UP = 10
TARGET = 1.5  # end to end at most this many times the embedding alone


@dataclass(frozen=True)
class Corpus:
    name: str
    tenant: str  # kept between runs: a tenant holding every message is measured at once
    conversation_id: str
    messages: list[dict[str, Any]]  # as the producer takes them, each with its message id
    questions: list[str]


def corpus(ctx: BenchContext) -> Corpus:
    """LoCoMo's conv-26 cut to its first turns with its first questions; without the data,
    the shipped sample's first conversation and the demo's questions."""
    turns, asked = QUICK if ctx.scale.name == "quick" else (TURNS, QUESTIONS)
    if ctx.data_dir is not None:
        from memq_lab.evaluation.locomo.data import find_files, load_locomo
        from memq_lab.evaluation.locomo.replay import messages_of

        for path in find_files(ctx.data_dir):
            for conv in load_locomo(path):
                if conv.sample_id == "conv-26":
                    cut = replace(conv, turns=conv.turns[:turns], questions=[])
                    questions = [q.question for q in conv.questions if q.question][:asked]
                    name = f"LoCoMo conv-26, first {len(cut.turns)} turns"
                    return Corpus(name, f"bench-read-conv26-{turns}", "conv-26", messages_of(cut), questions)
    from memq.cli.demo import QUESTIONS as DEMO_QUESTIONS
    from memq.cli.demo import SAMPLE
    from memq.producer.replay import read_jsonl

    rows = [item for _, item in read_jsonl(SAMPLE)]
    first = rows[0]["conversation_id"]
    messages = [r for r in rows if r["conversation_id"] == first][:turns]
    name = f"the shipped sample ({first}, {len(messages)} messages; LoCoMo not given)"
    return Corpus(name, f"bench-read-sample-{turns}", first, messages, list(DEMO_QUESTIONS))


def _stored(ctx: BenchContext, c: Corpus) -> int:
    from memq.shared.connections import pg_owner_connect

    with pg_owner_connect(ctx.settings, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM episode_message WHERE tenant_id = %s AND conversation_id = %s",
            (c.tenant, c.conversation_id),
        ).fetchone()
    return int(row[0]) if row else 0


def _replay(ctx: BenchContext, c: Corpus) -> None:
    """The messages through the real producer and a worker, once: a tenant holding them all is kept."""
    from memq.producer.client import Producer
    from memq.shared.connections import pg_connect
    from memq.shared.forget import forget_conversation
    from memq.worker_process import start_worker, stop_worker, wait_for_worker

    if _stored(ctx, c) == len(c.messages):
        ctx.console.print(f"  {c.name}: already stored (tenant {c.tenant})")
        return
    producer = Producer(ctx.settings)
    with pg_connect(ctx.settings, tenant=c.tenant, autocommit=True) as conn:
        forget_conversation(producer.redis, conn, producer.keys(c.conversation_id, c.tenant))
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    log_path = ctx.out_dir / "bench-read-worker.log"
    worker = start_worker(2, "bench-read@%h", log_path)
    try:
        wait_for_worker(producer, worker, timeout=180.0, log_hint=f"see {log_path}")
        started = time.monotonic()
        for i in range(0, len(c.messages), 100):
            producer.add_messages(c.messages[i : i + 100], conversation_id=c.conversation_id, tenant=c.tenant)
        producer.flush(c.conversation_id, tenant=c.tenant)
        producer.wait_idle(c.conversation_id, tenant=c.tenant, timeout=900)
        ctx.console.print(f"  {c.name}: replayed in {time.monotonic() - started:.0f} s")
    finally:
        stop_worker(worker, timeout=60.0)
    if (stored := _stored(ctx, c)) != len(c.messages):
        raise RuntimeError(f"{c.name}: {stored} of {len(c.messages)} messages are in episodes (see {log_path})")


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def side_by_side(
    questions: Sequence[str], embed: Callable[[str], object], read: Callable[[str], object]
) -> tuple[list[float], list[float]]:
    """(embedding ms, read ms) of every question in every pass after a warm-up; the two take
    turns at going first, so neither always runs on a cache the other warmed."""
    for q in questions[:WARM_UP]:
        embed(q)
        read(q)
    alone: list[float] = []
    whole: list[float] = []
    for n in range(PASSES):
        for i, q in enumerate(questions):
            order = [(embed, alone), (read, whole)]
            for call, into in order if (n + i) % 2 == 0 else reversed(order):
                t = time.perf_counter()
                call(q)
                into.append((time.perf_counter() - t) * 1000)
    return alone, whole


def _measurement(name: str, alone: list[float], whole: list[float], path: str, c: Corpus) -> Measurement:
    return Measurement(
        name,
        statistics.median(whole),
        "ms",
        floor=statistics.median(alone),
        higher_is_better=False,
        target=TARGET,
        params={
            "path": path,
            "corpus": c.name,
            "questions": len(alone) // PASSES,
            "passes": PASSES,
            "p95_ms": round(_pct(whole, 95), 2),
            "embedding_p95_ms": round(_pct(alone, 95), 2),
        },
    )


def _library(ctx: BenchContext, c: Corpus) -> Measurement:
    from memq.memory import Memory

    with Memory.open(ctx.settings, c.tenant) as memory:
        alone, whole = side_by_side(
            c.questions, memory.embed, lambda q: memory.retrieve(q, conversation_id=c.conversation_id)
        )
    return _measurement("read_path_library", alone, whole, "Memory.retrieve, bound once", c)


def _http(ctx: BenchContext, c: Corpus) -> Measurement:
    import httpx

    from memq.memory import Memory
    from memq.shared.connections import pg_owner_connect, redis_url
    from memq.shared.db.api_keys import create_key
    from memq_lab.bench.ingest import api_server

    served = ctx.settings.model_copy(update={"redis_url": redis_url(ctx.settings)})  # the URL the server is given

    with pg_owner_connect(ctx.settings, autocommit=True) as conn:
        key, _ = create_key(conn, c.tenant, name="memq bench read path")
    try:
        with (
            api_server(ctx, served) as (url, _),
            httpx.Client(base_url=url, headers={"authorization": f"Bearer {key.key}"}, timeout=30) as client,
            Memory.open(ctx.settings, c.tenant, pool_size=1) as memory,  # the embedding alone, in this process
        ):

            def read(q: str) -> None:
                answer = client.post("/v1/memory/retrieve", json={"query": q, "conversation_id": c.conversation_id})
                answer.raise_for_status()

            alone, whole = side_by_side(c.questions, memory.embed, read)
    finally:
        with pg_owner_connect(ctx.settings, autocommit=True) as conn:
            conn.execute("DELETE FROM api_key WHERE id = %s", (key.id,))
    return _measurement("read_path_http", alone, whole, "POST /v1/memory/retrieve, one keep-alive client", c)


def run(ctx: BenchContext) -> list[Measurement]:
    c = corpus(ctx)
    _replay(ctx, c)
    measured = [_library(ctx, c), _http(ctx, c)]
    for m in measured:
        ctx.console.print(
            f"  {m.name}: p50 {m.value:.1f} ms (p95 {m.params['p95_ms']:.1f}) against the embedding alone "
            f"{m.floor:.1f} ms: {m.ratio:.2f}x (target <= {TARGET}x)"
        )
    return measured
