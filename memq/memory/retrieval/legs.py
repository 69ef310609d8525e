"""The SQL of retrieval: four ranked legs in one statement (``legs_sql``, the floor a
retrieval is measured against), and the same statement returning, in the one round trip,
the found episodes' rows and the messages that may be shown (``retrieval_sql``). Beyond
one conversation, given a second connection, the legs are shared between the two, each
one statement, and what follows them runs after (``rows_sql``; ``run_legs``).

- ``episode_vector``: HNSW over the summary embeddings (``ORDER BY embedding <=> q LIMIT k``,
  compared at half precision, the index's expression: ``distance_sql``; with
  ``hnsw.iterative_scan`` so a tenant / conversation / time filter cannot starve it);
- ``episode_lexical``: PostgreSQL full text over title and summary, ``ts_rank_cd``;
- ``message_vector`` / ``message_lexical``: the same over every stored message, each
  message voting for its episode at its best rank.

The lexical legs match any of the query's words (an OR of its lexemes, stemmed by the
``english`` configuration); ranking rewards documents that hold several of them close
together. Beyond one conversation both lexical legs rank first the rows holding at least
two of the words (``lexical.PAIRS_QUERY``), and look at rows holding one only when fewer
than k hold two: in a large scope a common word matches tens of thousands of messages,
each of which would be read and ranked; the one-word rows are read only when fewer than
``MEMQ_LEXICAL_PAIRS_ENOUGH`` rows hold two. Every leg is filtered by tenant, by the conversations asked for
and by an explicit time range; beyond one conversation the full-text index itself holds
the tenant (``lexical.indexed_search``), so no other tenant's row is read.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from memq.memory.retrieval.beside import beside
from memq.memory.retrieval.fusion import kept, rrf
from memq.memory.retrieval.model import EpisodeHit
from memq.memory.retrieval.request import RetrievalRequest
from memq.shared.db.facts import fact_legs_call
from memq.shared.db.lexical import OR_QUERY, PAIRS_QUERY, TENANT_QUERY, indexed_search

# A second connection, scoped to the same tenant as the first, to share the legs with
# (``run_legs``): a context manager giving it, or None when none is free at once (then
# the legs run in one statement, on the first).
Spare = Callable[[], AbstractContextManager[psycopg.Connection | None]]

# The order in which two connections take the legs (``beside``): the dearest first, so
# that the last one taken is short. Tenant-wide at 1M messages (the bench's largest
# tenant, 200 questions) the legs' p50 were: message vector 8.8 ms, episode lexical 7.3,
# message lexical 7.8 (both lexical legs vary most: p90 20-22), episode vector 4.3 (5.2
# at its wider ``ef_search``).
_DEAREST_FIRST = ("message_vector", "episode_lexical", "message_lexical", "episode_vector")


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


def _wide(request: RetrievalRequest) -> bool:
    """More than one conversation: read through the full-text index, with the tenant's
    lexeme in it, and the message leg in two tiers. One conversation is read through its
    own index, each of its rows checked and each match ranked (bounded by its size)."""
    return request.conversation_ids is None or len(request.conversation_ids) != 1


def _matches(alias: str, form: str) -> str:
    """In a wide scope, ``alias``'s row holds the query's ``form`` (``OR_QUERY`` or
    ``PAIRS_QUERY``) and the tenant's lexeme, through the full-text index. The function
    calls themselves, not ``q``'s columns: planned for their values (``run_legs``), they are
    evaluated while planning, so the planner weighs the index against the tenant's rows by
    the query's actual words."""
    return f"{indexed_search(alias)} @@ ({form} && {TENANT_QUERY})"


def _searched(request: RetrievalRequest, views: bool) -> tuple[str, str]:
    """What the lexical legs read (episodes, messages): under row-level security, in a wide
    scope, the tenant's rows through the search views (migration 0015: the policy's
    condition in a view, so the query's ``@@`` reaches the full-text index, which it never
    does under a policy: ``@@`` is not leakproof); else the tables."""
    if views and _wide(request):
        return "memq_episode_search", "memq_message_search"
    return "episodic_memory", "episode_message"


