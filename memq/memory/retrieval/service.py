"""Retrieval, orchestrated (Plast Mem): embed the query, run the lexical and vector legs,
fuse them by Reciprocal Rank Fusion, re-rank by FSRS retrievability at the moment of the
question (and by a time the query names), pick the most relevant messages of the best
episodes within the token budget, render, and record what was returned for review.

``retrieve_memory`` and ``recent_memory`` are the entry points; the CLI, the HTTP API,
the MCP server and the inspector reach them through ``memq.memory.Memory``, the lab calls
them directly.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import structlog

from memq.memory.retrieval import legs, scope_words
from memq.memory.retrieval.beside import alongside
from memq.memory.retrieval.common_words import informative_text
from memq.memory.retrieval.facts_section import fact_record, facts_block
from memq.memory.retrieval.fusion import rrf
from memq.memory.retrieval.model import EpisodeHit, MessageView
from memq.memory.retrieval.participants import asks_what_the_assistant_said, query_terms
from memq.memory.retrieval.relevance import (
    EpisodeRelevance,
    RelevanceParams,
    episode_relevance,
    pooled_density,
    priorities,
)
from memq.memory.retrieval.render import episode_block, hit_record, markdown
from memq.memory.retrieval.request import RetrievalRequest, build_request, scoped
from memq.memory.retrieval.retrievability import decay, retrievability, with_floor
from memq.memory.retrieval.selection import Selected, SelectionParams, message_cap, select
from memq.memory.retrieval.sittings import sittings
from memq.memory.retrieval.time_expressions import NamedTime, find_time
from memq.shared.db.facts import FACT_CANDIDATES, facts_by_id, fuse_fact_legs
from memq.shared.db.reviews import Retrieved, ReviewNote
from memq.shared.errors import ValidationError
from memq.shared.metrics import metrics
from memq.shared.review_notes import review_notes
from memq.shared.settings import Settings, get_settings
from memq.shared.tokens import count_tokens, count_tokens_cached

log = structlog.get_logger("memq.retrieval")


@dataclass
class RetrievalResult:
    request: RetrievalRequest
    text: str  # markdown for an LLM's tool result
    tokens: int  # tiktoken count of ``text``
    hits: list[EpisodeHit]  # what is returned, best first, with the messages shown
    chosen: list[Selected]  # the same with what of each is shown (``records`` renders it)
    named_time: NamedTime | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    reviews_recorded: int = 0  # review notes handed to the writer (review_notes.py)
    participants: list[str] = field(default_factory=list)  # participants the query names
    facts: list[dict[str, Any]] = field(default_factory=list)  # the facts section, with scores

    @functools.cached_property
    def records(self) -> list[dict[str, Any]]:
        """What is returned as JSON-ready data with every score (built when first asked for:
        a caller that reads the markdown does not pay for it)."""
        return [hit_record(s.hit, s.shown, s.summary is not None) for s in self.chosen]

    def to_json(self) -> dict[str, Any]:
        r = self.request
        return {
            "query": r.query,
            "tenant": r.tenant,
            "conversation_ids": list(r.conversation_ids) if r.conversation_ids is not None else None,
            "detail": r.detail,
            "limit": r.limit,
            "max_tokens": r.max_tokens,
            "now": r.now.isoformat(),
            "time_range": None
            if r.time_range is None
            else {
                "start": r.time_range.start.isoformat() if r.time_range.start else None,
                "end": r.time_range.end.isoformat() if r.time_range.end else None,
            },
            "named_time": None
            if self.named_time is None
            else {
                "phrase": self.named_time.phrase,
                "start": self.named_time.window.start.isoformat() if self.named_time.window.start else None,
                "end": self.named_time.window.end.isoformat() if self.named_time.window.end else None,
            },
            "participants_named": self.participants,
            "asked_in": r.asked_in,
            "tokens": self.tokens,
            "facts": self.facts,
            "memories": self.records,
            "text": self.text,
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }


@contextmanager
def _connection(conn: psycopg.Connection | None, settings: Settings, tenant: str) -> Iterator[psycopg.Connection]:
    """The caller's connection (scoped to the tenant by the caller), or one of our own."""
    if conn is not None:
        yield conn
        return
    from memq.shared.connections import pg_connect

    with pg_connect(settings, tenant=tenant, autocommit=True) as own:
        yield own


