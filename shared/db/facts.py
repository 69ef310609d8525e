"""Repository for semantic memory (migration 0007): ``semantic_fact`` rows and their
history. A fact belongs to the conversation of one tenant whose episode taught it; with a
user, episodes of the user's other conversations may reinforce, update or invalidate it
(their episodes join ``source_episode_ids``; each change is a history row of the
conversation that made it). Nothing is ever deleted but by forgetting: a fact is retired
by setting ``expired_at`` (and, when it stopped being true, ``invalid_at``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from memq.shared.db.lexical import OR_QUERY
from memq.shared.webhooks import events as webhook_events

CATEGORIES = ("identity", "preference", "interest", "personality", "relationship", "experience", "goal", "guideline")

_FACT = (
    "id::text, conversation_id, category, content, valid_at, invalid_at, created_at, expired_at, superseded_by::text, "
    "source_episode_ids::text[], reinforcements, last_reinforced_at"
)


@dataclass(frozen=True)
class Fact:
    id: str
    conversation_id: str
    category: str
    content: str
    valid_at: datetime | None
    invalid_at: datetime | None
    created_at: datetime
    expired_at: datetime | None
    superseded_by: str | None
    source_episode_ids: list[str]
    reinforcements: int
    last_reinforced_at: datetime | None

    @property
    def active(self) -> bool:
        return self.expired_at is None

    def to_json(self) -> dict[str, Any]:
        def iso(t: datetime | None) -> str | None:
            return t.isoformat() if t else None

        return {
            "id": self.id,
            "conversation_id": self.conversation_id,
            "category": self.category,
            "content": self.content,
            "valid_at": iso(self.valid_at),
            "invalid_at": iso(self.invalid_at),
            "created_at": iso(self.created_at),
            "expired_at": iso(self.expired_at),
            "superseded_by": self.superseded_by,
            "source_episode_ids": self.source_episode_ids,
            "reinforcements": self.reinforcements,
            "last_reinforced_at": iso(self.last_reinforced_at),
            "active": self.active,
        }


def _history(
    conn: psycopg.Connection,
    fact_id: str,
    tenant: str,
    conversation_id: str,
    action: str,
    at: datetime,
    run_id: str,
    episode_ids: Sequence[str],
    detail: dict[str, Any],
) -> None:
    conn.execute(
        "INSERT INTO semantic_fact_history "
        "(fact_id, tenant_id, conversation_id, action, at, run_id, episode_ids, detail) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s::uuid[], %s)",
        (fact_id, tenant, conversation_id, action, at, run_id, list(episode_ids), Jsonb(detail)),
    )


def add_fact(
    conn: psycopg.Connection,
    *,
    tenant: str,
    conversation_id: str,
    category: str,
    content: str,
    embedding: np.ndarray,
    valid_at: datetime | None,
    episode_ids: Sequence[str],
    at: datetime,
    run_id: str,
    model: str | None,
    detail: dict[str, Any] | None = None,
) -> str:
    fact_id = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO semantic_fact (id, tenant_id, conversation_id, category, content, embedding, valid_at, "
        "created_at, source_episode_ids, model) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::uuid[], %s)",
        (fact_id, tenant, conversation_id, category, content, embedding, valid_at, at, list(episode_ids), model),
    )
    _history(
        conn,
        fact_id,
        tenant,
        conversation_id,
        "created",
        at,
        run_id,
        episode_ids,
        {"content": content, "category": category, **(detail or {})},
    )
    webhook_events.fact_created(
        conn, tenant, conversation_id, fact_id, category=category, text=content, episode_ids=episode_ids
    )
    return fact_id


def reinforce_fact(
    conn: psycopg.Connection,
    fact_id: str,
    *,
    tenant: str,
    conversation_id: str,
    episode_ids: Sequence[str],
    at: datetime,
    run_id: str,
    detail: dict[str, Any] | None = None,
) -> None:
    conn.execute(
        "UPDATE semantic_fact SET reinforcements = reinforcements + 1, last_reinforced_at = %s, "
        "source_episode_ids = ARRAY(SELECT DISTINCT unnest(source_episode_ids || %s::uuid[])) WHERE id = %s",
        (at, list(episode_ids), fact_id),
    )
    _history(conn, fact_id, tenant, conversation_id, "reinforced", at, run_id, episode_ids, detail or {})
    webhook_events.fact_updated(conn, tenant, conversation_id, fact_id, episode_ids=episode_ids)


def retire_fact(
    conn: psycopg.Connection,
    fact_id: str,
    *,
    tenant: str,
    conversation_id: str,
    invalid_at: datetime | None,
    at: datetime,
    run_id: str,
    episode_ids: Sequence[str],
    superseded_by: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Supersede (with ``superseded_by``) or invalidate a fact: it stops being true at
    ``invalid_at`` (world time) and is retired now (``expired_at``)."""
    conn.execute(
        "UPDATE semantic_fact SET invalid_at = %s, expired_at = %s, superseded_by = %s "
        "WHERE id = %s AND expired_at IS NULL",
        (invalid_at, at, superseded_by, fact_id),
    )
    _history(
        conn,
        fact_id,
        tenant,
        conversation_id,
        "superseded" if superseded_by else "invalidated",
        at,
        run_id,
        episode_ids,
        {**(detail or {}), **({"superseded_by": superseded_by} if superseded_by else {})},
    )
    webhook_events.fact_invalidated(
        conn, tenant, conversation_id, fact_id, superseded_by=superseded_by, invalid_at=invalid_at
    )