# a lexical leg in a wide scope: (CTE of its first tier, which of ``_searched``'s relations,
# alias, time columns (start, end), columns, order of ties)
_TIERED = {
    "episode_lexical": ("el_pairs", 0, "e", ("start_at", "end_at"), "e.id", "e.id"),
    "message_lexical": (
        "ml_pairs",
        1,
        "m",
        ("ts", "ts"),
        "m.episode_id, m.seq, m.conversation_id",
        "m.conversation_id, m.seq",
    ),
}


def _tiers(request: RetrievalRequest, leg: str, views: bool) -> tuple[str, str]:
    """A lexical leg in a wide scope, in two tiers: (the CTE of the rows holding two of the
    query's words, ranked, at most k; the leg's rows: those, then, only when they are
    fewer than ``%(pairs_enough)s`` (``params``) and the query has a second tier, the rows
    holding one of the words)."""
    cte, relation, alias, (start, end), columns, ties = _TIERED[leg]
    table = _searched(request, views)[relation]
    scope = _scope(request, alias, start, end)
    rank = f"ts_rank_cd({alias}.search, q.q, 1)"
    first = f"""{cte} AS (
        SELECT 0 AS tier, {columns}, {rank} AS r FROM {table} {alias}, q
        WHERE {scope} AND {_matches(alias, PAIRS_QUERY)} ORDER BY r DESC, {ties} LIMIT %(k)s)"""
    both = f"""SELECT * FROM {cte} UNION ALL (
        SELECT 1, {columns}, {rank} AS r FROM {table} {alias}, q
        WHERE {scope} AND {_matches(alias, OR_QUERY)} AND NOT {alias}.search @@ q.pairs
            AND (SELECT count(*) FROM {cte}) < %(pairs_enough)s AND (SELECT pairs <> q FROM q)
        ORDER BY r DESC, {ties} LIMIT %(k)s)"""
    return first, both


def _ctes(request: RetrievalRequest, legs: tuple[str, ...], views: bool = False) -> str:
    """``q``, the query's lexical forms (``lexical.py``): any of its words, and in a wide
    scope any two of them; in a wide scope, each lexical leg's first tier (``_tiers``)."""
    if not _wide(request):
        return f"WITH q AS (SELECT {OR_QUERY} AS q)"
    ctes = [f"q AS (SELECT {OR_QUERY} AS q, {PAIRS_QUERY} AS pairs)"]
    ctes += [_tiers(request, leg, views)[0] for leg in legs if leg in _TIERED]
    return "WITH " + ", ".join(ctes)


def params(
    request: RetrievalRequest,
    vector: np.ndarray,
    candidates: int,
    query_text: str | None = None,
    reach: int | None = None,
    pairs_enough: int | None = None,
) -> dict[str, Any]:
    """``query_text``: what the lexical legs search by (the query without the participants
    it names, ``participants.py``); the request's query when not given. ``reach``: the
    messages ``retrieval_sql`` returns are those ranked within it by a message leg (and
    their neighbours). ``pairs_enough``: beyond one conversation, the lexical legs read rows
    holding one of the query's words only when fewer than this many hold two
    (``MEMQ_LEXICAL_PAIRS_ENOUGH``; at most ``candidates``, which it is when not given)."""
    return {
        "pairs_enough": candidates if pairs_enough is None else min(candidates, pairs_enough),
        "reach": candidates if reach is None else reach,
        "tenant": request.tenant,
        "conversations": list(request.conversation_ids or []),
        "time_start": request.time_range.start if request.time_range else None,
        "time_end": request.time_range.end if request.time_range else None,
        "query": request.query if query_text is None else query_text,
        "vector": vector,
        "k": candidates,
    }


def distance_sql(request: RetrievalRequest, alias: str) -> str:
    """The cosine distance a vector leg orders by: between half-precision copies of the
    row's and the query's vectors, the expression the HNSW index is built on (migration
    0018), or with ``request.half_dim`` None between the stored vectors (no index)."""
    dim = request.half_dim
    if dim is None:
        return f"{alias}.embedding <=> %(vector)s"
    return f"{alias}.embedding::halfvec({int(dim)}) <=> %(vector)s::halfvec({int(dim)})"


