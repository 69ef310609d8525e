"""The baselines' memory units and their search: single turns, fixed 8-turn windows and
whole sessions, each embedded with the same model as memq and ranked by the same hybrid
search (an exact vector leg on a temporary table is the same ranking as HNSW at this
size; the lexical leg is PostgreSQL full text with the same OR-query and
``ts_rank_cd``), fused by the same RRF. Returned text is filled in rank order within the
budget.

Two ways to search them:

- ``plain``: the textbook hybrid search the issue names. A unit is embedded as its
  turns' ``Speaker (8 May 2023): text`` (the best of the representations measured for a
  raw query) and searched with the question as asked.
- ``memq query``: exactly memq's message representation (``indexed_text``) and query
  handling (participants the question names taken out of the searched text, messages
  by them gaining ``MEMQ_SPEAKER_MATCH_WEIGHT``), so that the only difference left to
  memq is the memory unit.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np
import psycopg

from memq.memory.retrieval.fusion import rrf
from memq.shared.db.lexical import OR_QUERY
from memq.shared.messages import indexed_text
from memq_lab.evaluation.locomo.bm25 import Bm25Index
from memq_lab.evaluation.locomo.data import LocomoConversation, Turn
from memq_lab.evaluation.locomo.replay import as_message

UNIT_KINDS = ("turn", "window8", "session")
SEARCHES = ("plain", "memq")


@dataclass(frozen=True)
class Unit:
    kind: str
    conversation: str
    turns: tuple[Turn, ...]

    @property
    def text(self) -> str:
        """What the unit returns: its time, then each turn."""
        head = f"[{self.turns[0].at:%d %B %Y %H:%M}]"
        return "\n".join([head] + [f"- {t.speaker}: {t.text}" for t in self.turns])

    def embedded(self, search: str) -> str:
        """What the unit is embedded by, for a search of the given kind."""
        if search == "memq":
            return "\n".join(indexed_text(as_message(t)) for t in self.turns)
        return "\n".join(f"{t.speaker} ({t.at.day} {t.at:%B %Y}): {t.text}" for t in self.turns)

    @property
    def searched(self) -> str:
        """What the lexical leg reads: speaker and text, as memq's message tsvector."""
        return "\n".join(f"{t.speaker} {t.text}" for t in self.turns)

    @property
    def speakers(self) -> frozenset[str]:
        return frozenset(t.speaker for t in self.turns)


def make_units(conv: LocomoConversation, kind: str, window: int = 8) -> list[Unit]:
    if kind == "turn":
        return [Unit(kind, conv.sample_id, (t,)) for t in conv.turns]
    by_session: dict[int, list[Turn]] = {}
    for t in conv.turns:
        by_session.setdefault(t.session, []).append(t)
    if kind == "session":
        return [Unit(kind, conv.sample_id, tuple(ts)) for ts in by_session.values()]
    if kind == "window8":
        return [
            Unit(kind, conv.sample_id, tuple(ts[i : i + window]))
            for ts in by_session.values()
            for i in range(0, len(ts), window)
        ]
    raise ValueError(kind)


class UnitIndex:
    """Units in a temporary table of the evaluation's connection, with one vector per
    search kind."""

    def __init__(self, conn: psycopg.Connection, dim: int):
        self.conn = conn
        self.units: list[Unit] = []
        self._bm25_indexes: dict[tuple[str, str], Bm25Index] = {}
        conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS eval_unit (id int PRIMARY KEY, kind text, conversation text, body text, "
            f"plain vector({dim}), memq vector({dim}), "
            "search tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED)"
        )
        conn.execute("TRUNCATE eval_unit")

    def add(self, units: Sequence[Unit], vectors: dict[str, np.ndarray]) -> None:
        """``vectors``: search kind -> one row per unit."""
        base = len(self.units)
        self.units.extend(units)
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO eval_unit (id, kind, conversation, body, plain, memq) VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (base + i, u.kind, u.conversation, u.searched, vectors["plain"][i], vectors["memq"][i])
                    for i, u in enumerate(units)
                ],
            )
        self.conn.execute("ANALYZE eval_unit")

    def search(
        self,
        kind: str,
        conversation: str,
        query: str,
        vector: np.ndarray,
        candidates: int,
        k: float,
        *,
        search: str = "plain",
        named: Collection[str] = (),
        speaker_weight: float = 0.0,
        lexical: str = "ts_rank_cd",
    ) -> list[Unit]:
        """Units best first. With ``named`` (participants the query names), a unit holding
        a turn by one of them gains ``speaker_weight / (k + 1)``, as memq's messages do.
        ``lexical``: PostgreSQL's ``ts_rank_cd`` (memq's) or ``bm25`` over the same
        lexemes (``bm25.py``), to measure one against the other."""
        column = {"plain": "plain", "memq": "memq"}[search]
        rows = self.conn.execute(
            f"""WITH q AS (SELECT {OR_QUERY} AS q)
            (SELECT 'vector', id FROM eval_unit WHERE kind = %(kind)s AND conversation = %(conv)s
               ORDER BY {column} <=> %(vector)s, id LIMIT %(k)s)
            UNION ALL
            (SELECT 'lexical', id FROM (SELECT id, ts_rank_cd(search, q.q, 1) AS r FROM eval_unit, q
               WHERE kind = %(kind)s AND conversation = %(conv)s AND search @@ q.q
               ORDER BY r DESC, id LIMIT %(k)s) l)""",
            {"kind": kind, "conv": conversation, "query": query, "vector": vector, "k": candidates},
        ).fetchall()
        rankings: dict[str, list[str]] = {"vector": [], "lexical": []}
        for leg, unit_id in rows:
            if leg == "vector" or lexical == "ts_rank_cd":
                rankings[leg].append(str(unit_id))
        if lexical == "bm25":
            rankings["lexical"] = [
                str(i) for i in self._bm25(kind, conversation).rank(self._lexemes(query))[:candidates]
            ]
        scored = {int(f.id): f.score for f in rrf(rankings, k)}
        if named and speaker_weight:
            bonus = speaker_weight / (k + 1)
            for i, u in enumerate(self.units):
                if u.kind == kind and u.conversation == conversation and u.speakers & set(named):
                    scored[i] = scored.get(i, 0.0) + bonus
        return [self.units[i] for i in sorted(scored, key=lambda i: (-scored[i], i))]

    def _lexemes(self, text: str) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT lexeme FROM unnest(to_tsvector('english', %s))", (text,))]

    def _bm25(self, kind: str, conversation: str) -> Bm25Index:
        key = (kind, conversation)
        if key not in self._bm25_indexes:
            rows = self.conn.execute(
                "SELECT id, u.lexeme, coalesce(array_length(u.positions, 1), 1) FROM eval_unit, unnest(search) AS u "
                "WHERE kind = %s AND conversation = %s",
                key,
            ).fetchall()
            docs: dict[int, dict[str, int]] = {
                i: {} for i, u in enumerate(self.units) if (u.kind, u.conversation) == key
            }
            for unit_id, lexeme, tf in rows:
                docs[unit_id][lexeme] = tf
            self._bm25_indexes[key] = Bm25Index(docs)
        return self._bm25_indexes[key]


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
