"""Retrieval, orchestrated (seed 001): embed the query, run the lexical and vector legs,
fuse them by Reciprocal Rank Fusion, re-rank by FSRS retrievability at the moment of the
question (and by a time the query names), pick the most relevant messages of the best
episodes within the token budget, render, and record what was returned for review.

``retrieve_memory`` and ``recent_memory`` are the library's entry points; the CLI, the
HTTP API, the MCP server and the evaluation all call them.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import structlog

from shared.db.reviews import Retrieved, record_pending
from shared.errors import ValidationError
from shared.retrieval import legs
from shared.retrieval.fusion import rrf
from shared.retrieval.model import EpisodeFields, EpisodeHit, MessageView
from shared.retrieval.render import hit_record, markdown, episode_block
from shared.retrieval.request import RetrievalRequest, build_request
from shared.retrieval.retrievability import retrievability, with_floor
from shared.retrieval.selection import SelectionParams, select
from shared.retrieval.time_expressions import NamedTime, find_time
from shared.settings import Settings, get_settings
from shared.tokens import count_tokens, count_tokens_cached

log = structlog.get_logger("memq.retrieval")


@dataclass
class RetrievalResult:
    request: RetrievalRequest
    text: str  # markdown for an LLM's tool result
    tokens: int  # tiktoken count of ``text``
    hits: list[EpisodeHit]  # what is returned, best first, with the messages shown
    records: list[dict[str, Any]]  # the same as JSON-ready data with every score
    named_time: NamedTime | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    reviews_recorded: int = 0

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
            "time_range": None if r.time_range is None else {
                "start": r.time_range.start.isoformat() if r.time_range.start else None,
                "end": r.time_range.end.isoformat() if r.time_range.end else None,
            },
            "named_time": None if self.named_time is None else {
                "phrase": self.named_time.phrase,
                "start": self.named_time.window.start.isoformat() if self.named_time.window.start else None,
                "end": self.named_time.window.end.isoformat() if self.named_time.window.end else None,
            },
            "tokens": self.tokens,
            "memories": self.records,
            "text": self.text,
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }


@contextmanager
def _connection(conn: psycopg.Connection | None, settings: Settings) -> Iterator[psycopg.Connection]:
    if conn is not None:
        yield conn
        return
    from shared.connections import pg_connect

    with pg_connect(settings) as own:
        yield own


def message_relevance(keys: list[tuple[str, int]], ranks: dict[str, dict[tuple[str, int], int]], k: float,
                      neighbour_bonus: float) -> dict[tuple[str, int], tuple[float, dict[str, int]]]:
    """Relevance of messages, given as (episode id, seq) in episode and seq order, from
    their ranks in the message legs: RRF over the legs that ranked them (0 when none
    did); then a message next to a relevant one in its episode shares ``neighbour_bonus``
    of that one's relevance (the answer after a question, the question before an answer)."""
    mine: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for leg, ranked in ranks.items():
        name = leg.removeprefix("message_")
        for key, rank in ranked.items():
            mine[key][name] = rank
    own = {key: sum(1.0 / (k + rank) for rank in rs.values()) for key, rs in mine.items()}
    out: dict[tuple[str, int], tuple[float, dict[str, int]]] = {}
    for i, key in enumerate(keys):
        best = own.get(key, 0.0)
        for j in (i - 1, i + 1):
            if 0 <= j < len(keys) and keys[j][0] == key[0]:
                best = max(best, neighbour_bonus * own.get(keys[j], 0.0))
        out[key] = (best, mine.get(key, {}))
    return out