def _ranked_union(request: RetrievalRequest, legs: tuple[str, ...], id_type: str = "text", views: bool = False) -> str:
    """One statement: (leg, episode id, message seq or NULL, rank, the message's
    conversation or NULL) for every requested leg. Message legs return each message they
    rank, so the ranks serve twice: an episode's rank in the leg is that of its best
    message, and each message's rank orders the messages shown. ``id_type``: ``text``
    for the caller, ``uuid`` to join on (casting text back to uuid costs more than the
    join). ``views``: the connection is under row-level security (``_searched``)."""
    cast = "::text" if id_type == "text" else ""
    e_scope = _scope(request, "e", "start_at", "end_at")
    m_scope = _scope(request, "m", "ts", "ts")
    parts = {
        "episode_vector": f"""
            SELECT 'episode_vector' AS leg, id{cast} AS id, NULL::bigint AS seq,
                   row_number() OVER (ORDER BY d, id) AS rank, NULL::text AS conv FROM (
                SELECT e.id, {distance_sql(request, "e")} AS d FROM episodic_memory e
                WHERE {e_scope} ORDER BY d, e.id LIMIT %(k)s) v""",
        "episode_lexical": f"""
            SELECT 'episode_lexical' AS leg, id{cast} AS id, NULL::bigint AS seq,
                   row_number() OVER (ORDER BY r DESC, id) AS rank, NULL::text AS conv FROM (
                SELECT e.id, ts_rank_cd(e.search, q.q, 1) AS r FROM episodic_memory e, q
                WHERE {e_scope} AND e.search @@ q.q ORDER BY r DESC, e.id LIMIT %(k)s) l""",
        "message_vector": f"""
            SELECT 'message_vector' AS leg, episode_id{cast} AS id, seq,
                   row_number() OVER (ORDER BY d, conversation_id, seq) AS rank, conversation_id AS conv FROM (
                SELECT m.episode_id, m.seq, m.conversation_id, {distance_sql(request, "m")} AS d FROM episode_message m
                WHERE {m_scope} AND m.embedding IS NOT NULL ORDER BY d, m.conversation_id, m.seq LIMIT %(k)s) mv""",
        "message_lexical": f"""
            SELECT 'message_lexical' AS leg, episode_id{cast} AS id, seq,
                   row_number() OVER (ORDER BY r DESC, conversation_id, seq) AS rank, conversation_id AS conv FROM (
                SELECT m.episode_id, m.seq, m.conversation_id, ts_rank_cd(m.search, q.q, 1) AS r
                FROM episode_message m, q
                WHERE {m_scope} AND m.search @@ q.q ORDER BY r DESC, m.conversation_id, m.seq LIMIT %(k)s) ml""",
    }
    if _wide(request):
        parts["episode_lexical"] = f"""
            SELECT 'episode_lexical' AS leg, id{cast} AS id, NULL::bigint AS seq,
                   row_number() OVER (ORDER BY tier, r DESC, id) AS rank, NULL::text AS conv
            FROM ({_tiers(request, "episode_lexical", views)[1]}) l ORDER BY tier, r DESC, id LIMIT %(k)s"""
        parts["message_lexical"] = f"""
            SELECT 'message_lexical' AS leg, episode_id{cast} AS id, seq,
                   row_number() OVER (ORDER BY tier, r DESC, conversation_id, seq) AS rank, conversation_id AS conv
            FROM ({_tiers(request, "message_lexical", views)[1]}) ml
            ORDER BY tier, r DESC, conversation_id, seq LIMIT %(k)s"""
    return " UNION ALL ".join(f"({parts[leg]})" for leg in legs)


def legs_sql(request: RetrievalRequest, legs: tuple[str, ...], views: bool = False) -> str:
    """The legs alone: (leg, episode id, seq or NULL, rank, conversation or NULL) rows."""
    return f"{_ctes(request, legs, views)} {_ranked_union(request, legs, views=views)}"


# the nine typed columns after (kind, id, seq, rank, conv) of a leg's row, empty
_NULLS = (
    "NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::timestamptz, NULL::float8, NULL::int, NULL::float8, "
    "NULL::timestamptz"
)