def lock_facts(conn: psycopg.Connection, ids: Sequence[str]) -> dict[str, Fact]:
    rows = conn.execute(
        f"SELECT {_FACT} FROM semantic_fact WHERE id = ANY(%s::uuid[]) ORDER BY id FOR UPDATE", (list(ids),)
    ).fetchall()
    return {r[0]: Fact(*r) for r in rows}


def list_facts(
    conn: psycopg.Connection, tenant: str, conversation_id: str, *, include_retired: bool = False, limit: int = 500
) -> list[Fact]:
    sql = f"SELECT {_FACT} FROM semantic_fact WHERE tenant_id = %s AND conversation_id = %s"
    if not include_retired:
        sql += " AND expired_at IS NULL"
    return [Fact(*r) for r in conn.execute(sql + " ORDER BY created_at, id LIMIT %s", (tenant, conversation_id, limit))]


def get_fact(conn: psycopg.Connection, tenant: str, fact_id: str) -> Fact | None:
    row = conn.execute(
        f"SELECT {_FACT} FROM semantic_fact WHERE tenant_id = %s AND id = %s::uuid", (tenant, fact_id)
    ).fetchone()
    return Fact(*row) if row else None


def fact_history(conn: psycopg.Connection, tenant: str, fact_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT action, at, run_id::text, episode_ids::text[], detail FROM semantic_fact_history "
        "WHERE tenant_id = %s AND fact_id = %s::uuid ORDER BY at, id",
        (tenant, fact_id),
    ).fetchall()
    return [{"action": r[0], "at": r[1].isoformat(), "run_id": r[2], "episode_ids": r[3], "detail": r[4]} for r in rows]


def nearest_active(
    conn: psycopg.Connection, tenant: str, conversation_ids: Sequence[str], vector: np.ndarray
) -> tuple[str, float] | None:
    """The active fact of the conversations closest to ``vector``: (id, cosine)."""
    row = conn.execute(
        "SELECT id::text, 1 - (embedding <=> %s) FROM semantic_fact WHERE tenant_id = %s "
        "AND conversation_id = ANY(%s) AND expired_at IS NULL ORDER BY embedding <=> %s LIMIT 1",
        (vector, tenant, list(conversation_ids), vector),
    ).fetchone()
    return (row[0], float(row[1])) if row else None


FACT_CANDIDATES = 50  # facts each leg ranks before fusion


