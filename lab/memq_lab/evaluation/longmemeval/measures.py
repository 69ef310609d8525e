"""LongMemEval's retrieval measures (pure), as its ``src/retrieval/eval_utils.py`` defines
them, and evidence recall at a token budget.

For a ranked list of ids and the set of correct ids:

- ``recall_any@k``: 1.0 when any correct id is in the top k, else 0.0;
- ``recall_all@k``: 1.0 when every correct id is in the top k, else 0.0 (with no correct
  id at all this is 1.0, as Python's ``all`` of nothing is in the original);
- ``ndcg@k``: binary relevance, DCG over the top k with the original's discount, which is
  *not* the textbook ``1 / log2(rank + 1)``: the first rank weighs 1 and rank r >= 2
  weighs ``1 / log2(r)`` (its ``dcg`` is ``rel[0] + sum(rel[1:] / log2(arange(2, k + 1)))``),
  so ranks 1 and 2 both weigh 1. The ideal DCG is the same sum over the relevances of the
  whole corpus sorted best first and cut at k, that is over ``min(k, R)`` ones where R is
  the number of correct ids in the corpus. Here the correct ids are the question's (all of
  them are in its haystack), so R is their number. No correct id: 0.0.

Systems that return something other than sessions (turns, episodes) rank sessions by the
first appearance of each (``session_ranking``), and turns the same way (``turn_ranking``).
For a turn-level system this gives the same session ``recall_any`` / ``recall_all`` as the
original's ``evaluate_retrieval_turn2session`` (which widens k over the turn ranking until
it spans k distinct sessions); its NDCG there is computed over turn positions with each
turn labelled by its session, which counts a session once per turn: here session NDCG is
always over the ranking of distinct sessions.

Where this follows the dataset rather than the original's scripts: the correct sessions are
``answer_session_ids`` and the correct turns every ``has_answer`` turn, of either role.
(The original indexes user turns only, and relabels an answer session with no
``has_answer`` user turn as not correct.) Questions are averaged as the original does,
abstention questions left out.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from memq_lab.evaluation.locomo.recall import Found
from memq_lab.evaluation.longmemeval.data import Question

KS = (5, 10)
LEVELS = ("session", "turn")
MEASURES = tuple(f"{level}_{name}@{k}" for level in LEVELS for name in ("recall_any", "recall_all", "ndcg") for k in KS)
# what ``units.fill`` charges for the blank line joining two returned texts: count_tokens("\n\n")
SEPARATOR_TOKENS = 1


class Returned(Protocol):
    """One returned item: the session it comes from, the turns it holds, its token count."""

    @property
    def session_id(self) -> str: ...

    @property
    def turns(self) -> Sequence[str]: ...  # turn_key ids

    @property
    def tokens(self) -> int: ...


R = TypeVar("R", bound=Returned)


def _distinct(ranked: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ranked))


def recall_any(ranked: Sequence[str], correct: Collection[str], k: int) -> float:
    top = set(ranked[:k])
    return float(any(c in top for c in correct))


def recall_all(ranked: Sequence[str], correct: Collection[str], k: int) -> float:
    top = set(ranked[:k])
    return float(all(c in top for c in correct))


def dcg(relevances: Sequence[float], k: int) -> float:
    """The original's DCG: ``rel_1 + sum over ranks r = 2..k of rel_r / log2(r)``."""
    return sum(rel / (1.0 if r == 1 else math.log2(r)) for r, rel in enumerate(relevances[:k], start=1))


def ndcg(ranked: Sequence[str], correct: Collection[str], k: int) -> float:
    """NDCG@k as the original computes it (module docstring); ``ranked`` is made distinct
    first (a repeat after the first appearance is dropped)."""
    wanted = set(correct)
    ideal = dcg([1.0] * min(k, len(wanted)), k)
    if ideal == 0:
        return 0.0
    return dcg([1.0 if x in wanted else 0.0 for x in _distinct(ranked)[:k]], k) / ideal


def session_ranking(items: Iterable[Returned]) -> list[str]:
    """Distinct sessions in the order they first appear among the items."""
    return _distinct(i.session_id for i in items)


def turn_ranking(items: Iterable[Returned]) -> list[str]:
    """Distinct turn keys in the order they first appear among the items (within an item,
    in the item's order)."""
    return _distinct(t for i in items for t in i.turns)


def ranking_measures(ranked: Sequence[str], correct: Collection[str], level: str) -> dict[str, float]:
    """``{level}_recall_any@k``, ``{level}_recall_all@k`` and ``{level}_ndcg@k`` at k in ``KS``."""
    ranked = _distinct(ranked)
    out: dict[str, float] = {}
    for name, measure in (("recall_any", recall_any), ("recall_all", recall_all), ("ndcg", ndcg)):
        for k in KS:
            out[f"{level}_{name}@{k}"] = measure(ranked, correct, k)
    return out