def retrieval_sql(request: RetrievalRequest, legs: tuple[str, ...], views: bool = False) -> str:
    """``legs_sql`` and, in the same statement (one round trip), what retrieval reads next.
    Rows of three kinds share 14 columns, so that each row stays narrow:

    - a leg's rows: (leg, episode id, message seq, rank, -);
    - ``episode``: (kind, id, first_seq, last_seq, conversation_id, title, summary,
      summary_source, start_at, end_at, surprise, message_count, stability, last_review);
    - ``message``: (kind, episode id, seq, -, -, role, speaker, content, ts);
    - with ``facts`` (a parameter), when the scope holds an active fact: the fact legs'
      rows (``fact_vector`` / ``fact_lexical``, fact id, -, rank).

    ``episode`` rows: of every episode a leg found that retrieval can return (the CTE
    ``kept``, ``_KEPT``). ``message`` rows: every message a message leg ranked within
    ``reach`` of a kept episode, and the one before and after it in its episode: the
    messages that may be shown. Both are looked up key by key (``_EPISODE_ROWS``,
    ``_SHOWN_MESSAGES``), so no plan, custom or generic, can read a whole tenant's rows
    to find them."""
    return (
        f"{_ctes(request, legs, views)}, ranked AS ({_ranked_union(request, legs, 'uuid', views)}), kept AS {_KEPT} "
        f"SELECT leg, id::text, seq, rank, NULL, {_NULLS} FROM ranked UNION ALL {_after_legs(request)}"
    )


def rows_sql(request: RetrievalRequest) -> str:
    """What ``retrieval_sql`` returns after the legs' rows, for legs already run (the
    split of ``run_legs``): the ``episode``, ``message`` and fact rows, the kept episodes
    and the message legs' rows within reach of them given as texts (``_given_kept``)."""
    return (
        f"WITH q AS (SELECT {OR_QUERY} AS q), ranked AS ({_GIVEN_RANKED}), kept AS ({_GIVEN_KEPT}) "
        f"{_after_legs(request)}"
    )


def _after_legs(request: RetrievalRequest) -> str:
    return (
        f"{_EPISODE_ROWS} UNION ALL {_SHOWN_MESSAGES} "
        f"UNION ALL SELECT f.leg, f.id, NULL::bigint, f.rank, NULL::text, {_NULLS} "
        f"FROM {fact_legs_call(request.conversation_ids is not None)} f WHERE %(facts)s"
    )


# the message legs' rows (leg, episode id, seq, rank) within reach of the kept episodes,
# of legs run apart, handed back as one text, a line per row (``_given_kept``); what
# follows the legs does not read their conversation
_GIVEN_RANKED = (
    "SELECT split_part(r, ' ', 1) AS leg, split_part(r, ' ', 2)::uuid AS id, "
    "NULLIF(split_part(r, ' ', 3), '')::bigint AS seq, split_part(r, ' ', 4)::bigint AS rank "
    "FROM string_to_table(%(ranked)s::text, E'\\n') AS r"
)


_GIVEN_KEPT = "SELECT id::uuid FROM string_to_table(%(kept)s::text, E'\\n') AS id"


def _given_kept(found: LegResults, rows: list[tuple[Any, ...]], args: dict[str, Any]) -> dict[str, str]:
    """For ``rows_sql``, from the legs' rows (``found`` read from them): the episodes
    retrieval can return (``fusion.kept``, the rule of ``_KEPT``, here in Python: the
    statement reads ten or so ids instead of fusing the legs' few hundred rows, about a
    millisecond at a million messages) and the message legs' rows within ``reach`` of
    them, as the parameters of ``_GIVEN_KEPT`` and ``_GIVEN_RANKED``: "leg id seq rank"
    lines. Texts, not arrays: psycopg takes ~0.1-0.4 ms to send each array of a few
    hundred values, a text ~0.05 (legs, episode ids and ranks hold no space or newline)."""
    ids = kept(rrf(found.episodes, args["rrf_k"]), args["fused"], args["returned"], args["keep"])
    chosen = set(ids)
    near = [row for row in rows if row[2] is not None and row[3] <= args["reach"] and row[1] in chosen]
    return {
        "kept": "\n".join(ids),
        "ranked": "\n".join(f"{leg} {eid} {seq} {rank}" for leg, eid, seq, rank, _ in near),
    }


