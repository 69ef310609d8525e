"""The baselines' memory units and their search: single turns, fixed 8-turn windows and
whole sessions, each embedded with the same model as memq and ranked by the same hybrid
search (an HNSW-free exact vector leg on a temporary table is the same ranking at this
size; the lexical leg is PostgreSQL full text with the same OR-query and ``ts_rank_cd``),
fused by the same RRF. Returned text is filled in rank order within the budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import psycopg

from memq.evaluation.locomo.data import LocomoConversation, Turn
from shared.retrieval.fusion import rrf
from shared.retrieval.legs import OR_QUERY

UNIT_KINDS = ("turn", "window8", "session")


@dataclass(frozen=True)
class Unit:
    kind: str
    conversation: str
    turns: tuple[Turn, ...]

    @property
    def text(self) -> str:
        head = f"[{self.turns[0].at:%d %B %Y %H:%M}]"
        return "\n".join([head] + [f"- {t.speaker}: {t.text}" for t in self.turns])


def make_units(conv: LocomoConversation, kind: str, window: int = 8) -> list[Unit]:
    if kind == "turn":
        return [Unit(kind, conv.sample_id, (t,)) for t in conv.turns]
    by_session: dict[int, list[Turn]] = {}
    for t in conv.turns:
        by_session.setdefault(t.session, []).append(t)
    if kind == "session":
        return [Unit(kind, conv.sample_id, tuple(ts)) for ts in by_session.values()]
    if kind == "window8":
        return [Unit(kind, conv.sample_id, tuple(ts[i:i + window])) for ts in by_session.values() for i in range(0, len(ts), window)]
    raise ValueError(kind)


class UnitIndex:
    """Units in a temporary table of the evaluation's connection."""

    def __init__(self, conn: psycopg.Connection, dim: int):
        self.conn = conn
        self.units: list[Unit] = []
        conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS eval_unit (id int PRIMARY KEY, kind text, conversation text, body text, "
            f"embedding vector({dim}), search tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED)"
        )
        conn.execute("TRUNCATE eval_unit")

    def add(self, units: Sequence[Unit], vectors: np.ndarray) -> None:
        base = len(self.units)
        self.units.extend(units)
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO eval_unit (id, kind, conversation, body, embedding) VALUES (%s, %s, %s, %s, %s)",
                [(base + i, u.kind, u.conversation, u.text, vectors[i]) for i, u in enumerate(units)],
            )
        self.conn.execute("ANALYZE eval_unit")

    def search(self, kind: str, conversation: str, query: str, vector: np.ndarray, candidates: int, k: float) -> list[Unit]:
        rows = self.conn.execute(
            f"""WITH q AS (SELECT {OR_QUERY} AS q)
            (SELECT 'vector', id FROM eval_unit WHERE kind = %(kind)s AND conversation = %(conv)s
               ORDER BY embedding <=> %(vector)s, id LIMIT %(k)s)
            UNION ALL
            (SELECT 'lexical', id FROM (SELECT id, ts_rank_cd(search, q.q, 1) AS r FROM eval_unit, q
               WHERE kind = %(kind)s AND conversation = %(conv)s AND search @@ q.q ORDER BY r DESC, id LIMIT %(k)s) l)""",
            {"kind": kind, "conv": conversation, "query": query, "vector": vector, "k": candidates},
        ).fetchall()
        rankings: dict[str, list[str]] = {"vector": [], "lexical": []}
        for leg, unit_id in rows:
            rankings[leg].append(str(unit_id))
        return [self.units[int(f.id)] for f in rrf(rankings, k)]


def fill(units: Sequence[Unit], budget: int, count: Callable[[str], int]) -> str:
    """Units in rank order while they fit (a unit too long for what is left is skipped)."""
    parts: list[str] = []
    used = 0
    sep = count("\n\n")
    for u in units:
        cost = count(u.text) + (sep if parts else 0)
        if used + cost <= budget:
            parts.append(u.text)
            used += cost
    text = "\n\n".join(parts)
    while parts and count(text) > budget:
        parts.pop()
        text = "\n\n".join(parts)
    return text
