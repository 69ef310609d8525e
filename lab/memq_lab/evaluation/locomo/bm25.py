"""Okapi BM25 over PostgreSQL's own lexemes (pure), to measure whether true BM25 (with
corpus statistics) would rank better than ``ts_rank_cd``, which has none. Used by the
evaluation only: the comparison is ``memq eval-locomo --ablations``' row
"turn · memq query · BM25"."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


class Bm25Index:
    """``docs``: document id -> lexeme -> term frequency."""

    def __init__(self, docs: Mapping[int, Mapping[str, int]], k1: float = 1.2, b: float = 0.75):
        self.docs = docs
        self.k1, self.b = k1, b
        self.lengths = {d: sum(terms.values()) for d, terms in docs.items()}
        self.average = (sum(self.lengths.values()) / len(docs)) if docs else 0.0
        self.df: dict[str, int] = {}
        for terms in docs.values():
            for t in terms:
                self.df[t] = self.df.get(t, 0) + 1

    def idf(self, term: str) -> float:
        n, df = len(self.docs), self.df.get(term, 0)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def score(self, doc: int, query: Sequence[str]) -> float:
        terms, length = self.docs[doc], self.lengths[doc]
        total = 0.0
        for t in set(query):
            tf = terms.get(t)
            if tf:
                norm = tf + self.k1 * (1 - self.b + self.b * length / (self.average or 1.0))
                total += self.idf(t) * tf * (self.k1 + 1) / norm
        return total

    def rank(self, query: Sequence[str]) -> list[int]:
        """Documents holding any query term, best first (ties by id)."""
        scored = [(self.score(d, query), d) for d in self.docs]
        return [d for s, d in sorted((x for x in scored if x[0] > 0), key=lambda x: (-x[0], x[1]))]