def fsrs_state(table: str = "e") -> str:
    """An episode's FSRS state as retrieval reads it: its stability and last review, two
    values out of its card (``table``: the alias of ``episodic_memory``, or "" for none)."""
    card = f"{table}.fsrs_card" if table else "fsrs_card"
    return f"({card}->>'stability')::double precision, ({card}->>'last_review')::timestamptz"


# The found episodes retrieval can return (the CTE ``kept``), by
# Reciprocal Rank Fusion (``fusion.rrf`` on the same ranks, ``%(rrf_k)s``): the best
# ``%(fused)s`` (and any tied with the last), and of those only the ones whose score, times
# the most re-ranking can give, reaches the ``%(returned)s``-th best score times the least
# it can give (``%(keep)s``: ``service.rerank_reach``). The others cannot be among the
# ``%(returned)s`` returned, so neither their rows nor their messages are read.
_KEPT = (
    "(WITH s AS (SELECT id, sum(1.0 / (%(rrf_k)s + erank)) AS score FROM ("
    "SELECT id, row_number() OVER (PARTITION BY leg ORDER BY min(rank)) AS erank FROM ranked GROUP BY leg, id"
    ") per_leg GROUP BY id) SELECT id FROM s WHERE score >= "
    "(SELECT min(score) FROM (SELECT score FROM s ORDER BY score DESC LIMIT %(fused)s) t) - 1e-12 AND score >= "
    "(SELECT min(score) FROM (SELECT score FROM s ORDER BY score DESC LIMIT %(returned)s) t) * %(keep)s - 1e-12)"
)


# A lookup by a table's unique key, one probe per key: a LATERAL subquery with a LIMIT is
# never turned into a join, so a plan cannot trade the probes for a scan of the tenant's
# rows (a generic plan, which assumes an average tenant, did: migration 0011's functions
# read every message of a 4,000-message tenant to return 150).
# ``episode`` rows: of the found episodes retrieval can return (the CTE ``kept``)
_EPISODE_ROWS = (
    "SELECT 'episode', e.id::text, e.first_seq, e.last_seq, e.conversation_id, e.title, e.summary, "
    f"e.summary_source, e.start_at, e.end_at, e.surprise, e.message_count, {fsrs_state()} "
    "FROM kept found, LATERAL (SELECT * FROM episodic_memory e "
    "WHERE e.id = found.id AND e.tenant_id = %(tenant)s LIMIT 1) e"
)


# Each message a message leg ranked within reach and the ones just before and after it,
# once, of the episodes that can be returned (the CTE ``kept``)
_SHOWN_MESSAGES = (
    "SELECT 'message', m.episode_id::text, m.seq, NULL::bigint, NULL::text, m.role, m.speaker, m.content, m.ts, "
    "NULL::timestamptz, NULL::double precision, NULL::integer, NULL::double precision, NULL::timestamptz "
    "FROM (SELECT DISTINCT r.id AS episode_id, r.seq + n.d AS seq FROM ranked r, "
    "(VALUES (-1::bigint), (0), (1)) n(d) "
    "WHERE r.seq IS NOT NULL AND r.rank <= %(reach)s AND r.id IN (SELECT id FROM kept)) near, "
    "LATERAL (SELECT * FROM episode_message m "
    "WHERE m.episode_id = near.episode_id AND m.seq = near.seq AND m.tenant_id = %(tenant)s LIMIT 1) m"
)


def word_counts_sql(request: RetrievalRequest) -> str:
    """Each of ``%(words)s`` (in order) with each of its lexemes (``english``, as the lexical
    legs stem them) and how many of the scope's messages hold it, and the scope's message
    count (its conversations' ``message_count``). Counted in one pass over the scope's
    messages, and only when it holds at most ``%(most)s`` (else NULL: the count would cost
    a read of a large scope, whose lexical legs' cost the two tiers bound instead)."""
    scope = _scope(request, "m", "ts", "ts")
    chosen = "" if request.conversation_ids is None else " AND c.conversation_id = ANY(%(conversations)s)"
    return f"""WITH n AS (SELECT coalesce(sum(c.message_count), 0)::bigint AS n FROM conversation c
            WHERE c.tenant_id = %(tenant)s{chosen}),
        w AS (SELECT w.ord, w.w, d.l FROM unnest(%(words)s::text[]) WITH ORDINALITY AS w(w, ord)
            LEFT JOIN LATERAL unnest(tsvector_to_array(to_tsvector('english', w.w))) AS d(l) ON true),
        df AS (SELECT l.l, count(m.search) AS df
            FROM (SELECT DISTINCT l FROM w WHERE l IS NOT NULL AND (SELECT n FROM n) <= %(most)s) l
            LEFT JOIN episode_message m ON {scope} AND m.search @@ quote_literal(l.l)::tsquery GROUP BY l.l)
        SELECT w.ord, w.w, w.l, df.df, (SELECT n FROM n) FROM w LEFT JOIN df ON df.l = w.l ORDER BY w.ord"""


