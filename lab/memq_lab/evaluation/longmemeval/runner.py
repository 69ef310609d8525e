"""One LongMemEval run: replay every question's haystack through the producer to real
workers (one tenant per question, ``replay.py``), then ask each question user-wide, with
"now" its ``question_date``, through ``retrieve_memory``, the same call the API serves,
and through the four baselines (``baselines.py``), and score them all by the same
measures (``measures.py``).

memq's rank measures come from one call with a generous limit (``rank_limit`` episodes)
and no token cap: sessions in the order of the episodes, turns in the order of the
priority its messages compete for a budget with; its evidence recall at each budget from one call per budget with the
same query text (an evidence turn counts as found when the returned text holds it,
whitespace folded: ``locomo.recall.evidence_found``, the rule the baselines' filled text
is held to as well). Latency is the wall time of the 1,000-token call, its query
embedding included; the baselines' is their query embedding plus their ranking.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memq.shared.settings import Settings
from memq_lab.evaluation.locomo.recall import evidence_found
from memq_lab.evaluation.longmemeval import replay as replay_mod
from memq_lab.evaluation.longmemeval.baselines import BASELINES, RANKERS, EmbeddingStore, Haystack, Item, text_key
from memq_lab.evaluation.longmemeval.data import Question, load
from memq_lab.evaluation.longmemeval.measures import (
    QuestionResult,
    ReturnedItem,
    budget_fill,
    budget_measure,
    ranking_measures,
    session_ranking,
    turn_ranking,
)

BUDGETS = (250, 500, 1000, 2000)
MEMQ = "memq"
RANK_TOKENS = 1_000_000  # "no token cap" for the rank call
LATENCY_BUDGET = 1000


@dataclass
class LmeConfig:
    data: Path
    limit: int | None = None  # the first N questions (after ``types``)
    types: tuple[str, ...] | None = None
    reuse: bool = False  # ask again without replaying the haystacks already stored
    workers: int = 2
    budgets: tuple[int, ...] = BUDGETS
    rank_limit: int = 50  # episodes in the rank call
    detail: str = "high"  # the detail of memq's calls (LoCoMo's main method's)
    prefix: str = replay_mod.TENANT_PREFIX
    cache_dir: Path | None = None  # the baselines' embeddings across runs
    # replay with a scripted LLM (``llm_cost.py``) and an agent's retrieval at the start of
    # each session (so the review stage runs), to count what the LLM path costs; no questions
    scripted_llm: bool = False


@dataclass
class LmeRun:
    config: LmeConfig
    questions: list[Question]
    results: dict[str, list[QuestionResult]] = field(default_factory=dict)  # system -> per question
    latency_ms: dict[str, list[float]] = field(default_factory=dict)  # system -> per question
    stages_s: dict[str, float] = field(default_factory=dict)
    replay: replay_mod.ReplayTimes | None = None
    episodes: dict[str, Any] = field(default_factory=dict)
    seeded_vectors: int = 0  # baseline turn vectors taken from memq's stored message vectors
    llm: str = "none"
    llm_cost: dict[str, dict[str, float]] = field(default_factory=dict)  # stage -> per 1,000 messages

    @property
    def systems(self) -> list[str]:
        return list(self.results)


def cache_name(embedder: Any) -> str:
    """What cached baseline vectors are filed under: the model and its arithmetic (float32
    and bfloat16 vectors differ a little; a cache must not mix them)."""
    precision = getattr(embedder, "precision", None)
    return f"{embedder.name}-{precision}" if precision else str(embedder.name)


def evidence_texts(question: Question) -> list[str]:
    return [t.content for t in question.turns if t.has_answer]


def stored_turns(conn: Any, tenant: str) -> int:
    row = conn.execute("SELECT count(*) FROM episode_message WHERE tenant_id = %s", (tenant,)).fetchone()
    return int(row[0])


def expected_turns(question: Question) -> int:
    """Distinct messages the replay stores (a session listed twice is one conversation)."""
    return len({(m["conversation_id"], m["message_id"]) for s in question.sessions for m in replay_mod.messages_of(s)})


def run(
    settings: Settings, config: LmeConfig, progress: Callable[[str, int, int], None], note: Callable[[str], None]
) -> LmeRun:
    from memq.producer.client import Producer
    from memq.shared.db.migrate import upgrade
    from memq.shared.embedded import services
    from memq.shared.embeddings import get_embedder
    from memq_lab.evaluation.longmemeval.data import find_file

    questions = load(find_file(config.data), config.limit, config.types)
    if not questions:
        raise ValueError(f"no LongMemEval question of the types {config.types} in {config.data}")
    run_ = LmeRun(config, questions, llm=settings.llm_model or "none")
    services.up(settings)
    upgrade(settings)
    producer = Producer(settings)
    if config.scripted_llm:
        _llm_cost(settings, config, producer, questions, run_, progress, note)
        return run_
    _replay(settings, config, producer, questions, run_, progress, note)

    embedder = get_embedder(settings)
    store = EmbeddingStore(lambda texts: embedder.embed(list(texts)), config.cache_dir, cache_name(embedder))
    t = time.monotonic()
    run_.seeded_vectors = _seed(settings, config, questions, store, embedder, note)
    run_.stages_s["baseline vectors taken from memq"] = time.monotonic() - t

    run_.results = {MEMQ: [], **{name: [] for name in BASELINES}}
    run_.latency_ms = {name: [] for name in run_.results}
    t = time.monotonic()
    for i, q in enumerate(questions):
        _ask_memq(settings, config, q, run_)
        progress("questions: memq", i + 1, len(questions))
    run_.stages_s["questions: memq"] = time.monotonic() - t
    t = time.monotonic()
    for i, q in enumerate(questions):
        _ask_baselines(config, q, store, run_)
        progress("questions: baselines", i + 1, len(questions))
    run_.stages_s["questions: baselines (embedding included)"] = time.monotonic() - t
    return run_


def _llm_cost(
    settings: Settings,
    config: LmeConfig,
    producer: Any,
    questions: list[Question],
    run_: LmeRun,
    progress: Callable[[str, int, int], None],
    note: Callable[[str], None],
) -> None:
    """Replay through workers whose LLM is the scripted server, an agent retrieving at the
    start of each session (asked from it, recorded for review, as an agent does), wait
    until review and consolidation are done too, and count what the LLM was asked."""
    from memq_lab.evaluation.longmemeval.llm_cost import LlmMeter

    queued = _queued(settings, producer)
    if queued:
        raise ValueError(
            f"{queued} tasks wait in the broker's queues from earlier work: the workers with the scripted LLM would "
            "take them and their calls would be counted; let `memq worker` finish them first"
        )
    with LlmMeter() as meter:
        _replay(
            settings,
            config,
            producer,
            questions,
            run_,
            progress,
            note,
            environment=meter.environment(),
            before_session=_agent_retrieval(settings),
        )
    assert run_.replay is not None
    run_.llm = "scripted (127.0.0.1)"
    run_.llm_cost = meter.per_thousand(run_.replay.messages)


def _agent_retrieval(settings: Settings) -> Callable[[str, Any], None]:
    """What an agent does when a chat starts: retrieve the user's memory for its opening
    message, asked from that chat, so that the chat's episodes review what was returned."""
    from memq.memory.retrieval.service import retrieve_memory
    from memq.shared.review_notes import flush_review_notes

    def retrieve(tenant: str, session: Any) -> None:
        opening = next((t.content for t in session.turns if t.role == "user" and t.content.strip()), None)
        if opening is None:
            return
        retrieve_memory(
            opening[: settings.query_max_chars],
            tenant=tenant,
            user_id=replay_mod.USER_ID,
            now=session.date,
            asked_in=session.id,
            settings=settings,
        )
        flush_review_notes()  # written before the chat's first episode can be reviewed

    return retrieve


