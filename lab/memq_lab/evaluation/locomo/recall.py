"""Evidence recall at a budget (pure): an evidence turn counts as found when the returned
text contains that turn's text (whitespace-normalised)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def _norm(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Found:
    found: int
    total: int

    @property
    def recall(self) -> float:
        return self.found / self.total if self.total else 0.0

    @property
    def complete(self) -> bool:
        return self.total > 0 and self.found == self.total


def evidence_found(returned: str, evidence_texts: Sequence[str]) -> Found:
    text = _norm(returned)
    return Found(sum(1 for e in evidence_texts if _norm(e) in text), len(evidence_texts))


@dataclass(frozen=True)
class Summary:
    questions: int
    recall: float  # mean over questions
    all_found: float  # share of questions with every evidence turn found
    tokens: float  # mean tokens returned


def summarise(results: Iterable[tuple[Found, int]]) -> Summary:
    rows = list(results)
    if not rows:
        return Summary(0, 0.0, 0.0, 0.0)
    n = len(rows)
    return Summary(
        n, sum(f.recall for f, _ in rows) / n, sum(f.complete for f, _ in rows) / n, sum(t for _, t in rows) / n
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]
