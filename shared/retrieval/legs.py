"""The SQL of retrieval: four ranked legs in one statement, then the messages of the
episodes that made the cut.

- ``episode_vector``: HNSW over the summary embeddings (``ORDER BY embedding <=> q LIMIT k``,
  with ``hnsw.iterative_scan`` so a tenant / conversation / time filter cannot starve it);
- ``episode_lexical``: PostgreSQL full text over title and summary, ``ts_rank_cd``;
- ``message_vector`` / ``message_lexical``: the same over every stored message, each
  message voting for its episode at its best rank.

The lexical legs match any of the query's words (an OR of its lexemes, stemmed by the
``english`` configuration); ranking rewards documents that hold several of them close
together. Every leg is filtered by tenant, by the conversations asked for and by an
explicit time range, inside the index scan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from shared.retrieval.model import EpisodeFields
from shared.retrieval.request import RetrievalRequest

OR_QUERY = (
    "to_tsquery('simple', array_to_string(ARRAY(SELECT quote_literal(l) FROM "
    "unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS l), ' | '))"
)


@dataclass
class Candidate(EpisodeFields):
    """An episode a leg found, before re-ranking."""

    fsrs_card: dict[str, Any]
    ranks: dict[str, int] = field(default_factory=dict)


def _scope(request: RetrievalRequest, alias: str, time_column_start: str, time_column_end: str) -> str:
    where = [f"{alias}.tenant_id = %(tenant)s"]
    if request.conversation_ids is not None:
        where.append(f"{alias}.conversation_id = ANY(%(conversations)s)")
    if request.time_range is not None:
        if request.time_range.start is not None:
            where.append(f"{alias}.{time_column_end} >= %(time_start)s")
        if request.time_range.end is not None:
            where.append(f"{alias}.{time_column_start} < %(time_end)s")
    return " AND ".join(where)


def params(request: RetrievalRequest, vector: np.ndarray, candidates: int) -> dict[str, Any]:
    return {
        "tenant": request.tenant,
        "conversations": list(request.conversation_ids or []),
        "time_start": request.time_range.start if request.time_range else None,
        "time_end": request.time_range.end if request.time_range else None,
        "query": request.query,
        "vector": vector,
        "k": candidates,
    }


def legs_sql(request: RetrievalRequest, legs: tuple[str, ...]) -> str:
    """One statement: (leg, episode id, message seq or NULL, rank) for every requested
    leg. Message legs return each message they rank, so the ranks serve twice: an
    episode's rank in the leg is that of its best message, and each message's rank
    orders the messages shown."""
    e_scope = _scope(request, "e", "start_at", "end_at")
    m_scope = _scope(request, "m", "ts", "ts")
    parts = {
        "episode_vector": f"""
            SELECT 'episode_vector' AS leg, id::text, NULL::bigint AS seq, row_number() OVER (ORDER BY d, id) AS rank FROM (
                SELECT e.id, e.embedding <=> %(vector)s AS d FROM episodic_memory e
                WHERE {e_scope} ORDER BY d LIMIT %(k)s) v""",
        "episode_lexical": f"""
            SELECT 'episode_lexical', id::text, NULL::bigint, row_number() OVER (ORDER BY r DESC, id) FROM (
                SELECT e.id, ts_rank_cd(e.search, q.q, 1) AS r FROM episodic_memory e, q
                WHERE {e_scope} AND e.search @@ q.q ORDER BY r DESC LIMIT %(k)s) l""",
        "message_vector": f"""
            SELECT 'message_vector', episode_id::text, seq, row_number() OVER (ORDER BY d, seq) FROM (
                SELECT m.episode_id, m.seq, m.embedding <=> %(vector)s AS d FROM episode_message m
                WHERE {m_scope} AND m.embedding IS NOT NULL ORDER BY d LIMIT %(k)s) mv""",
        "message_lexical": f"""
            SELECT 'message_lexical', episode_id::text, seq, row_number() OVER (ORDER BY r DESC, seq) FROM (
                SELECT m.episode_id, m.seq, ts_rank_cd(m.search, q.q, 1) AS r FROM episode_message m, q
                WHERE {m_scope} AND m.search @@ q.q ORDER BY r DESC LIMIT %(k)s) ml""",
    }
    union = " UNION ALL ".join(f"({parts[leg]})" for leg in legs)
    return f"WITH q AS (SELECT {OR_QUERY} AS q) {union}"


def set_search_options(conn: psycopg.Connection, ef_search: int) -> None:
    """Inside a transaction: HNSW search breadth, and iterative scans so that filtered
    searches still return k rows (pgvector >= 0.8)."""
    conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
    conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")


@dataclass
class LegResults:
    episodes: dict[str, list[str]]  # leg -> episode ids, best first
    messages: dict[str, dict[tuple[str, int], int]]  # message leg -> (episode id, seq) -> 1-based rank


def run_legs(conn: psycopg.Connection, request: RetrievalRequest, vector: np.ndarray, legs: tuple[str, ...],
             candidates: int, ef_search: int) -> LegResults:
    ranked: dict[str, list[tuple[int, str]]] = {leg: [] for leg in legs}
    messages: dict[str, dict[tuple[str, int], int]] = {leg: {} for leg in legs if leg.startswith("message_")}
    with conn.transaction():
        set_search_options(conn, ef_search)
        for leg, episode_id, seq, rank in conn.execute(legs_sql(request, legs), params(request, vector, candidates)):
            ranked[leg].append((rank, episode_id))
            if seq is not None:
                messages[leg][(episode_id, seq)] = rank
    # an episode's rank in a message leg: the order of first appearance of its messages
    episodes = {leg: list(dict.fromkeys(eid for _, eid in sorted(rows))) for leg, rows in ranked.items()}
    return LegResults(episodes, messages)


_CANDIDATE = "id::text, conversation_id, title, summary, start_at, end_at, surprise, message_count, summary_source, fsrs_card"


def fetch_candidates(conn: psycopg.Connection, ids: list[str]) -> dict[str, Candidate]:
    rows = conn.execute(f"SELECT {_CANDIDATE} FROM episodic_memory WHERE id = ANY(%s::uuid[])", (ids,)).fetchall()
    return {r[0]: Candidate(*r) for r in rows}


def recent_candidates(conn: psycopg.Connection, tenant: str, conversation_id: str, since: datetime, limit: int) -> list[Candidate]:
    rows = conn.execute(
        f"SELECT {_CANDIDATE} FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s AND end_at >= %s "
        "ORDER BY end_at DESC LIMIT %s",
        (tenant, conversation_id, since, limit),
    ).fetchall()
    return [Candidate(*r) for r in rows]


def fetch_messages(conn: psycopg.Connection, episode_ids: list[str]) -> list[tuple]:
    """Every message of the given episodes: (episode id, seq, role, speaker, content, ts)."""
    return conn.execute(
        "SELECT episode_id::text, seq, role, speaker, content, ts FROM episode_message "
        "WHERE episode_id = ANY(%s::uuid[]) ORDER BY episode_id, seq",
        (episode_ids,),
    ).fetchall()
