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