def word_counts(
    conn: psycopg.Connection, request: RetrievalRequest, words: list[str], most: int
) -> tuple[list[tuple[str, tuple[str, ...], tuple[int, ...] | None]], int]:
    """(each word with its lexemes and how many of the request's scope's messages hold each,
    None when the scope holds more than ``most`` messages; the scope's message count)."""
    args = {**params(request, np.zeros(1, dtype=np.float32), 0), "words": words, "most": most}
    rows = conn.execute(word_counts_sql(request), args).fetchall()
    lexemes: dict[int, tuple[str, list[str], list[int | None]]] = {}
    for ord_, word, lexeme, count, _ in rows:
        entry = lexemes.setdefault(int(ord_), (word, [], []))
        if lexeme is not None:
            entry[1].append(str(lexeme))
            entry[2].append(None if count is None else int(count))
    out: list[tuple[str, tuple[str, ...], tuple[int, ...] | None]] = []
    for i in sorted(lexemes):
        word, ls, counts = lexemes[i]
        known = None if any(c is None for c in counts) else tuple(int(c) for c in counts if c is not None)
        out.append((word, tuple(ls), known))
    return out, int(rows[0][4]) if rows else 0


def set_search_options(conn: psycopg.Connection, ef_search: int, plan_cache_mode: str = "auto") -> bool:
    """Inside a transaction: HNSW search breadth, iterative scans so that filtered
    searches still return k rows (pgvector >= 0.8), and how the statement is planned
    (``MEMQ_RETRIEVAL_PLAN_CACHE_MODE``). Returns whether row-level security applies to
    the connection (the ``views`` of ``legs_sql``), in the same round trip."""
    row = conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true), "
        "set_config('plan_cache_mode', %s, true), row_security_active('episode_message')",
        (str(int(ef_search)), plan_cache_mode),
    ).fetchone()
    return bool(row and row[3])


@dataclass
class LegResults:
    episodes: dict[str, list[str]]  # leg -> episode ids, best first
    messages: dict[str, dict[int, dict[str, int]]]  # episode id -> seq -> "vector" / "lexical" -> 1-based rank
    hits: dict[str, EpisodeHit] = field(default_factory=dict)  # episode id -> its row, unscored (``full``)
    shown: dict[str, list[tuple[Any, ...]]] = field(
        default_factory=dict
    )  # episode id -> (seq, role, speaker, content, ts) (``full``)
    facts: list[tuple[str, str, int]] = field(default_factory=list)  # (fact leg, fact id, rank) (``full`` with facts)
    split: bool = False  # the vector and lexical legs ran at once, on two connections (``run_legs``)