def _queued(settings: Settings, producer: Any) -> int:
    """Tasks waiting in the broker's queues."""
    import redis

    from memq.shared.connections import redis_url
    from memq.shared.mailbox.backlog import measure_backlog

    broker = redis.Redis.from_url(redis_url(settings))
    return sum(measure_backlog(producer.redis, broker, settings).queued_tasks.values())


def _wait_for_later_stages(settings: Settings, producer: Any, note: Callable[[str], None]) -> None:
    """Until no task waits in a queue or runs on a worker: review and consolidation follow
    episode creation, after the conversations are idle (the workers stop after this, and
    leave nothing for the next ones to find)."""
    quiet = 0
    while quiet < 2:  # twice in a row: a task can be between a queue and a worker for a moment
        queued = _queued(settings, producer)
        inspect = producer.celery.control.inspect(timeout=1.0)
        busy = sum(len(tasks) for found in (inspect.active(), inspect.reserved()) for tasks in (found or {}).values())
        quiet = quiet + 1 if queued == 0 and busy == 0 else 0
        if quiet == 0:
            time.sleep(1.0)
    note("review and consolidation done")


def _replay(
    settings: Settings,
    config: LmeConfig,
    producer: Any,
    questions: list[Question],
    run_: LmeRun,
    progress: Callable[[str, int, int], None],
    note: Callable[[str], None],
    *,
    environment: dict[str, str] | None = None,
    before_session: Callable[[str, Any], None] | None = None,
) -> None:
    """Replay the haystacks not stored yet (all of them, unless ``config.reuse``), through
    worker processes started for it (with ``environment`` over this process'); then check
    every turn is in an episode, and review and consolidation have run."""
    from memq.shared.connections import pg_connect
    from memq.shared.forget import forget_conversation
    from memq.worker_process import start_worker, stop_worker, wait_for_worker

    todo = []
    for q in questions:
        tenant = replay_mod.tenant_of(q, config.prefix)
        with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
            if config.reuse and stored_turns(conn, tenant) == expected_turns(q):
                continue
            for s in q.sessions:  # a fresh replay: whatever an earlier one left goes first
                forget_conversation(producer.redis, conn, producer.keys(s.id, tenant))
        todo.append(q)
    if len(todo) < len(questions):
        note(f"reusing the stored haystacks of {len(questions) - len(todo)} question(s)")
    if todo:
        log_path = settings.data_path / "eval-worker.log"
        note(f"starting {config.workers} worker process(es) (log {log_path}) ...")
        worker = start_worker(config.workers, "eval-lme@%h", log_path, environment)
        try:
            wait_for_worker(producer, worker, timeout=180.0, log_hint=f"see {log_path}")
            run_.replay = replay_mod.replay(
                producer,
                todo,
                lambda done, total: progress("replay (turns in episodes)", done, total),
                prefix=config.prefix,
                before_session=before_session,
            )
            _wait_for_later_stages(settings, producer, note)
        finally:
            stop_worker(worker, timeout=60.0)
        run_.stages_s["enqueue"] = run_.replay.enqueue_s
        run_.stages_s["segmentation + episodes"] = run_.replay.process_s
    episodes = messages = 0
    for q in questions:
        tenant = replay_mod.tenant_of(q, config.prefix)
        with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
            stored, wanted = stored_turns(conn, tenant), expected_turns(q)
            if stored != wanted:
                raise RuntimeError(f"question {q.id}: {stored} of {wanted} turns are in episodes (tenant {tenant})")
            row = conn.execute("SELECT count(*) FROM episodic_memory WHERE tenant_id = %s", (tenant,)).fetchone()
            episodes += int(row[0]) if row else 0
            messages += stored
    sessions = sum(len({s.id for s in q.sessions}) for q in questions)
    run_.episodes = {
        "episodes": episodes,
        "sessions": sessions,
        "messages": messages,
        "per_session": round(episodes / max(1, sessions), 2),
        "messages_per_episode": round(messages / max(1, episodes), 2),
    }