def fact_legs_call(conversations: bool) -> str:
    """The vector and lexical legs over active facts (``memq_fact_legs``, migration 0009):
    (leg, fact id, 1-based rank) rows, ``fact_vector`` and ``fact_lexical``. Needs the CTE
    ``q`` (``lexical.OR_QUERY``) and the parameters ``tenant``, ``conversations`` (when
    ``conversations``; else the whole tenant), ``vector``, ``fact_k`` (candidates per leg)
    and ``fact_min`` (the vector leg keeps facts at least this close, cosine: a nearest fact
    is not a relevant one when few facts exist). Ties at a leg's limit go by id."""
    scope = "%(conversations)s" if conversations else "NULL"
    return f"memq_fact_legs(%(tenant)s, {scope}, (SELECT q FROM q), %(vector)s, %(fact_k)s, %(fact_min)s)"


def fuse_fact_legs(
    rows_per_query: Sequence[Sequence[tuple[str, str, int]]], k: float, limit: int
) -> list[tuple[str, float, dict[str, int]]]:
    """Reciprocal Rank Fusion of the fact legs' rows of one or more queries: (fact id,
    score, ranks) best first, at most ``limit``. A rank is named by its leg (``vector`` /
    ``lexical``), suffixed by the query's number when there are several."""
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for i, rows in enumerate(rows_per_query):
        suffix = "" if len(rows_per_query) == 1 else f"_{i + 1}"
        for leg, fact_id, rank in rows:
            scores[fact_id] = scores.get(fact_id, 0.0) + 1.0 / (k + rank)
            ranks.setdefault(fact_id, {}).setdefault(leg.removeprefix("fact_") + suffix, rank)
    best = sorted(scores, key=lambda f: (-scores[f], f))[:limit]
    return [(f, scores[f], ranks[f]) for f in best]


def facts_by_id(
    conn: psycopg.Connection, fused: Sequence[tuple[str, float, dict[str, int]]]
) -> list[tuple[Fact, float, dict[str, int]]]:
    """The rows of fused facts, in the same order, with their scores (a fact gone since is left out)."""
    if not fused:
        return []
    rows = conn.execute(
        f"SELECT {_FACT} FROM semantic_fact WHERE id = ANY(%s::uuid[])", ([f for f, _, _ in fused],)
    ).fetchall()
    facts = {r[0]: Fact(*r) for r in rows}
    return [(facts[f], score, ranks) for f, score, ranks in fused if f in facts]


def search_facts(
    conn: psycopg.Connection,
    tenant: str,
    conversation_ids: Sequence[str] | None,
    queries: Sequence[tuple[str, np.ndarray]],
    limit: int,
    k: float = 60.0,
    candidates: int = FACT_CANDIDATES,
    min_similarity: float = 0.0,
) -> list[tuple[Fact, float, dict[str, int]]]:
    """Active facts by hybrid search (``fact_legs_call`` per query, fused by RRF): (fact,
    rrf score, ranks), best first. ``conversation_ids`` None: the whole tenant."""
    sql = f"WITH q AS (SELECT {OR_QUERY} AS q) SELECT leg, id, rank FROM {fact_legs_call(conversation_ids is not None)}"
    found = [
        conn.execute(
            sql,
            {
                "tenant": tenant,
                "conversations": list(conversation_ids or []),
                "query": text,
                "vector": vector,
                "fact_k": candidates,
                "fact_min": min_similarity,
            },
        ).fetchall()
        for text, vector in queries
    ]
    return facts_by_id(conn, fuse_fact_legs(found, k, limit))


def unconsolidated(
    conn: psycopg.Connection, tenant: str, conversation_id: str, flashbulb_surprise: float
) -> tuple[int, bool]:
    """(episodes waiting for consolidation, whether one of them is a flashbulb)."""
    row = conn.execute(
        "SELECT count(*), coalesce(bool_or(surprise >= %s), false) FROM episodic_memory "
        "WHERE tenant_id = %s AND conversation_id = %s AND consolidated_at IS NULL",
        (flashbulb_surprise, tenant, conversation_id),
    ).fetchone()
    assert row is not None  # an aggregate always gives a row
    return row[0], row[1]
