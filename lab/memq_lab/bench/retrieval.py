"""Retrieval at scale: ``retrieve_memory`` p50 / p99 on bulk-loaded corpora of
``scale.corpus_sizes`` stored messages (``corpus.py``: many tenants, skewed; real text and
MiniLM vectors), against two floors measured in the same run on the same queries:

- the legs' SQL alone (``legs.run_legs`` without ``full``: ``legs_sql``, the four ranked
  legs with the same parameters, search options and transaction retrieval uses, and,
  tenant-wide, shared between two connections as retrieval shares them,
  ``MEMQ_RETRIEVAL_SPLIT_LEGS``, each vector leg at its own ``hnsw.ef_search``): the floor
  of the ``retrieval_*`` figures, target ratio <= 2;
- an exact scan: the two vector legs run by ``legs.run_legs`` on a connection with
  ``SET enable_indexscan = off`` (no HNSW; the scope is read through a bitmap or
  sequential scan and sorted by distance between the stored single-precision vectors,
  not the half-precision copies the index compares). Its top-k is the truth ``ann_recall`` is
  measured against: |ANN top-k ∩ exact top-k| / k per query and vector leg, k =
  ``MEMQ_RETRIEVAL_CANDIDATES``, the ANN top-k being what the legs returned as retrieval
  runs them (the planner may read a small scope exactly; then recall is 1 by
  construction, so the recall of the HNSW index forced on every scope, each leg at its
  own breadth, is given too).

Queries: ``scale.queries`` real questions (LoCoMo's and the demo's), asked once
conversation-scoped (conversations drawn with probability proportional to their size, so
large ones come up as often as they are asked about) and once tenant-wide (the largest
tenant), at a fixed ``now`` (``corpus.NOW``), with ``record=False``. The query's vector
is computed once and handed to ``retrieve_memory`` as ``embed`` (the model's own time,
``embed_p50_ms``, is given apart: it is the same at every size). After a warm-up pass,
passes over the queries until ``MIN_SAMPLES`` retrievals per scope, each retrieval timed
next to its legs' SQL, the two taking turns at going first (the second would find the
pages the first read already in the buffers). Retrieval's own log line is silenced while measuring. Retrieval
and its legs run as in production, on a connection under row-level security scoped to the
query's tenant (set before each query, outside the timings); the exact scan and the
forced-index run, which only give recall, on owner connections.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import psycopg

from memq_lab.bench import corpus
from memq_lab.bench.context import BenchContext
from memq_lab.bench.measurement import Measurement
from memq_lab.bench.sql import table_messages, wait_quiet
from memq_lab.bench.texts import questions, utterances

SEED = 7
MIN_SAMPLES = 100  # timed retrievals per scope and size
EXACT_QUERIES = 100  # queries per scope whose exact top-k is computed (an exact scan of 1M messages is slow)
TARGET_RATIO = 2.0
TARGET_RECALL = 0.95
TARGET_TENANT_1M_MS = 25.0
VECTOR_LEGS = ("episode_vector", "message_vector")
SCOPES = ("conversation", "tenant")


@dataclass(frozen=True)
class Query:
    text: str
    tenant: str
    conversation_id: str | None  # None: tenant-wide
    scope_messages: int


def pick_queries(plan: corpus.CorpusPlan, asked: tuple[str, ...], count: int, seed: int) -> dict[str, list[Query]]:
    """``count`` questions per scope: conversation-scoped (conversations drawn with
    probability proportional to their messages) and tenant-wide (the largest tenant)."""
    rng = np.random.default_rng([seed, plan.messages, 3])
    texts = [asked[i] for i in rng.choice(len(asked), size=count, replace=len(asked) < count)]
    sizes = np.array([c.messages for c in plan.conversations], dtype=np.float64)
    picked = rng.choice(len(plan.conversations), size=count, p=sizes / sizes.sum())
    conversations = [plan.conversations[i] for i in picked]
    return {
        "conversation": [
            Query(t, plan.tenant_id(c.tenant), c.conversation_id, c.messages) for t, c in zip(texts, conversations)
        ],
        "tenant": [Query(t, plan.tenant_id(0), None, plan.tenants[0]) for t in texts],
    }


def leg_items(found: Any, leg: str) -> set[Any]:
    """What a vector leg ranked: episode ids, or (episode id, seq) of messages."""
    if leg == "episode_vector":
        return set(found.episodes.get(leg, []))
    return {(eid, seq) for eid, seqs in found.messages.items() for seq, ranks in seqs.items() if "vector" in ranks}


def recall(found: set[Any], truth: set[Any]) -> float:
    return len(found & truth) / len(truth) if truth else 1.0


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else math.nan


@dataclass
class ScopeResult:
    scope: str
    queries: int
    retrieve_ms: list[float] = field(default_factory=list)
    legs_ms: list[float] = field(default_factory=list)
    exact_ms: list[float] = field(default_factory=list)
    recall: dict[str, list[float]] = field(default_factory=dict)  # leg -> per query, as retrieval runs
    forced_recall: dict[str, list[float]] = field(default_factory=dict)  # leg -> per query, HNSW forced
    hnsw_planned: dict[str, int] = field(default_factory=dict)  # leg -> queries planned on the HNSW index
    stages_ms: dict[str, list[float]] = field(default_factory=dict)  # retrieval's own timings: sql, select
    scope_messages: list[int] = field(default_factory=list)


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _connect(settings: Any, *settings_sql: str) -> psycopg.Connection:
    from memq.shared.connections import pg_owner_connect

    conn = pg_owner_connect(settings, autocommit=True)
    for sql in settings_sql:
        conn.execute(sql)
    return conn


def _use(conn: psycopg.Connection, settings: Any, tenant: str | None) -> psycopg.Connection:
    """The connection under row-level security, as retrieval's in production, scoped to
    ``tenant`` (None: no tenant yet); set before each query, outside the timings."""
    from memq.shared.db.tenant_scope import scope

    return scope(conn, settings.database_app_role, tenant)


def _use_both(conns: dict[str, psycopg.Connection], settings: Any, tenant: str) -> None:
    """Retrieval's connection and its spare (``legs.Spare``) scoped to ``tenant``."""
    _use(conns["main"], settings, tenant)
    _use(conns["spare"], settings, tenant)