def _seed(
    settings: Settings,
    config: LmeConfig,
    questions: list[Question],
    store: EmbeddingStore,
    embedder: Any,
    note: Callable[[str], None],
    checked: int = 8,
) -> int:
    """Hand the baselines the vectors memq's workers computed for the turns (the same model
    on the same text: a turn's content), after checking a few against the model itself,
    so the run embeds ~50,000 long turns once, not twice. Returns how many were taken."""
    from memq.shared.connections import pg_connect

    texts: list[str] = []
    vectors: list[np.ndarray] = []
    for q in questions:
        tenant = replay_mod.tenant_of(q, config.prefix)
        with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
            for content, vector in conn.execute(
                "SELECT content, embedding FROM episode_message WHERE tenant_id = %s", (tenant,)
            ):
                texts.append(content)
                vectors.append(np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector, np.float32))
    if not texts:
        return 0
    sample = random.Random(0).sample(range(len(texts)), min(checked, len(texts)))
    fresh = embedder.embed([texts[i] for i in sample])
    agree = min(float(np.dot(fresh[j], vectors[i]) / np.linalg.norm(vectors[i])) for j, i in enumerate(sample))
    if agree < 0.999:
        note(f"baseline turn vectors embedded anew (memq's stored vectors differ from the model's: cos {agree:.4f})")
        return 0
    return store.seed(texts, np.stack(vectors))