def rerank(candidates: list[legs.Candidate], fused: dict[str, float], settings: Settings, now: datetime,
           named: NamedTime | None) -> list[EpisodeHit]:
    """final = rrf x retrievability^weight x time boost, best first."""
    hits = []
    for c in candidates:
        r = with_floor(
            retrievability(c.fsrs_card, now, desired_retention=settings.desired_retention),
            c.surprise, flashbulb_surprise=settings.flashbulb_surprise, floor=settings.flashbulb_floor,
        )
        boost = settings.time_boost if named is not None and named.window.overlaps(c.start_at, c.end_at) else 1.0
        hit = EpisodeHit(**{f.name: getattr(c, f.name) for f in fields(EpisodeFields)}, ranks=c.ranks, rrf=fused[c.id],
                         retrievability=r, time_boost=boost)
        hit.final = hit.rrf * (r ** settings.retrievability_weight) * boost
        hits.append(hit)
    hits.sort(key=lambda h: (-h.final, -h.rrf, h.start_at))
    for i, h in enumerate(hits, start=1):
        h.rank = i
    return hits


def _attach_messages(conn: psycopg.Connection, hits: list[EpisodeHit], message_ranks: dict[str, dict[tuple[str, int], int]],
                     settings: Settings) -> None:
    """Each hit's messages with a priority on the scale of the episodes' final scores:
    the message's own relevance + weight x its episode's final score (rrf x
    retrievability x time boost), so the seed's ranking of episodes decides which
    episodes' messages come first and the message legs decide which of their messages."""
    rows = legs.fetch_messages(conn, [h.id for h in hits])
    relevance = message_relevance([(r[0], r[1]) for r in rows], message_ranks, settings.rrf_k, settings.neighbour_bonus)
    by_id = {h.id: h for h in hits}
    for h in hits:
        h.messages = []
    for r in rows:
        h = by_id[r[0]]
        score, ranks = relevance[(r[0], r[1])]
        h.messages.append(MessageView(seq=r[1], role=r[2], speaker=r[3], content=r[4], ts=r[5],
                                      relevance=score + settings.message_episode_weight * h.final, ranks=ranks))


def retrieve(request: RetrievalRequest, *, settings: Settings | None = None, embed: Callable[[str], np.ndarray] | None = None,
             conn: psycopg.Connection | None = None, record: bool = True) -> RetrievalResult:
    """Run a validated request (see ``build_request``)."""
    settings = settings or get_settings()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    if embed is None:
        from shared.embeddings import get_embedder

        embedder = get_embedder(settings)

        def embed(text: str) -> np.ndarray:
            return embedder.embed([text])[0]

    vector = np.asarray(embed(request.query), dtype=np.float32)
    t1 = time.perf_counter()
    timings["embed"] = (t1 - t0) * 1000
    named = find_time(request.query, request.now) if request.time_range is None else None

    with _connection(conn, settings) as c:
        found = legs.run_legs(c, request, vector, settings.legs, settings.retrieval_candidates, settings.hnsw_ef_search)
        t2 = time.perf_counter()
        timings["legs"] = (t2 - t1) * 1000
        fused = rrf(found.episodes, settings.rrf_k)[: max(settings.retrieval_candidates, request.limit)]
        candidates = legs.fetch_candidates(c, [f.id for f in fused])
        for f in fused:
            if f.id in candidates:
                candidates[f.id].ranks = f.ranks
        hits = rerank([candidates[f.id] for f in fused if f.id in candidates], {f.id: f.score for f in fused},
                      settings, request.now, named)[: request.limit]
        if request.detail != "none" and hits:
            _attach_messages(c, hits, found.messages, settings)
        t3 = time.perf_counter()
        timings["fetch"] = (t3 - t2) * 1000
        params = SelectionParams(
            detail=request.detail, max_tokens=request.max_tokens, low_messages=settings.low_detail_messages,
            auto_rank=settings.auto_detail_rank, key_moment_surprise=settings.key_moment_surprise,
            summary_tokens_with_messages=settings.summary_tokens_with_messages,
            header_weight=settings.message_episode_weight,
        )
        chosen, text = select(hits, params, request.now, count_tokens_cached, request.query)
        t4 = time.perf_counter()
        timings["select"] = (t4 - t3) * 1000
        returned = [s.hit for s in chosen]
        records = [hit_record(s.hit, s.shown, s.summary is not None) for s in chosen]
        recorded = 0
        if record and chosen:
            with c.transaction():
                recorded = record_pending(c, request.tenant, request.query, request.now, [
                    Retrieved(s.hit.conversation_id, s.hit.id, s.hit.rank, s.hit.final) for s in chosen
                ])
        timings["record"] = (time.perf_counter() - t4) * 1000
    timings["total"] = (time.perf_counter() - t0) * 1000
    tokens = count_tokens(text)
    log.debug("retrieved", tenant=request.tenant, memories=len(chosen), tokens=tokens, detail=request.detail,
             named_time=named.phrase if named else None, ms=round(timings["total"], 1))
    return RetrievalResult(request, text, tokens, returned, records, named, timings, recorded)


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
    now: datetime | None = None,
    settings: Settings | None = None,
    conn: psycopg.Connection | None = None,
    embed: Callable[[str], np.ndarray] | None = None,
    record: bool = True,
) -> RetrievalResult:
    """Memories of one conversation, of several, or (neither given) of every conversation
    of the tenant, most relevant first, within ``max_tokens`` of returned text."""
    settings = settings or get_settings()
    request = build_request(
        settings, tenant=tenant, query=query, conversation_id=conversation_id, conversation_ids=conversation_ids,
        limit=limit, detail=detail, max_tokens=max_tokens, time_range=time_range, now=now,
    )
    return retrieve(request, settings=settings, embed=embed, conn=conn, record=record)