def rerank(
    hits: list[EpisodeHit],
    fused: dict[str, float],
    settings: Settings,
    now: datetime,
    named: NamedTime | None,
    limit: int | None = None,
) -> list[EpisodeHit]:
    """Score the found episodes (in place), keep the ``limit`` most relevant and order them
    best first: final = rrf x decay (``retrievability.decay``) x time boost.

    Which episodes are kept is decided by relevance alone (rrf x time boost); FSRS decay
    orders the kept ones (the order they are shown in, and an episode shown as its summary
    alone competes at its final score), never which of them a retrieval returns. Measured
    on LoCoMo (docs/evaluation.md): letting decay choose what the limit keeps lost
    questions about old, never-reviewed memories to fresher ones that matched them a few
    per cent worse, at limit 10 even with decay bounded to 10 %."""
    for hit in hits:
        hit.rrf = fused[hit.id]
        hit.retrievability = with_floor(
            retrievability(hit.stability, hit.last_review, now, desired_retention=settings.desired_retention),
            hit.surprise,
            flashbulb_surprise=settings.flashbulb_surprise,
            floor=settings.flashbulb_floor,
        )
        if named is not None and named.window.overlaps(hit.start_at, hit.end_at):
            hit.time_boost = settings.time_boost
        hit.final = hit.rrf * multiplier(hit, settings)
    if limit is not None and len(hits) > limit:
        hits = sorted(hits, key=lambda h: (-h.rrf * h.time_boost, -h.final, h.start_at))[:limit]
    hits.sort(key=lambda h: (-h.final, -h.rrf, h.start_at))
    for i, h in enumerate(hits, start=1):
        h.rank = i
    return hits


def multiplier(hit: EpisodeHit, settings: Settings) -> float:
    """What an episode's FSRS retrievability and a time the query names do to its scores."""
    return episode_decay(hit, settings) * hit.time_boost


def episode_decay(hit: EpisodeHit, settings: Settings) -> float:
    return decay(hit.retrievability, settings.retrievability_weight, settings.retrievability_influence)


def rerank_reach(settings: Settings, named: NamedTime | None) -> float:
    """The least re-ranking can give a score of what it keeps over the most: the time
    boost (1 to MEMQ_TIME_BOOST) when the query names a time, else nothing (decay does not
    decide what is kept, ``rerank``). An episode whose fused score is below the n-th best
    one's times this can never be among the n kept."""
    return 1.0 / max(1.0, settings.time_boost) if named is not None else 1.0


def relevance_params(settings: Settings) -> RelevanceParams:
    return RelevanceParams(
        k=settings.message_rrf_k,
        neighbour_bonus=settings.neighbour_bonus,
        speaker_weight=settings.speaker_match_weight,
        density_weight=settings.episode_density_weight,
        density_top=settings.episode_density_top,
        episode_weight=settings.message_episode_weight,
    )


def attach_messages(
    shown: dict[str, list[tuple[Any, ...]]],
    hits: list[EpisodeHit],
    message_ranks: dict[str, dict[int, dict[str, int]]],
    named: frozenset[str],
    settings: Settings,
) -> None:
    """Give each hit the messages that may be shown (``shown``: episode id -> (seq, role,
    speaker, content, ts) in seq order), each with the priority it competes for the
    budget with (``relevance.py``; density over each episode's sitting among ``hits``,
    ``sittings.py``, unless ``MEMQ_EPISODE_DENSITY_SCOPE`` is "episode"). ``message_ranks``:
    episode id -> seq -> the message's ranks in the message legs."""
    p = relevance_params(settings)
    scored: dict[str, EpisodeRelevance] = {}
    for h in hits:
        rows = shown.get(h.id)
        if rows:
            scored[h.id] = episode_relevance(
                [row[0] for row in rows], message_ranks.get(h.id, {}), p, [row[2] for row in rows], named
            )
    density = {eid: r.density for eid, r in scored.items()}
    if settings.episode_density_scope == "sitting":
        of = sittings([h for h in hits if h.id in scored], timedelta(minutes=settings.time_gap_minutes))
        tops: dict[str, list[list[float]]] = {}
        for eid, relevance in scored.items():
            tops.setdefault(of[eid], []).append(relevance.top)
        pooled = {sitting: pooled_density(episode_tops, p) for sitting, episode_tops in tops.items()}
        density = {eid: pooled[of[eid]] for eid in scored}
    for h in hits:
        r = scored.get(h.id)
        if r is None:
            h.messages = []
            continue
        scores = priorities(r.scores, density[h.id], h.rrf, h.time_boost, p)
        h.messages = [
            MessageView(seq, role, speaker, content, ts, score, ranks, match)
            for (seq, role, speaker, content, ts), score, ranks, match in zip(
                shown[h.id], scores, r.ranks, r.speaker_match
            )
        ]