def _memq_items(result: Any, keys: dict[tuple[str, int], str]) -> list[ReturnedItem]:
    """The episodes returned, in rank order, each with the turns it shows (by message id)."""
    items = []
    for r in result.records:
        conv = r["conversation_id"]
        shown = tuple(keys[(conv, m["seq"])] for m in r["messages"] if (conv, m["seq"]) in keys)
        items.append(ReturnedItem(conv, shown))
    return items


def _memq_turns(result: Any, keys: dict[tuple[str, int], str]) -> list[str]:
    """memq's ranking of turns: every message it shows, by the priority it competes for a
    budget with (the order a budget takes them in), ties by episode rank and order."""
    shown = [
        (-m["relevance"], r["rank"], m["seq"], keys[(r["conversation_id"], m["seq"])])
        for r in result.records
        for m in r["messages"]
        if (r["conversation_id"], m["seq"]) in keys
    ]
    return [key for *_, key in sorted(shown)]


def _ask_memq(settings: Settings, config: LmeConfig, q: Question, run_: LmeRun) -> None:
    from memq.memory.retrieval.service import retrieve_memory
    from memq.shared.connections import pg_connect

    tenant = replay_mod.tenant_of(q, config.prefix)
    wide = settings.model_copy(
        update={
            "retrieval_max_tokens_max": RANK_TOKENS,
            "retrieval_limit_max": max(settings.retrieval_limit_max, config.rank_limit),
        }
    )
    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        keys = {
            (c, int(seq)): message_id
            for c, seq, message_id in conn.execute(
                "SELECT conversation_id, seq, message_id FROM episode_message WHERE tenant_id = %s", (tenant,)
            )
        }

        def ask(limit: int, budget: int) -> Any:
            return retrieve_memory(
                q.question,
                tenant=tenant,
                user_id=replay_mod.USER_ID,
                limit=limit,
                detail=config.detail,
                max_tokens=budget,
                now=q.date,
                settings=wide,
                conn=conn,
                record=False,
            )

        wide_result = ask(config.rank_limit, RANK_TOKENS)
        measures = ranking_measures(session_ranking(_memq_items(wide_result, keys)), q.answer_session_ids, "session")
        measures.update(ranking_measures(_memq_turns(wide_result, keys), q.evidence_keys, "turn"))
        evidence = evidence_texts(q)
        for budget in config.budgets:
            started = time.perf_counter()
            result = ask(settings.retrieval_limit_max, budget)
            if budget == LATENCY_BUDGET:
                run_.latency_ms[MEMQ].append((time.perf_counter() - started) * 1000)
            measures[budget_measure(budget)] = evidence_found(result.text, evidence).recall
    run_.results[MEMQ].append(QuestionResult(q.id, q.type, measures))


def _ask_baselines(config: LmeConfig, q: Question, store: EmbeddingStore, run_: LmeRun) -> None:
    haystack = Haystack(q)
    evidence = evidence_texts(q)
    store.embed(haystack.documents)  # the baselines' index: built before, not timed with, the question
    store.embed(haystack.lines)
    started = time.perf_counter()
    store.vectors.pop(text_key(q.question), None)  # the question's embedding is part of each system's time
    store.embed([q.question])
    query_ms = (time.perf_counter() - started) * 1000
    for name in BASELINES:
        started = time.perf_counter()
        ranked = RANKERS[name](haystack, store.embed)
        run_.latency_ms[name].append(query_ms + (time.perf_counter() - started) * 1000)
        measures = ranking_measures(session_ranking(ranked), q.answer_session_ids, "session")
        if all(len(i.turns) <= 1 for i in ranked):
            measures.update(ranking_measures(turn_ranking(ranked), q.evidence_keys, "turn"))
        for budget in config.budgets:
            measures[budget_measure(budget)] = evidence_found(_filled(ranked, budget), evidence).recall
        run_.results[name].append(QuestionResult(q.id, q.type, measures))


def _filled(ranked: Sequence[Item], budget: int) -> str:
    return "\n\n".join(i.text for i in budget_fill(ranked, budget))