def run_legs(
    conn: psycopg.Connection,
    request: RetrievalRequest,
    vector: np.ndarray,
    legs: tuple[str, ...],
    candidates: int,
    ef_search: int,
    *,
    query_text: str | None = None,
    full: bool = False,
    reach: int | None = None,
    facts: tuple[int, float] | None = None,
    fuse: tuple[float, int] | None = None,
    plan_cache_mode: str = "auto",
    pairs_enough: int | None = None,
    returned: tuple[int, float] | None = None,
    spare: Spare | None = None,
    episode_ef_search: int | None = None,
) -> LegResults:
    """The legs (``legs_sql``); with ``full`` the whole of ``retrieval_sql``, with the fact
    legs when ``facts`` gives (candidates per fact leg, minimum cosine similarity), the rows
    of the episodes retrieval will score when ``fuse`` gives (RRF k, how many), of those
    it can return only when ``returned`` gives (how many it returns, the least over the
    most that re-ranking multiplies a score by: ``_KEPT``). A wide
    scope is always planned for its values (``_matches``; a tenant's size is what its plan
    turns on): ``plan_cache_mode`` applies to one conversation. ``pairs_enough``: see
    ``params``. ``ef_search``: the HNSW search breadth of a statement holding the message
    vector leg; ``episode_ef_search`` (default the same) of one holding the episode
    vector leg without it (``_breadth``). ``spare``: beyond one conversation, the legs
    are shared between ``conn`` and the connection it gives, each leg one statement at its
    own breadth, each connection taking the next leg when free (``beside``), then, with
    ``full``, what follows them (``rows_sql``) runs on ``conn``: the same rows as one
    statement, in about half the time when a core is free (``LegResults.split``)."""
    rows_plan = plan_cache_mode  # what follows legs already run (``rows_sql``) does not turn on the words
    if _wide(request):
        plan_cache_mode = "force_custom_plan"
    args = params(request, vector, candidates, query_text, reach, pairs_enough)
    args["facts"] = facts is not None
    args["fact_k"], args["fact_min"] = facts if facts is not None else (0, 1.0)
    args["rrf_k"], args["fused"] = fuse if fuse is not None else (60.0, 1_000_000)
    args["returned"], args["keep"] = returned if returned is not None else (1, 0.0)
    episode_ef = ef_search if episode_ef_search is None else episode_ef_search
    if spare is not None and _wide(request) and len(legs) > 1:
        with spare() as other:
            if other is not None:
                per_leg = beside(
                    [
                        _leg_job(request, leg, args, _breadth((leg,), ef_search, episode_ef), plan_cache_mode)
                        for leg in sorted(legs, key=_dearness)
                    ],
                    conn,
                    other,
                )
                legs_rows = [row for rows in per_leg for row in rows]
                found = read_rows(legs_rows, legs)
                if full:
                    args.update(_given_kept(found, legs_rows, args))
                    after = read_rows(_execute(conn, args, ef_search, rows_plan, lambda _: rows_sql(request)), legs)
                    found.hits, found.shown, found.facts = after.hits, after.shown, after.facts
                found.split = True
                return found
    statement = retrieval_sql if full else legs_sql
    breadth = _breadth(legs, ef_search, episode_ef)
    rows = _execute(conn, args, breadth, plan_cache_mode, lambda views: statement(request, legs, views))
    return read_rows(rows, legs)


def _breadth(legs: tuple[str, ...], ef_search: int, episode_ef_search: int) -> int:
    """A statement's ``hnsw.ef_search`` (one per statement): the message vector leg's
    when it holds it, else the episode vector leg's."""
    return ef_search if "message_vector" in legs or "episode_vector" not in legs else episode_ef_search


def _dearness(leg: str) -> int:
    return _DEAREST_FIRST.index(leg) if leg in _DEAREST_FIRST else len(_DEAREST_FIRST)


def _leg_job(
    request: RetrievalRequest, leg: str, args: dict[str, Any], ef_search: int, plan_cache_mode: str
) -> Callable[[psycopg.Connection], list[tuple[Any, ...]]]:
    """One leg as a statement of its own, to run on whichever connection is free."""
    return lambda conn: _execute(conn, args, ef_search, plan_cache_mode, lambda views: legs_sql(request, (leg,), views))


def _execute(
    conn: psycopg.Connection,
    args: dict[str, Any],
    ef_search: int,
    plan_cache_mode: str,
    sql: Callable[[bool], str],
) -> list[tuple[Any, ...]]:
    """One statement of ``run_legs`` in its transaction, with the search options; ``sql``
    makes it from whether the connection reads through the search views."""
    with conn.transaction():
        views = set_search_options(conn, ef_search, plan_cache_mode)
        return conn.execute(sql(views), args, binary=True).fetchall()  # binary: no timestamps formatted as text


