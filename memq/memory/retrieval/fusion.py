"""Reciprocal Rank Fusion: each leg ranks candidates; a candidate's score is the sum
over the legs that found it of 1 / (k + rank), rank counted from 1 (Cormack et al.;
k = 60 by default, Plast Mem uses 30: ``MEMQ_RRF_K``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Fused:
    id: str
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)  # leg -> 1-based rank


def rrf(rankings: Mapping[str, Sequence[str]], k: float) -> list[Fused]:
    """Fuse ranked id lists (best first; repeats after the first ignored), best first;
    ties keep the order of first appearance."""
    fused: dict[str, Fused] = {}
    for leg, ids in rankings.items():
        seen: set[str] = set()
        for id_ in ids:
            if id_ in seen:
                continue
            seen.add(id_)
            entry = fused.setdefault(id_, Fused(id_))
            entry.ranks[leg] = len(seen)
            entry.score += 1.0 / (k + len(seen))
    return sorted(fused.values(), key=lambda f: -f.score)


KEPT_TOLERANCE = 1e-12  # scores summed in another order differ in the last bits


def kept(fused: Sequence[Fused], how_many: int, returned: int, keep: float) -> list[str]:
    """Of ``rrf``'s result, the ids retrieval can return: the best ``how_many`` (and any
    tied with the last), and of those only ones whose score reaches the ``returned``-th
    best score times ``keep`` (the least re-ranking can multiply a score by, over the
    most: ``service.rerank_reach``). ``legs._KEPT`` is the same rule in SQL, for the
    legs run as one statement; this one is for legs run apart (``legs.run_legs``)."""
    if not fused or how_many < 1 or returned < 1:
        return []
    scores = [f.score for f in fused]  # best first
    bar = max(
        scores[min(how_many, len(scores)) - 1] - KEPT_TOLERANCE,
        scores[min(returned, len(scores)) - 1] * keep - KEPT_TOLERANCE,
    )
    return [f.id for f in fused if f.score >= bar]