def excerpt_size(settings: Settings, max_tokens: int) -> int:
    """How long a long message's excerpt may be: ``MEMQ_MESSAGE_EXCERPT_TOKENS``, and at most
    ``MEMQ_MESSAGE_EXCERPT_SHARE`` of the budget (a small budget holds more, shorter ones)."""
    return max(1, min(settings.message_excerpt_tokens, int(max_tokens * settings.message_excerpt_share)))


def message_reach(max_tokens: int, settings: Settings) -> int:
    """How deep in each message leg messages are read for showing: max_tokens /
    MEMQ_MESSAGE_REACH_TOKENS (a little deeper than the messages a budget holds), at
    least MEMQ_MESSAGE_REACH_MIN, never deeper than the legs rank."""
    deep = max(settings.message_reach_min, -(-max_tokens // settings.message_reach_tokens))
    return min(settings.retrieval_candidates, deep)


_participants: dict[tuple[str, tuple[str, ...] | None], tuple[float, list[str]]] = {}


def participants(conn: psycopg.Connection, request: RetrievalRequest, settings: Settings) -> list[str]:
    """The names of the participants in scope, remembered for ``MEMQ_PARTICIPANTS_CACHE_SECONDS``
    per tenant and scope (a new speaker is recognised in queries at most that late)."""
    key = (request.tenant, request.conversation_ids)
    now = time.monotonic()
    cached = _participants.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    names = legs.participants(conn, request)
    if settings.participants_cache_seconds > 0:
        if len(_participants) > 10_000:
            _participants.clear()
        _participants[key] = (now + settings.participants_cache_seconds, names)
    return names


def _model(settings: Settings, timings: dict[str, float]) -> Callable[[str], np.ndarray]:
    """The configured embedding model as ``embed``; loading it (once per process) is timed
    apart from embedding the query."""
    from memq.shared.embeddings import get_embedder

    t = time.perf_counter()
    embedder = get_embedder(settings)
    if (loaded := (time.perf_counter() - t) * 1000) >= 1.0:
        timings["model_load"] = loaded

    def embed(text: str) -> np.ndarray:
        vector: np.ndarray = embedder.embed([text])[0]
        return vector

    return embed


class _Clock:
    """The stages' times in milliseconds (``RetrievalResult.timings_ms``), each from the
    end of the previous one."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.start = self.last = time.perf_counter()

    def mark(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = (now - self.last) * 1000
        self.last = now

    def done(self) -> None:
        self.timings["total"] = (time.perf_counter() - self.start) * 1000


def retrieve(
    request: RetrievalRequest,
    *,
    settings: Settings | None = None,
    embed: Callable[[str], np.ndarray] | None = None,
    conn: psycopg.Connection | None = None,
    record: bool = True,
    spare: legs.Spare | None = None,
) -> RetrievalResult:
    """Run a validated request (see ``build_request``), in five steps: the query's forms
    (its vector and the words the lexical legs search by), the legs (one statement, or
    shared with ``spare``), the ranking, what is shown within the budget, and the review
    note. ``embed`` turns the searched text (the query without the participants it names)
    into a vector; default: the configured embedding model. ``spare``: a second
    connection for the vector legs beyond one conversation (``legs.run_legs``;
    ``MEMQ_RETRIEVAL_SPLIT_LEGS``)."""
    settings = settings or get_settings()
    clock = _Clock()
    named = find_time(request.query, request.now) if request.time_range is None else None
    with _connection(conn, settings, request.tenant) as c:
        request = scoped(c, request)
        if embed is None:  # after PostgreSQL answered: services that are down are reported at once
            embed = _model(settings, clock.timings)
        terms = query_terms(request.query, participants(c, request, settings))
        vector, searched = _query_forms(c, request, terms.search_text, embed, settings, clock)
        found = _legs(c, request, vector, searched, named, spare, settings)
        clock.mark("sql")
        hits = _ranked(found, request, named, settings)
        params = _selection_params(request, settings)
        if request.detail != "none" and hits:
            _show_messages(c, found, hits, params, terms.named, settings)
        text, tokens, chosen, fact_records = _compose(c, request, found, hits, params, settings)
        clock.mark("select")
        recorded = _note_for_review(request, chosen, settings) if record else 0
        clock.mark("record")
    clock.done()
    timings = clock.timings
    # a slow-retrieval log: info from MEMQ_LOG_SLOW_RETRIEVAL_MS, else debug (dropped before any
    # processor runs below the level); counts and timings only: the query's words are content
    (log.info if timings["total"] >= settings.log_slow_retrieval_ms else log.debug)(
        "retrieved",
        tenant=request.tenant,
        memories=len(chosen),
        tokens=tokens,
        detail=request.detail,
        named_time=named is not None,
        participants=len(terms.named),
        split_legs=found.split,
        ms=round(timings["total"], 1),
        stages_ms={stage: round(ms, 1) for stage, ms in timings.items() if stage != "total"},
    )
    measures = metrics()
    measures.retrieval_seconds.observe(timings["total"] / 1000)
    measures.retrieval_tokens.observe(tokens)
    returned = [s.hit for s in chosen]
    return RetrievalResult(
        request, text, tokens, returned, chosen, named, timings, recorded, sorted(terms.named), fact_records
    )


def _query_forms(
    conn: psycopg.Connection,
    request: RetrievalRequest,
    search_text: str,
    embed: Callable[[str], np.ndarray],
    settings: Settings,
    clock: _Clock,
) -> tuple[np.ndarray, str]:
    """The query's vector and the text the lexical legs search by, at once: the model
    embeds on a pooled thread while PostgreSQL counts the query's words in the scope
    (``lexical_text``). Timed as ``embed`` (the embedding's own time) and, when the
    count took a round trip, ``common_words`` (its own time, overlapped)."""

    def vector_of() -> tuple[np.ndarray, float]:
        t = time.perf_counter()
        return np.asarray(embed(search_text), dtype=np.float32), (time.perf_counter() - t) * 1000

    def words() -> tuple[str, float]:
        t = time.perf_counter()
        return lexical_text(conn, request, search_text, settings), (time.perf_counter() - t) * 1000

    (vector, embedded_ms), (searched, counted_ms) = alongside(vector_of, words)
    clock.mark("query_forms")
    clock.timings["embed"] = embedded_ms
    if counted_ms >= 0.1:
        clock.timings["common_words"] = counted_ms
    return vector, searched


def _legs(
    conn: psycopg.Connection,
    request: RetrievalRequest,
    vector: np.ndarray,
    searched: str,
    named: NamedTime | None,
    spare: legs.Spare | None,
    settings: Settings,
) -> legs.LegResults:
    """The lexical and vector legs over episodes, messages and facts, fused and read in
    one statement (``legs.retrieval_sql``), or shared with ``spare`` beyond one conversation."""
    return legs.run_legs(
        conn,
        request,
        vector,
        settings.legs,
        settings.retrieval_candidates,
        settings.hnsw_ef_search,
        query_text=searched,
        full=True,
        reach=message_reach(request.max_tokens, settings),
        facts=(FACT_CANDIDATES, settings.fact_min_similarity) if settings.retrieval_facts > 0 else None,
        fuse=(settings.rrf_k, max(settings.retrieval_candidates, request.limit)),
        plan_cache_mode=settings.retrieval_plan_cache_mode,
        pairs_enough=settings.lexical_pairs_enough,
        returned=(request.limit, rerank_reach(settings, named)),
        spare=spare if settings.retrieval_split_legs else None,
        episode_ef_search=settings.hnsw_ef_search_episodes,
    )


def _ranked(
    found: legs.LegResults, request: RetrievalRequest, named: NamedTime | None, settings: Settings
) -> list[EpisodeHit]:
    """The episodes by RRF over the legs, re-ranked by FSRS retrievability and a named time."""
    fused = rrf(found.episodes, settings.rrf_k)[: max(settings.retrieval_candidates, request.limit)]
    for f in fused:
        if f.id in found.hits:
            found.hits[f.id].ranks = f.ranks
    return rerank(
        [found.hits[f.id] for f in fused if f.id in found.hits],
        {f.id: f.score for f in fused},
        settings,
        request.now,
        named,
        request.limit,
    )


def _selection_params(request: RetrievalRequest, settings: Settings) -> SelectionParams:
    return SelectionParams(
        detail=request.detail,
        max_tokens=request.max_tokens,
        low_messages=settings.low_detail_messages,
        auto_rank=settings.auto_detail_rank,
        auto_message_rank=settings.auto_detail_message_rank,
        key_moment_surprise=settings.key_moment_surprise,
        summary_tokens_with_messages=settings.summary_tokens_with_messages,
        header_weight=settings.message_episode_weight,
        title_words=settings.display_title_words,
        sitting_gap=timedelta(minutes=settings.time_gap_minutes) if settings.sitting_blocks else None,
        long_tokens=settings.message_long_tokens,
        excerpt_tokens=excerpt_size(settings, request.max_tokens),
        full_weight=settings.message_full_weight,
        whole_roles=frozenset({"assistant"}) if asks_what_the_assistant_said(request.query) else frozenset(),
    )


def _show_messages(
    conn: psycopg.Connection,
    found: legs.LegResults,
    hits: list[EpisodeHit],
    params: SelectionParams,
    named: frozenset[str],
    settings: Settings,
) -> None:
    """Give each hit the messages it may show, with their priorities. A top episode found
    by its title or summary alone has none among the legs' rows: the seed shows the top
    ranks' source messages, so all of its messages are read."""
    shown = found.shown
    bare = [h.id for h in hits[: settings.auto_detail_rank] if h.id not in shown and message_cap(h, params) > 0]
    if bare:
        shown = {**shown, **legs.fetch_messages(conn, bare)}
    attach_messages(shown, hits, found.messages, named, settings)


def _compose(
    conn: psycopg.Connection,
    request: RetrievalRequest,
    found: legs.LegResults,
    hits: list[EpisodeHit],
    params: SelectionParams,
    settings: Settings,
) -> tuple[str, int, list[Selected], list[dict[str, Any]]]:
    """(text, its tokens, what is shown of each hit, the facts' records): the facts first,
    the episodes filling what is left of the budget, which holds on what is returned."""
    facts_text, fact_records = _facts(conn, request, found.facts, settings)
    if facts_text:  # 2 tokens spare for the joint
        params = replace(params, max_tokens=max(0, request.max_tokens - count_tokens(facts_text + "\n\n") - 2))
    selection = (
        select(hits, params, request.now, count_tokens_cached, request.query) if params.max_tokens >= 20 else None
    )
    chosen = selection.chosen if selection else []
    text, tokens = (selection.text, selection.tokens) if selection else ("", 0)
    if facts_text:
        text = facts_text if not chosen else f"{facts_text}\n\n{text}"
        tokens = count_tokens(text)
        if tokens > request.max_tokens:  # never expected: facts alone fit in a third of the budget
            assert selection is not None
            fact_records, text, tokens = [], selection.text, selection.tokens
    return text, tokens, chosen, fact_records


def _note_for_review(request: RetrievalRequest, chosen: list[Selected], settings: Settings) -> int:
    """What was returned, handed to this process's review-notes writer (written off the
    request path); how many memories it names."""
    if not chosen:
        return 0
    review_notes(settings).add(
        ReviewNote(
            request.tenant,
            request.query,
            request.now,
            tuple(Retrieved(s.hit.conversation_id, s.hit.id, s.hit.rank, s.hit.final) for s in chosen),
            request.asked_in,
        )
    )
    return len(chosen)


def lexical_text(conn: psycopg.Connection, request: RetrievalRequest, text: str, settings: Settings) -> str:
    """What the lexical legs search by: the query without its common words
    (``common_words.py``), or as it is."""
    share = settings.lexical_common_share
    if share <= 0 or not any(leg.endswith("_lexical") for leg in settings.legs):
        return text
    words = text.split()
    if len(words) < 2:
        return text
    found = scope_words.word_counts(
        conn, request, words, settings.lexical_common_max_messages, settings.lexical_common_cache_seconds
    )
    if found is None:
        return text
    return informative_text(*found, share) or text


def _facts(
    conn: psycopg.Connection, request: RetrievalRequest, legs_rows: list[tuple[str, str, int]], settings: Settings
) -> tuple[str, list[dict[str, Any]]]:
    """The facts section (semantic memory) within a third of the budget, and its records:
    the fact legs' rows (run in the retrieval's statement) fused, the best facts read."""
    found = (
        facts_by_id(conn, fuse_fact_legs([legs_rows], settings.rrf_k, settings.retrieval_facts)) if legs_rows else []
    )
    if not found:
        return "", []
    block, kept = facts_block([f for f, _, _ in found], request.max_tokens // 3, count_tokens_cached)
    scores = {f.id: (score, ranks) for f, score, ranks in found}
    return block, [fact_record(f, *scores[f.id]) for f in kept]


def retrieve_memory(
    query: str,
    *,
    tenant: str | None = None,
    conversation_id: str | None = None,
    conversation_ids: list[str] | tuple[str, ...] | None = None,
    limit: int | None = None,
    detail: str = "auto",
    max_tokens: int | None = None,
    time_range: Any = None,
    now: datetime | str | None = None,  # a datetime or an ISO-8601 string
    settings: Settings | None = None,
    conn: psycopg.Connection | None = None,
    embed: Callable[[str], np.ndarray] | None = None,
    record: bool = True,
    asked_in: str | None = None,
    user_id: str | None = None,
    spare: legs.Spare | None = None,
) -> RetrievalResult:
    """Memories of one conversation, of several, or (neither given) of every conversation
    of the tenant, most relevant first, within ``max_tokens`` of returned text. With
    ``user_id``: only that user's conversations (of those given, if any).
    ``asked_in``: the conversation the agent asked from (default: the one searched, when
    one is); what is returned is reviewed when that conversation's next segment ends.
    ``spare``: see ``retrieve``."""
    settings = settings or get_settings()
    request = build_request(
        settings,
        tenant=tenant,
        query=query,
        conversation_id=conversation_id,
        conversation_ids=conversation_ids,
        limit=limit,
        detail=detail,
        max_tokens=max_tokens,
        time_range=time_range,
        now=now,
        asked_in=asked_in,
        user_id=user_id,
    )
    return retrieve(request, settings=settings, embed=embed, conn=conn, record=record, spare=spare)


@dataclass
class RecentResult:
    text: str
    tokens: int
    records: list[dict[str, Any]]


def recent_memory(
    conversation_id: str | None = None,
    *,
    user_id: str | None = None,
    tenant: str | None = None,
    limit: int | None = None,
    days: float = 7.0,
    max_tokens: int | None = None,
    now: datetime | str | None = None,  # a datetime or an ISO-8601 string
    settings: Settings | None = None,
    conn: psycopg.Connection | None = None,
) -> RecentResult:
    """The conversation's latest episodes that ended within ``days`` of now, newest first:
    title, when and summary, within ``max_tokens``. With ``user_id``: of the user's
    conversations (only the given conversation, if it is the user's)."""
    settings = settings or get_settings()
    if conversation_id is None and user_id is None:
        raise ValidationError("give a conversation_id or a user_id", field="conversation_id")
    # the same validation as a retrieval (tenant, conversation, limit, budget, now)
    request = build_request(
        settings,
        tenant=tenant,
        query="recent",
        conversation_id=conversation_id,
        limit=limit,
        max_tokens=max_tokens,
        now=now,
        user_id=user_id,
    )
    if isinstance(days, bool) or not isinstance(days, int | float) or not 0 < days <= 36_500:
        raise ValidationError("must be a number of days above 0", field="days")
    tenant, limit, max_tokens = request.tenant, request.limit, request.max_tokens
    since = request.now - timedelta(days=days)
    with _connection(conn, settings, tenant) as c:
        request = scoped(c, request)
        assert request.conversation_ids is not None  # one conversation_id, or the user's
        scope = list(request.conversation_ids)
        rows = legs.recent_candidates(c, tenant, scope[0] if user_id is None else scope, since, limit)
    shown = conversation_id if conversation_id is not None else f"user {user_id}"
    hits = rerank(rows, {r.id: 0.0 for r in rows}, settings, request.now, None)
    hits.sort(key=lambda h: h.end_at, reverse=True)
    blocks: list[str] = []
    records: list[dict[str, Any]] = []
    for i, h in enumerate(hits, start=1):
        h.rank = i
        fits = None
        for summary in (h.summary, None):  # without its summary when the whole one does not fit
            block = episode_block(
                h, [], now=request.now, summary=summary, key_moment_surprise=settings.key_moment_surprise
            )
            if count_tokens(markdown([*blocks, block], "")) <= max_tokens:
                fits = (block, summary is not None)
                break
        if fits is None:
            break
        blocks.append(fits[0])
        records.append(hit_record(h, [], fits[1]))
    text = markdown(blocks, "") if blocks else f"No memories in the last {days:g} days of {shown}."
    if count_tokens(text) > max_tokens:  # a long conversation id echoed back
        text = f"No memories in the last {days:g} days."
    return RecentResult(text, count_tokens(text), records)