@dataclass
class RecentResult:
    text: str
    tokens: int
    records: list[dict[str, Any]]


def recent_memory(
    conversation_id: str,
    *,
    tenant: str | None = None,
    limit: int | None = None,
    days: float = 7.0,
    max_tokens: int | None = None,
    now: datetime | None = None,
    settings: Settings | None = None,
    conn: psycopg.Connection | None = None,
) -> RecentResult:
    """The conversation's latest episodes that ended within ``days`` of now, newest first:
    title, when and summary, within ``max_tokens``."""
    settings = settings or get_settings()
    # the same validation as a retrieval (tenant, conversation, limit, budget, now)
    request = build_request(settings, tenant=tenant, query="recent", conversation_id=conversation_id, limit=limit,
                            max_tokens=max_tokens, now=now)
    if isinstance(days, bool) or not isinstance(days, int | float) or not 0 < days <= 36_500:
        raise ValidationError("must be a number of days above 0", field="days")
    tenant, conversation_id, limit, max_tokens = request.tenant, request.conversation_ids[0], request.limit, request.max_tokens
    since = request.now - timedelta(days=days)
    with _connection(conn, settings) as c:
        rows = legs.recent_candidates(c, tenant, conversation_id, since, limit)
    hits = rerank(rows, {r.id: 0.0 for r in rows}, settings, request.now, None)
    hits.sort(key=lambda h: h.end_at, reverse=True)
    blocks: list[str] = []
    records: list[dict[str, Any]] = []
    for i, h in enumerate(hits, start=1):
        h.rank = i
        fits = None
        for summary in (h.summary, None):  # without its summary when the whole one does not fit
            block = episode_block(h, [], now=request.now, summary=summary, key_moment_surprise=settings.key_moment_surprise)
            if count_tokens(markdown(blocks + [block], "")) <= max_tokens:
                fits = (block, summary is not None)
                break
        if fits is None:
            break
        blocks.append(fits[0])
        records.append(hit_record(h, [], fits[1]))
    text = markdown(blocks, "") if blocks else f"No memories in the last {days:g} days of {conversation_id}."
    if count_tokens(text) > max_tokens:  # a long conversation id echoed back
        text = f"No memories in the last {days:g} days."
    return RecentResult(text, count_tokens(text), records)