def budget_fill(items: Sequence[R], budget: int, separator: int = SEPARATOR_TOKENS) -> list[R]:
    """The items returned within ``budget`` tokens, by ``units.fill``'s rule: in rank order,
    each costing its tokens plus ``separator`` after the first; one too long for what is
    left is skipped and the next ones still tried. (``units.fill`` works on LoCoMo units'
    text and returns the joined text; this one works on counts and says which items fit.
    ``fill``'s last check, that the joined text counts no more than the parts, has no
    counterpart here: without the text, the parts' sum is the count.)"""
    kept: list[R] = []
    used = 0
    for item in items:
        cost = item.tokens + (separator if kept else 0)
        if used + cost <= budget:
            kept.append(item)
            used += cost
    return kept


def evidence_found_at_tokens(
    items: Sequence[Returned], evidence: Collection[str], budget: int, separator: int = SEPARATOR_TOKENS
) -> Found:
    """How many of the ``evidence`` turn keys the items returned within ``budget`` hold."""
    held = {t for item in budget_fill(items, budget, separator) for t in item.turns}
    wanted = set(evidence)
    return Found(len(wanted & held), len(wanted))


def evidence_recall_at_tokens(
    items: Sequence[Returned], evidence: Collection[str], budget: int, separator: int = SEPARATOR_TOKENS
) -> float:
    """The share of the question's evidence turns held by the items returned within
    ``budget`` tokens (0.0 when it has none)."""
    return evidence_found_at_tokens(items, evidence, budget, separator).recall


@dataclass(frozen=True)
class ReturnedItem:
    """One item a system returned that is not a baseline's unit (memq's episodes): its
    session and the turns it shows, in order."""

    session_id: str
    turns: tuple[str, ...]
    tokens: int = 0


def items_measure(k: int) -> str:
    return f"evidence_recall@{k}_items"


def evidence_recall_at_items(items: Sequence[Returned], evidence: Collection[str], k: int) -> float:
    """The share of the ``evidence`` turn keys held by the first ``k`` items (0.0 with no
    evidence)."""
    held = {t for item in items[:k] for t in item.turns}
    wanted = set(evidence)
    return Found(len(wanted & held), len(wanted)).recall


def budget_measure(budget: int) -> str:
    return f"evidence_recall@{budget}_tokens"


def question_measures(
    items: Sequence[Returned], question: Question, *, turn_level: bool | None = None, budgets: Sequence[int] = ()
) -> dict[str, float]:
    """Every measure of one question for a ranked list of returned items: session level
    always; turn level when ``turn_level``, by default when every item is a single turn
    (whole sessions, returned as they are, give no ranking of turns); evidence recall at
    each of ``budgets``."""
    out = ranking_measures(session_ranking(items), question.answer_session_ids, "session")
    if turn_level is None:
        turn_level = all(len(i.turns) <= 1 for i in items)
    evidence = question.evidence_keys
    if turn_level:
        out.update(ranking_measures(turn_ranking(items), evidence, "turn"))
    for budget in budgets:
        out[budget_measure(budget)] = evidence_recall_at_tokens(items, evidence, budget)
    return out


@dataclass(frozen=True)
class QuestionResult:
    question_id: str
    question_type: str
    measures: Mapping[str, float]

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")


@dataclass(frozen=True)
class Aggregate:
    questions: int  # averaged (abstention questions left out)
    abstentions: int  # left out
    overall: dict[str, float]
    per_type: dict[str, dict[str, float]]
    type_counts: dict[str, int] = field(default_factory=dict)


def _means(rows: Sequence[QuestionResult]) -> dict[str, float]:
    names = _distinct(n for r in rows for n in r.measures)
    out: dict[str, float] = {}
    for name in names:
        values = [r.measures[name] for r in rows if name in r.measures]
        out[name] = sum(values) / len(values)
    return out


def aggregate(results: Iterable[QuestionResult]) -> Aggregate:
    """Mean of each measure over the questions that have it, overall and per question type;
    abstention questions left out, as the original's averages do."""
    rows = list(results)
    kept = [r for r in rows if not r.abstention]
    by_type: dict[str, list[QuestionResult]] = {}
    for r in kept:
        by_type.setdefault(r.question_type, []).append(r)
    return Aggregate(
        len(kept),
        len(rows) - len(kept),
        _means(kept),
        {t: _means(rs) for t, rs in sorted(by_type.items())},
        {t: len(rs) for t, rs in sorted(by_type.items())},
    )
