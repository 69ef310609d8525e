"""One LoCoMo evaluation run: replay every conversation through the producer to real
workers, then ask every question of categories 1-4 through ``retrieve_memory`` and
through the baselines, at every budget, and measure what the returned text holds.

Retrieval uses the question's embedding computed once (the same vector for memq and the
baselines); latency is measured on a separate pass, next to the raw SQL of the legs run
alone on the same queries (the floor).

On the same replayed data, the field's session-level measures (``sessions.py``): memq's
ranked episodes (one call per question with a generous limit and no token cap, as
``memq eval-longmemeval`` ranks them) next to LongMemEval's four session baselines, whose
embeddings go through an ``EmbeddingStore`` cached on disk (``EvalConfig.cache_dir``).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memq.shared.settings import Settings
from memq_lab.evaluation.locomo import sessions as sessions_mod
from memq_lab.evaluation.locomo.data import CATEGORIES, LocomoConversation, Question, find_files, load_locomo
from memq_lab.evaluation.locomo.recall import Found, evidence_found, percentile, summarise
from memq_lab.evaluation.locomo.units import SEARCHES, UNIT_KINDS, UnitIndex, fill, make_units
from memq_lab.evaluation.longmemeval.baselines import BASELINES as SESSION_BASELINES
from memq_lab.evaluation.longmemeval.baselines import RANKERS, EmbeddingStore, Haystack
from memq_lab.evaluation.longmemeval.measures import QuestionResult as SessionResult
from memq_lab.evaluation.longmemeval.runner import MEMQ, RANK_TOKENS, cache_name

BUDGETS = (250, 500, 1000, 2000)


@dataclass(frozen=True)
class Method:
    name: str
    kind: str  # "memq" or a unit kind
    detail: str = "high"
    overrides: tuple[tuple[str, Any], ...] = ()  # settings changed for this method only (ablations)
    search: str = "plain"  # baselines: "plain" hybrid search, or "memq" (memq's message text and query handling)
    lexical: str = "ts_rank_cd"  # baselines: or "bm25" (memq_lab/evaluation/locomo/bm25.py)
    # memq on episodes cut by this detector profile instead of the configured one: the
    # conversations replayed once more, by workers running it, into a tenant of their own
    detector: str | None = None


MAIN = Method("memq", "memq", "high")
BASELINES = (
    Method("turn", "turn"),
    Method("turn · memq query", "turn", search="memq"),
    Method("window8", "window8"),
    Method("session", "session"),
)
ABLATIONS = (
    Method("memq auto", "memq", "auto"),
    Method("memq auto msg<=2", "memq", "auto", (("auto_detail_message_rank", 2),)),  # auto before 2026-11
    Method("memq no-FSRS", "memq", "high", (("retrievability_weight", 0.0),)),
    Method("memq FSRS x1", "memq", "high", (("retrievability_influence", 1.0),)),  # seed 001: rrf x retrievability
    # at the limit a caller naming none gets (10 episodes), where decay decides which are kept
    Method("memq limit 10", "memq", "high", (("retrieval_limit_max", 10),)),
    Method("memq no-FSRS limit 10", "memq", "high", (("retrieval_limit_max", 10), ("retrievability_weight", 0.0))),
    Method("memq FSRS x1 limit 10", "memq", "high", (("retrieval_limit_max", 10), ("retrievability_influence", 1.0))),
    Method("memq episode legs", "memq", "high", (("retrieval_legs", "episode_vector,episode_lexical"),)),
    Method("memq no-neighbour", "memq", "high", (("neighbour_bonus", 0.0),)),
    Method("memq no-density", "memq", "high", (("episode_density_weight", 0.0),)),
    Method("memq density per episode", "memq", "high", (("episode_density_scope", "episode"),)),  # before 2026-12-05
    Method("memq header per episode", "memq", "high", (("sitting_blocks", False),)),  # before 2026-12-05
    Method("memq no-speaker", "memq", "high", (("speaker_match_weight", 0.0),)),
    Method("memq no-time-boost", "memq", "high", (("time_boost", 1.0),)),
    # a message's relevance fused with the episodes' RRF constant (before 2026-12)
    Method("memq message k=60", "memq", "high", (("message_rrf_k", 60.0),)),
    # messages read for showing twice as deep in each message leg (the reach before it was measured)
    Method("memq reach x2", "memq", "high", (("message_reach_tokens", 20), ("message_reach_min", 40))),
    Method("turn · memq query · BM25", "turn", search="memq", lexical="bm25"),
    # the default detector before 2026-12-05 (fit on TIAGE chit-chat), next to the default
    Method("memq · learned episodes", "memq", "high", detector="learned"),
)


def tenant_of(config: EvalConfig, detector: str | None) -> str:
    """The tenant the episodes cut by ``detector`` are in: the run's for the configured
    detector (None), else a tenant of their own beside it."""
    return config.tenant if detector is None else f"{config.tenant}--{detector}"


@dataclass
class EvalConfig:
    data: Path
    tenant: str = "eval-locomo"
    budgets: tuple[int, ...] = BUDGETS
    categories: tuple[int, ...] = (1, 2, 3, 4)
    reuse: bool = False  # keep the episodes of an earlier replay when every turn is stored
    workers: int = 2
    ablations: bool = False
    limit: int | None = None  # episodes per retrieval (default MEMQ_RETRIEVAL_LIMIT_MAX: the budget decides)
    files: tuple[str, ...] = ()
    rank_limit: int = 50  # episodes in memq's rank call for the session measures
    # the session baselines' embeddings across runs (default <MEMQ_DATA_DIR>/eval/locomo-embeddings)
    cache_dir: Path | None = None


@dataclass
class QuestionResult:
    question: Question
    conversation: str
    method: str
    budget: int
    found: Found
    tokens: int


@dataclass
class EvalRun:
    config: EvalConfig
    conversations: list[LocomoConversation]
    results: list[QuestionResult] = field(default_factory=list)
    stages_s: dict[str, float] = field(default_factory=dict)
    episodes: dict[str, Any] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    other_episodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # detector -> ``episodes`` of its tenant
    named_times: int = 0
    llm: str = "none"
    sessions: dict[str, list[SessionResult]] = field(default_factory=dict)  # system -> per question
    sessions_embedded: int = 0  # texts the session baselines' store had the model embed this run

    def methods(self) -> list[str]:
        return list(dict.fromkeys(r.method for r in self.results))

    def table(self, category: int | None = None) -> dict[str, dict[int, Any]]:
        grouped: dict[tuple[str, int], list[tuple[Found, int]]] = defaultdict(list)
        for r in self.results:
            if category is None or r.question.category == category:
                grouped[(r.method, r.budget)].append((r.found, r.tokens))
        return {m: {b: summarise(grouped[(m, b)]) for b in self.config.budgets} for m in self.methods()}


def _analyze(settings: Settings) -> None:
    """Fresh planner statistics for what was just stored, as the baselines' table gets
    (``UnitIndex.add``): a replay into a new database is over before autovacuum first
    looks (its threshold is 50 rows changed, its nap a minute), and a table with no
    statistics, such as 42 episodes, is planned as if it held one row (the episode rows'
    lookup then walked the tenant's index instead of the primary key: ~0.2 ms a retrieval).
    A maintenance statement: the schema's owner runs it."""
    from memq.shared.connections import pg_owner_connect

    with pg_owner_connect(settings, autocommit=True) as owner:
        owner.execute("ANALYZE episodic_memory, episode_message, conversation_participant")


def _episode_stats(conn, tenant: str, conversations: list[str]) -> dict[str, Any]:
    rows = conn.execute(
        "SELECT conversation_id, message_count, token_count, boundary_reason, boundary_source, summary_source "
        "FROM episodic_memory WHERE tenant_id = %s AND conversation_id = ANY(%s)",
        (tenant, conversations),
    ).fetchall()
    per_conv = Counter(r[0] for r in rows)
    return {
        "episodes": len(rows),
        "per_conversation": dict(sorted(per_conv.items())),
        "mean_messages": round(sum(r[1] for r in rows) / len(rows), 2) if rows else 0,
        "mean_tokens": round(sum(r[2] for r in rows) / len(rows), 1) if rows else 0,
        "boundary_reasons": dict(Counter(f"{r[3]} ({r[4]})" for r in rows).most_common()),
        "summaries": dict(Counter(r[5] for r in rows)),
    }


def _stored_turns(conn, tenant: str, conversation: str) -> int:
    return conn.execute(
        "SELECT count(*) FROM episode_message WHERE tenant_id = %s AND conversation_id = %s", (tenant, conversation)
    ).fetchone()[0]


def run(
    settings: Settings, config: EvalConfig, progress: Callable[[str, int, int], None], note: Callable[[str], None]
) -> EvalRun:
    from memq.producer.client import Producer
    from memq.shared.connections import pg_connect
    from memq.shared.db.migrate import upgrade
    from memq.shared.embedded import services
    from memq.shared.embeddings import get_embedder

    files = [p for p in find_files(config.data) if not config.files or p.name in config.files]
    if not files:
        raise FileNotFoundError(f"no LoCoMo-format JSON file in {config.data}/locomo or {config.data}")
    conversations = [c for p in files for c in load_locomo(p)]
    run_ = EvalRun(config, conversations, llm=settings.llm_model or "none")
    services.up(settings)
    upgrade(settings)
    producer = Producer(settings)
    embedder = get_embedder(settings)

    methods = [MAIN, *BASELINES, *(ABLATIONS if config.ablations else ())]
    for detector in dict.fromkeys(m.detector for m in methods if m.detector is not None):
        tenant = tenant_of(config, detector)
        run_.stages_s.update(_replay(settings, config, producer, conversations, tenant, detector, progress, note))
        with pg_connect(settings, tenant=tenant) as conn:
            run_.other_episodes[detector] = _episode_stats(conn, tenant, [c.sample_id for c in conversations])
    run_.stages_s.update(_replay(settings, config, producer, conversations, config.tenant, None, progress, note))
    # one tenant's work: under row-level security like any tenant's (its temporary table too)
    with pg_connect(settings, tenant=config.tenant) as conn:
        conn.autocommit = True
        conn.execute("DELETE FROM pending_review WHERE tenant_id = %s", (config.tenant,))
        run_.episodes = _episode_stats(conn, config.tenant, [c.sample_id for c in conversations])
        _analyze(settings)

        t = time.monotonic()
        index = UnitIndex(conn, settings.embedding_dim)
        turn_texts: list[str] = []  # each turn as memq embeds it, and its vector: the session baselines' too
        turn_vectors: list[np.ndarray] = []
        for c in conversations:
            for kind in UNIT_KINDS:
                units = make_units(c, kind)
                vectors = {s: embedder.embed([u.embedded(s) for u in units]) for s in SEARCHES}
                index.add(units, vectors)
                if kind == "turn":
                    turn_texts.extend(u.embedded("memq") for u in units)
                    turn_vectors.extend(vectors["memq"])
        run_.stages_s["baseline units indexed"] = time.monotonic() - t

        asked = [(c, q) for c in conversations for q in c.questions if q.category in config.categories and q.evidence]
        t = time.monotonic()
        queries = Queries.embed(conn, settings, config.tenant, asked, embedder)
        run_.stages_s["questions embedded"] = time.monotonic() - t
        run_.latency_ms["embed_per_question"] = run_.stages_s["questions embedded"] * 1000 / max(1, 2 * len(asked))
        for method in methods:
            t = time.monotonic()
            if method.detector is None:
                _ask(run_, settings, conn, index, method, asked, queries, progress, config.tenant)
            else:  # row-level security: another tenant's episodes on a connection of its own
                tenant = tenant_of(config, method.detector)
                with pg_connect(settings, tenant=tenant) as own:
                    own.autocommit = True
                    _ask(run_, settings, own, index, method, asked, queries, progress, tenant)
            run_.stages_s[f"questions: {method.name}"] = time.monotonic() - t
        known = [q.question for _, q in asked] + turn_texts  # embedded already: the questions and the turns
        store = _session_store(settings, config, embedder, known, np.vstack([queries.raw, *turn_vectors]))
        _ask_sessions(run_, settings, conn, asked, queries, store, progress)
        _latency(run_, settings, conn, asked, queries)
    return run_


def _replay(
    settings: Settings,
    config: EvalConfig,
    producer,
    conversations: list[LocomoConversation],
    tenant: str,
    detector: str | None,
    progress: Callable[[str, int, int], None],
    note: Callable[[str], None],
) -> dict[str, float]:
    """Replay the conversations into ``tenant`` through real workers (running ``detector``,
    default the configured one), unless ``config.reuse`` and every turn is stored there;
    the seconds it took, by stage."""
    from memq.shared.connections import pg_connect
    from memq.shared.forget import forget_conversation
    from memq.worker_process import start_worker, stop_worker, wait_for_worker
    from memq_lab.evaluation.locomo import replay as replay_mod

    stages: dict[str, float] = {}
    named = f" ({detector} episodes, tenant {tenant})" if detector else ""
    suffix = f" ({detector})" if detector else ""
    with pg_connect(settings, tenant=tenant) as conn:
        conn.autocommit = True
        todo = conversations
        if config.reuse:
            todo = [c for c in conversations if _stored_turns(conn, tenant, c.sample_id) != len(c.turns)]
            if len(todo) < len(conversations):
                note(f"reusing the stored episodes of {len(conversations) - len(todo)} conversation(s){named}")
        for c in todo:
            forget_conversation(producer.redis, conn, producer.keys(c.sample_id, tenant))
        if todo:
            log_path = settings.data_path / "eval-worker.log"
            note(f"starting {config.workers} worker process(es){named} (log {log_path}) ...")
            environment = {"MEMQ_DETECTOR": detector} if detector else None
            worker = start_worker(config.workers, "eval@%h", log_path, environment)
            try:
                wait_for_worker(producer, worker, timeout=180.0, log_hint=f"see {log_path}")
                times = replay_mod.replay(producer, tenant, todo, progress)
            finally:
                stop_worker(worker, timeout=60.0)
            stages["enqueue"] = times.enqueue_s
            stages["segmentation + episodes"] = times.process_s
        for c in conversations:
            stored = _stored_turns(conn, tenant, c.sample_id)
            if stored != len(c.turns):
                raise RuntimeError(f"{c.sample_id}: {stored} of {len(c.turns)} turns are in episodes{named}")
    return {f"{k}{suffix}": v for k, v in stages.items()}


def _now(conv: LocomoConversation):
    return conv.ends_at + timedelta(days=1)


@dataclass
class Queries:
    """Every question embedded once, as asked (the plain baselines) and as memq searches
    it (without the participants it names), with the names; ``embed`` hands memq the
    vector of the text it asks for."""

    raw: np.ndarray
    searched: np.ndarray
    terms: list[Any]
    cache: dict[str, np.ndarray]

    @classmethod
    def embed(cls, conn, settings: Settings, tenant: str, asked, embedder) -> Queries:
        from memq.memory.retrieval import legs
        from memq.memory.retrieval.participants import query_terms
        from memq.memory.retrieval.request import build_request

        names: dict[str, list[str]] = {}
        for c, _ in asked:
            if c.sample_id not in names:
                request = build_request(settings, tenant=tenant, query="participants", conversation_id=c.sample_id)
                names[c.sample_id] = legs.participants(conn, request)
        terms = [query_terms(q.question, names[c.sample_id]) for c, q in asked]
        raw = embedder.embed([q.question for _, q in asked])
        searched = embedder.embed([t.search_text for t in terms])
        cache = {t.search_text: v for t, v in zip(terms, searched)}
        return cls(raw, searched, terms, cache)

    def embed_fn(self, embedder_fallback: Callable[[str], np.ndarray] | None = None) -> Callable[[str], np.ndarray]:
        def embed(text: str) -> np.ndarray:
            if text not in self.cache:
                if embedder_fallback is None:
                    raise KeyError(f"query text not embedded in advance: {text[:60]!r}")
                self.cache[text] = embedder_fallback(text)
            return self.cache[text]

        return embed


def _ask(
    run_: EvalRun,
    settings: Settings,
    conn,
    index: UnitIndex,
    method: Method,
    asked,
    queries: Queries,
    progress,
    tenant: str,
) -> None:
    """Ask every question of ``asked`` by ``method`` at every budget; memq retrieves from
    ``tenant`` on ``conn`` (a connection of that tenant)."""
    from memq.memory.retrieval.service import retrieve_memory
    from memq.memory.retrieval.time_expressions import find_time
    from memq.shared.tokens import count_tokens

    local = settings.model_copy(update=dict(method.overrides)) if method.overrides else settings
    limit = run_.config.limit or local.retrieval_limit_max
    embed = queries.embed_fn()
    for i, (conv, q) in enumerate(asked):
        evidence = [conv.turn(e).text for e in q.evidence]
        if method is MAIN and find_time(q.question, _now(conv)) is not None:
            run_.named_times += 1
        ranked = None
        for budget in run_.config.budgets:
            if method.kind == "memq":
                result = retrieve_memory(
                    q.question,
                    tenant=tenant,
                    conversation_id=conv.sample_id,
                    limit=limit,
                    detail=method.detail,
                    max_tokens=budget,
                    now=_now(conv),
                    settings=local,
                    conn=conn,
                    embed=embed,
                    record=False,
                )
                text, tokens = result.text, result.tokens
            else:
                if ranked is None:
                    if method.search == "memq":
                        terms = queries.terms[i]
                        ranked = index.search(
                            method.kind,
                            conv.sample_id,
                            terms.search_text,
                            queries.searched[i],
                            settings.retrieval_candidates,
                            settings.message_rrf_k,  # memq fuses a message's ranks with its own constant
                            search="memq",
                            named=terms.named,
                            speaker_weight=settings.speaker_match_weight,
                            lexical=method.lexical,
                        )
                    else:
                        ranked = index.search(
                            method.kind,
                            conv.sample_id,
                            q.question,
                            queries.raw[i],
                            settings.retrieval_candidates,
                            settings.rrf_k,
                        )
                text = fill(ranked, budget, count_tokens)
                tokens = count_tokens(text)
            run_.results.append(
                QuestionResult(q, conv.sample_id, method.name, budget, evidence_found(text, evidence), tokens)
            )
        progress(f"questions: {method.name}", i + 1, len(asked))


def _dia_by_seq(conn, tenant: str, conversation: str) -> dict[int, str]:
    """Each stored message's dia id by its ``seq`` in the conversation (``metadata.dia_id``,
    else the message id ``<sample>-<dia id>`` without its sample)."""
    rows = conn.execute(
        "SELECT seq, metadata->>'dia_id', message_id FROM episode_message "
        "WHERE tenant_id = %s AND conversation_id = %s",
        (tenant, conversation),
    ).fetchall()
    return {int(seq): dia or message_id.removeprefix(f"{conversation}-") for seq, dia, message_id in rows}


def _session_store(
    settings: Settings, config: EvalConfig, embedder, known: list[str], vectors: np.ndarray
) -> EmbeddingStore:
    """The session baselines' embeddings, cached on disk (``config.cache_dir``, by default
    ``<MEMQ_DATA_DIR>/eval/locomo-embeddings``), seeded with the vectors the run computed
    already for the same texts with the same model (``known``: the questions as asked and
    the turns, a turn being embedded by its text as memq embeds a message and as the
    single-turn units' ``memq`` vectors are): only whole sessions are left to embed, once."""
    store = EmbeddingStore(
        lambda texts: embedder.embed(list(texts)),
        config.cache_dir or settings.data_path / "eval" / "locomo-embeddings",
        cache_name(embedder),
    )
    store.seed(known, vectors)
    return store


def _ask_sessions(
    run_: EvalRun,
    settings: Settings,
    conn,
    asked,
    queries: Queries,
    store: EmbeddingStore,
    progress: Callable[[str, int, int], None],
) -> None:
    """The session-level figures (``sessions.py``) of memq and of LongMemEval's four session
    baselines, every question of ``asked``. memq: one ``retrieve_memory`` call per question
    in the conversation's scope, ``config.rank_limit`` episodes and no token cap, its
    returned episodes the ranked items. The baselines: ``RANKERS`` on the question's
    haystack (its conversation's sessions), embeddings through ``store``."""
    from memq.memory.retrieval.service import retrieve_memory

    config = run_.config
    wide = settings.model_copy(
        update={
            "retrieval_max_tokens_max": RANK_TOKENS,
            "retrieval_limit_max": max(settings.retrieval_limit_max, config.rank_limit),
        }
    )
    adapted = {c.sample_id: sessions_mod.ConversationSessions.of(c) for c in run_.conversations}
    dias = {c.sample_id: _dia_by_seq(conn, config.tenant, c.sample_id) for c in run_.conversations}
    questions = [adapted[c.sample_id].question(q, _now(c)) for c, q in asked]
    run_.sessions = {name: [] for name in sessions_mod.SYSTEMS}
    embed = queries.embed_fn()
    t = time.monotonic()
    for i, ((conv, q), question) in enumerate(zip(asked, questions)):
        result = retrieve_memory(
            q.question,
            tenant=config.tenant,
            conversation_id=conv.sample_id,
            limit=config.rank_limit,
            detail=MAIN.detail,
            max_tokens=RANK_TOKENS,
            now=_now(conv),
            settings=wide,
            conn=conn,
            embed=embed,
            record=False,
        )
        items = sessions_mod.episode_items(result.records, adapted[conv.sample_id], dias[conv.sample_id])
        run_.sessions[MEMQ].append(
            SessionResult(question.id, question.type, sessions_mod.question_measures(items, question))
        )
        progress("sessions: memq", i + 1, len(asked))
    run_.stages_s["sessions: memq"] = time.monotonic() - t
    t = time.monotonic()
    for i, question in enumerate(questions):
        haystack = Haystack(question)
        for name in SESSION_BASELINES:
            ranked = RANKERS[name](haystack, store.embed)
            run_.sessions[name].append(
                SessionResult(question.id, question.type, sessions_mod.question_measures(ranked, question))
            )
        progress("sessions: baselines", i + 1, len(questions))
    run_.sessions_embedded = store.embedded
    run_.stages_s["sessions: baselines (embedding included)"] = time.monotonic() - t


def _latency(
    run_: EvalRun, settings: Settings, conn, asked, queries: Queries, budget: int = 1000, passes: int = 3
) -> None:
    """retrieve_memory end to end (query embedding excluded: it is given; pending reviews
    recorded as in production) next to the legs' SQL alone, same queries, interleaved (the
    two taking turns at going first: the second finds the first's pages in the buffers), at
    the evaluation's limit and (``*_default_limit``) at the limit a caller who names none
    gets (``MEMQ_RETRIEVAL_LIMIT``), when that is another."""
    limit = run_.config.limit or settings.retrieval_limit_max
    run_.latency_ms.update(_latency_at(run_, settings, conn, asked, queries, limit, budget, passes))
    if settings.retrieval_limit != limit:
        at_default = _latency_at(run_, settings, conn, asked, queries, settings.retrieval_limit, budget, passes)
        run_.latency_ms.update({f"{k}_default_limit": v for k, v in at_default.items()})
    run_.latency_ms.update({"queries": len(asked), "passes": passes, "budget": budget})


def _latency_at(
    run_: EvalRun, settings: Settings, conn, asked, queries: Queries, limit: int, budget: int, passes: int
) -> dict[str, float]:
    """One measurement of ``_latency``: a first pass warms caches and is not counted;
    percentiles over ``passes`` more (a single pass of a few hundred queries moves by a
    few percent run to run)."""
    from memq.memory.retrieval import legs
    from memq.memory.retrieval.request import build_request
    from memq.memory.retrieval.service import retrieve
    from memq.shared.review_notes import flush_review_notes

    totals: list[float] = []
    floors: list[float] = []
    embed = queries.embed_fn()
    for repeat in range(1 + passes):
        for i, (conv, q) in enumerate(asked):
            request = build_request(
                settings,
                tenant=run_.config.tenant,
                query=q.question,
                conversation_id=conv.sample_id,
                limit=limit,
                detail=MAIN.detail,
                max_tokens=budget,
                now=_now(conv),
            )
            # whichever runs second finds the pages the first read in the buffers: the two
            # take turns at going first
            order = ("legs", "retrieve") if (repeat + i) % 2 else ("retrieve", "legs")
            took: dict[str, float] = {}
            for what in order:
                t = time.perf_counter()
                if what == "legs":
                    legs.run_legs(
                        conn,
                        request,
                        queries.searched[i],
                        settings.legs,
                        settings.retrieval_candidates,
                        settings.hnsw_ef_search,
                        query_text=queries.terms[i].search_text,
                        plan_cache_mode=settings.retrieval_plan_cache_mode,
                        pairs_enough=settings.lexical_pairs_enough,
                        episode_ef_search=settings.hnsw_ef_search_episodes,
                    )
                else:
                    retrieve(request, settings=settings, embed=embed, conn=conn, record=True)
                took[what] = time.perf_counter() - t
            floor, total = took["legs"], took["retrieve"]
            if repeat:
                floors.append(floor * 1000)
                totals.append(total * 1000)
    flush_review_notes()
    conn.execute("DELETE FROM pending_review WHERE tenant_id = %s", (run_.config.tenant,))
    out = {
        "limit": limit,
        "retrieve_p50": percentile(totals, 50),
        "retrieve_p99": percentile(totals, 99),
        "legs_sql_p50": percentile(floors, 50),
        "legs_sql_p99": percentile(floors, 99),
    }
    out["ratio_p50"] = out["retrieve_p50"] / max(1e-9, out["legs_sql_p50"])
    out["ratio_p99"] = out["retrieve_p99"] / max(1e-9, out["legs_sql_p99"])
    return out


def categories_present(run_: EvalRun) -> list[int]:
    return sorted({r.question.category for r in run_.results})


def category_name(c: int) -> str:
    return CATEGORIES.get(c, str(c))