def _hnsw_in_plan(conn: psycopg.Connection, request: Any, vector: np.ndarray, k: int, text: str) -> dict[str, bool]:
    from memq.memory.retrieval import legs

    row = conn.execute(
        "EXPLAIN (FORMAT JSON) " + legs.legs_sql(request, VECTOR_LEGS), legs.params(request, vector, k, text)
    ).fetchone()
    plan = json.dumps(row[0] if row else "")
    return {
        "episode_vector": "episodic_memory_embedding_hnsw" in plan,
        "message_vector": "episode_message_embedding_hnsw" in plan,
    }


def measure_scope(
    ctx: BenchContext,
    conns: dict[str, psycopg.Connection],
    scope: str,
    queries: list[Query],
    embed: Callable[[str], np.ndarray],
) -> ScopeResult:
    from memq.memory.retrieval import legs
    from memq.memory.retrieval.participants import query_terms
    from memq.memory.retrieval.request import build_request
    from memq.memory.retrieval.service import lexical_text, retrieve_memory

    settings = ctx.settings
    conn = conns["main"]

    def spare() -> contextlib.nullcontext[psycopg.Connection]:
        return contextlib.nullcontext(conns["spare"])

    k, ef, plan_mode = settings.retrieval_candidates, settings.hnsw_ef_search, settings.retrieval_plan_cache_mode
    prepared = []
    for q in queries:
        request = build_request(
            settings, tenant=q.tenant, query=q.text, conversation_id=q.conversation_id, now=corpus.NOW
        )
        _use_both(conns, settings, q.tenant)
        text = query_terms(q.text, legs.participants(conn, request)).search_text
        # the lexical legs search what retrieval's do (the query without its common words),
        # the vector legs the vector of the whole searched text, as retrieval embeds it
        prepared.append((q, request, lexical_text(conn, request, text, settings), embed(text)))

    def retrieve(q: Query) -> dict[str, float]:
        return retrieve_memory(
            q.text,
            tenant=q.tenant,
            conversation_id=q.conversation_id,
            now=corpus.NOW,
            settings=settings,
            conn=conn,
            embed=embed,
            record=False,
            spare=spare,
        ).timings_ms

    def run_legs(c: psycopg.Connection, request: Any, vector: np.ndarray, text: str, which: tuple[str, ...]) -> Any:
        return legs.run_legs(
            c,
            request,
            vector,
            which,
            k,
            ef,
            query_text=text,
            plan_cache_mode=plan_mode,
            pairs_enough=settings.lexical_pairs_enough,
            spare=spare if c is conn and settings.retrieval_split_legs else None,
            episode_ef_search=settings.hnsw_ef_search_episodes,
        )

    out = ScopeResult(scope, len(queries), scope_messages=[q.scope_messages for q in queries])
    for q, request, text, vector in prepared:  # warm-up: caches, plans, prepared statements
        _use_both(conns, settings, q.tenant)
        retrieve(q)
        run_legs(conn, request, vector, text, settings.legs)
    exact: list[dict[str, set[Any]]] = []
    for i, (q, request, text, vector) in enumerate(prepared[:EXACT_QUERIES]):
        _use_both(conns, settings, q.tenant)
        if i == 0:
            run_legs(conns["exact"], replace(request, half_dim=None), vector, text, VECTOR_LEGS)  # warm-up
        t = time.perf_counter()
        # the truth at the stored precision: what the half-precision index and its
        # comparisons lose is counted against it
        truth = run_legs(conns["exact"], replace(request, half_dim=None), vector, text, VECTOR_LEGS)
        out.exact_ms.append((time.perf_counter() - t) * 1000)
        exact.append({leg: leg_items(truth, leg) for leg in VECTOR_LEGS})
        for leg in VECTOR_LEGS:  # each alone, at its own breadth, as the legs run when shared
            forced = run_legs(conns["forced"], request, vector, text, (leg,))
            out.forced_recall.setdefault(leg, []).append(recall(leg_items(forced, leg), exact[-1][leg]))
        for leg, used in _hnsw_in_plan(conn, request, vector, k, text).items():
            out.hnsw_planned[leg] = out.hnsw_planned.get(leg, 0) + used
    passes = max(1, -(-MIN_SAMPLES // len(queries)))
    for p in range(passes):
        for i, (q, request, text, vector) in enumerate(prepared):
            _use_both(conns, settings, q.tenant)
            # whichever runs second finds the pages the first read in the buffers: the two
            # take turns at going first
            for what in ("retrieve", "legs") if (p + i) % 2 == 0 else ("legs", "retrieve"):
                t = time.perf_counter()
                if what == "legs":
                    found = run_legs(conn, request, vector, text, settings.legs)
                else:
                    stages = retrieve(q)
                (out.legs_ms if what == "legs" else out.retrieve_ms).append((time.perf_counter() - t) * 1000)
            for stage in ("sql", "select"):
                out.stages_ms.setdefault(stage, []).append(stages.get(stage, math.nan))
            if p == 0 and i < len(exact):
                for leg in VECTOR_LEGS:
                    out.recall.setdefault(leg, []).append(recall(leg_items(found, leg), exact[i][leg]))
    return out


def _embedder(ctx: BenchContext) -> tuple[Callable[[str], np.ndarray], list[float]]:
    """``embed`` for retrieval: each text embedded once, then remembered; and the
    model's own time per query (ms)."""
    seen: dict[str, np.ndarray] = {}
    times: list[float] = []

    def embed(text: str) -> np.ndarray:
        vector = seen.get(text)
        if vector is None:
            t = time.perf_counter()
            vector = np.asarray(ctx.embedder.embed([text])[0], dtype=np.float32)
            times.append((time.perf_counter() - t) * 1000)
            seen[text] = vector
        return vector

    return embed, times


def _pool(ctx: BenchContext) -> corpus.Pool:
    from memq_lab.evaluation.embedding_cache import cached_embeddings

    pool = utterances(ctx.data_dir)
    pool = pool[: ctx.scale.utterance_pool] if ctx.scale.utterance_pool else pool
    texts = [u.text for u in pool]
    t = time.monotonic()
    vectors = cached_embeddings(ctx.embedder, texts, ctx.out_dir / "embeddings")
    ctx.console.print(f"  utterance pool: {len(texts):,} real utterances embedded ({time.monotonic() - t:.0f} s)")
    return corpus.make_pool(texts, [u.role for u in pool], vectors, ctx.embedder.name)


def _buffers(conn: psycopg.Connection) -> dict[str, int]:
    """The server's ``shared_buffers`` and the message vector index's size, in MiB: a search
    whose graph does not fit copies its pages in from the OS cache (docs/operations.md)."""
    row = conn.execute(
        "SELECT pg_size_bytes(current_setting('shared_buffers')) / 1048576, "
        "pg_relation_size('episode_message_embedding_hnsw') / 1048576"
    ).fetchone()
    return {"shared_buffers_mb": int(row[0]), "message_hnsw_mb": int(row[1])} if row else {}


def run(ctx: BenchContext) -> list[Measurement]:
    settings = ctx.settings
    pool = _pool(ctx)
    asked = questions(ctx.data_dir)
    embed, embed_ms = _embedder(ctx)
    found: list[Measurement] = []
    conns = {
        "owner": _connect(settings),  # loads corpora, counts rows: across tenants
        "main": _use(_connect(settings), settings, None),  # measures, as production retrieves: under row-level security
        "spare": _use(_connect(settings), settings, None),  # the vector legs beside the lexical ones, as the API
        "exact": _connect(settings, "SET enable_indexscan = off", "SET enable_indexonlyscan = off"),
        # the HNSW index on every scope: no other way to read it sorted by distance
        "forced": _connect(
            settings, "SET enable_seqscan = off", "SET enable_bitmapscan = off", "SET enable_sort = off"
        ),
    }
    try:
        conn = conns["owner"]
        plans = {n: corpus.plan(n, SEED, len(pool), corpus.pool_digest(pool.texts)) for n in ctx.scale.corpus_sizes}
        # a corpus already loaded is measured first (loading another one removes it)
        complete = {n for n, p in plans.items() if corpus.held(conn, p) == (len(p.conversations), n)}
        for size in sorted(ctx.scale.corpus_sizes, key=lambda n: (n not in complete, n)):
            ctx.console.print(f"  corpus of {size:,} messages ...")
            loaded = corpus.load(
                conn,
                size,
                SEED,
                pool,
                boost=settings.surprise_stability_boost,
                retention=settings.desired_retention,
                progress=lambda line: ctx.console.print(f"    {line}"),
            )
            plan = loaded.corpus
            how = f"loaded in {loaded.seconds:.0f} s" if loaded.loaded else "already loaded"
            ctx.console.print(
                f"  {size:,} messages, {plan.episodes:,} episodes, {len(plan.conversations):,} conversations, "
                f"{len(plan.tenants)} tenants (largest {plan.tenants[0]:,} messages): {how}"
            )
            picked = pick_queries(plan, asked, ctx.scale.queries, SEED)
            wait_quiet(conn, say=ctx.console.print)
            results = {}
            with _quiet("memq.retrieval"):
                for scope in SCOPES:
                    results[scope] = r = measure_scope(ctx, conns, scope, picked[scope], embed)
                    ctx.console.print(
                        f"  {scope}: retrieve p50 {_pct(r.retrieve_ms, 50):.2f} ms "
                        f"(p99 {_pct(r.retrieve_ms, 99):.2f}), "
                        f"legs p50 {_pct(r.legs_ms, 50):.2f} ms, exact scan p50 {_pct(r.exact_ms, 50):.1f} ms, recall "
                        + ", ".join(f"{leg} {np.mean(v):.3f}" for leg, v in r.recall.items())
                    )
            common = {
                "corpus_messages": size,
                "episodes": plan.episodes,
                "tenants": len(plan.tenants),
                "conversations": len(plan.conversations),
                "largest_tenant_messages": plan.tenants[0],
                "table_messages": table_messages(conn),
                "ef_search": settings.hnsw_ef_search,
                "ef_search_episodes": settings.hnsw_ef_search_episodes,
                "split_legs": settings.retrieval_split_legs,
                "k": settings.retrieval_candidates,
                "load_s": round(loaded.seconds, 1) if loaded.loaded else 0.0,
                **_buffers(conn),
            }
            for scope, r in results.items():
                found.append(
                    Measurement(
                        f"retrieval_{scope}",
                        _pct(r.retrieve_ms, 50),
                        "ms",
                        floor=_pct(r.legs_ms, 50),
                        higher_is_better=False,
                        target=TARGET_RATIO,
                        params={
                            **common,
                            "queries": r.queries,
                            "samples": len(r.retrieve_ms),
                            "scope": scope,
                            "scope_messages_p50": int(np.median(r.scope_messages)),
                            "p99_ms": round(_pct(r.retrieve_ms, 99), 3),
                            "legs_p99_ms": round(_pct(r.legs_ms, 99), 3),
                            "exact_scan_p50_ms": round(_pct(r.exact_ms, 50), 3),
                            "exact_scan_p99_ms": round(_pct(r.exact_ms, 99), 3),
                            "embed_p50_ms": round(_pct(embed_ms, 50), 3),
                            **{f"retrieve_{st}_p50_ms": round(_pct(v, 50), 3) for st, v in r.stages_ms.items()},
                            **{f"hnsw_planned_{leg}": f"{n}/{len(r.exact_ms)}" for leg, n in r.hnsw_planned.items()},
                        },
                    )
                )
            recalls = {
                f"recall_{scope}_{leg.removesuffix('_vector')}": float(np.mean(v))
                for scope, r in results.items()
                for leg, v in r.recall.items()
            }
            forced = {
                f"hnsw_recall_{scope}_{leg.removesuffix('_vector')}": round(float(np.mean(v)), 4)
                for scope, r in results.items()
                for leg, v in r.forced_recall.items()
            }
            found.append(
                Measurement(
                    "ann_recall",
                    min(recalls.values()),
                    "recall",
                    target=TARGET_RECALL,
                    params={
                        **common,
                        "queries": ctx.scale.queries,
                        "exact_queries": min(ctx.scale.queries, EXACT_QUERIES),
                        **{name: round(v, 4) for name, v in recalls.items()},
                        **forced,
                    },
                )
            )
            if size >= 1_000_000:
                found.append(
                    Measurement(
                        "retrieval_tenant_1m_p50",
                        _pct(results["tenant"].retrieve_ms, 50),
                        "ms",
                        higher_is_better=False,
                        target=TARGET_TENANT_1M_MS,
                        params={"messages": size, "largest_tenant_messages": plan.tenants[0]},
                    )
                )
        kept = next((n for n, p in plans.items() if corpus.held(conn, p)[0]), None)
        if kept is not None:
            ctx.console.print(
                f"  the {kept:,}-message corpus stays loaded for the next run; "
                "python -m memq_lab.bench.corpus removes it"
            )
    finally:
        for c in conns.values():
            c.close()
    found.sort(key=lambda m: (m.params.get("corpus_messages", m.params.get("messages", 0)), m.name))
    return found