def read_rows(rows: list[tuple[Any, ...]], legs: tuple[str, ...]) -> LegResults:
    """What the rows of ``legs_sql`` or ``retrieval_sql`` say (see it for the columns)."""
    ranked: dict[str, list[tuple[int, str]]] = {leg: [] for leg in legs}
    names = {leg: leg.removeprefix("message_") for leg in legs}
    messages: dict[str, dict[int, dict[str, int]]] = {}
    hits: dict[str, EpisodeHit] = {}
    shown: dict[str, list[tuple[Any, ...]]] = {}
    fact_rows: list[tuple[str, str, int]] = []
    for row in rows:
        kind = row[0]
        in_leg = ranked.get(kind)
        if in_leg is not None:  # a leg's row: (leg, episode id, seq or None, rank, ...)
            episode_id, seq, rank = row[1], row[2], row[3]
            in_leg.append((rank, episode_id))
            if seq is not None:
                per_seq = messages.get(episode_id)
                if per_seq is None:
                    per_seq = messages[episode_id] = {}
                legs_ranks = per_seq.get(seq)
                if legs_ranks is None:
                    per_seq[seq] = {names[kind]: rank}
                else:
                    legs_ranks[names[kind]] = rank
        elif kind == "message":  # seq, role, speaker, content, ts
            found_messages = shown.get(row[1])
            if found_messages is None:
                found_messages = shown[row[1]] = []
            found_messages.append((row[2], row[5], row[6], row[7], row[8]))
        elif kind == "episode":
            (
                _,
                episode_id,
                first_seq,
                last_seq,
                conv,
                title,
                summary,
                source,
                start,
                end,
                surprise,
                count,
                stability,
                last_review,
            ) = row
            hits[episode_id] = EpisodeHit(
                episode_id,
                conv,
                title,
                summary,
                start,
                end,
                surprise,
                count,
                first_seq,
                last_seq,
                source,
                stability,
                last_review,
            )
        else:  # a fact leg's row
            fact_rows.append((kind, row[1], row[3]))
    for found_messages in shown.values():
        found_messages.sort()
    # an episode's rank in a message leg: the order of first appearance of its messages
    episodes = {leg: list(dict.fromkeys(eid for _, eid in sorted(rows_))) for leg, rows_ in ranked.items()}
    return LegResults(episodes, messages, hits, shown, fact_rows)


def participants(conn: psycopg.Connection, request: RetrievalRequest, limit: int = 1000) -> list[str]:
    """Names of the participants of the conversations in scope (``conversation_participant``)."""
    if request.conversation_ids is None:
        sql = "SELECT DISTINCT name FROM conversation_participant WHERE tenant_id = %s LIMIT %s"
        args: tuple[Any, ...] = (request.tenant, limit)
    else:
        sql = (
            "SELECT DISTINCT name FROM conversation_participant WHERE tenant_id = %s AND conversation_id = ANY(%s) "
            "LIMIT %s"
        )
        args = (request.tenant, list(request.conversation_ids), limit)
    return [r[0] for r in conn.execute(sql, args)]


def recent_candidates(
    conn: psycopg.Connection, tenant: str, conversation_id: str | list[str], since: datetime, limit: int
) -> list[EpisodeHit]:
    """The conversation's (or conversations') latest episodes that ended since ``since``,
    newest first, read as retrieval reads them."""
    match = "= %s" if isinstance(conversation_id, str) else "= ANY(%s)"  # one: the plan as before
    rows = conn.execute(
        "SELECT e.id::text, e.conversation_id, e.title, e.summary, e.start_at, e.end_at, e.surprise, e.message_count, "
        f"e.first_seq, e.last_seq, e.summary_source, {fsrs_state()} FROM episodic_memory e "
        f"WHERE e.tenant_id = %s AND e.conversation_id {match} AND e.end_at >= %s ORDER BY e.end_at DESC LIMIT %s",
        (tenant, conversation_id, since, limit),
    ).fetchall()
    return [EpisodeHit(*r) for r in rows]


def fetch_messages(conn: psycopg.Connection, episode_ids: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    """Every message of the given episodes: episode id -> (seq, role, speaker, content, ts) in seq order."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for row in conn.execute(
        "SELECT episode_id::text, seq, role, speaker, content, ts FROM episode_message "
        "WHERE episode_id = ANY(%s::uuid[]) ORDER BY episode_id, seq",
        (episode_ids,),
    ):
        out.setdefault(row[0], []).append(row[1:])
    return out
