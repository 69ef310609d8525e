"""The issues' targets as ``memq eval-locomo`` reports them (``report.targets``): each
single-turn baseline with its own margin at 1,000 tokens, recall at 250 and 1,000 tokens,
and memq at or above its no-FSRS ablation at every budget."""

from __future__ import annotations

from pathlib import Path

from memq_lab.evaluation.locomo.data import Question
from memq_lab.evaluation.locomo.recall import Found
from memq_lab.evaluation.locomo.report import targets
from memq_lab.evaluation.locomo.runner import EvalConfig, EvalRun, QuestionResult

QUESTIONS = [Question(f"q{i}", f"question {i}?", "answer", 4, ("D1:1",)) for i in range(20)]


def run_with(recalls: dict[str, dict[int, float]]) -> EvalRun:
    """A run whose every question of method m at budget b found ``recalls[m][b]`` of its
    evidence on average (20 questions: each found, or not, 1 of 1)."""
    run = EvalRun(EvalConfig(Path("data")), [])
    for method, by_budget in recalls.items():
        for budget, recall in by_budget.items():
            found = round(recall * len(QUESTIONS))
            for i, q in enumerate(QUESTIONS):
                run.results.append(QuestionResult(q, "conv", method, budget, Found(int(i < found), 1), budget))
    return run


def budgets(*values: float) -> dict[int, float]:
    return dict(zip((250, 500, 1000, 2000), values))


def test_each_baseline_is_held_to_its_own_margin_at_1000_tokens():
    t = targets(
        run_with(
            {
                "memq": budgets(0.65, 0.75, 0.85, 0.9),
                "turn": budgets(0.5, 0.6, 0.75, 0.8),  # 0.10 below: met
                "turn · memq query": budgets(0.6, 0.7, 0.8, 0.85),  # 0.05 below: met
            }
        )
    )
    assert t["turn"]["target"] == 0.10 and t["turn"]["met"] and t["turn"]["at_or_above_every_budget"]
    assert t["turn · memq query"]["target"] == 0.05 and t["turn · memq query"]["met"]
    assert t["recall"] == {
        "250": {"value": 0.65, "target": 0.65, "met": True},
        "1000": {"value": 0.85, "target": 0.85, "met": True},
    }
    assert "fsrs_never_behind_no_fsrs" not in t  # only with the ablations


def test_a_baseline_ahead_at_any_budget_or_too_close_at_1000_misses():
    t = targets(
        run_with(
            {
                "memq": budgets(0.55, 0.75, 0.8, 0.9),
                "turn · memq query": budgets(0.6, 0.7, 0.8, 0.85),
                "memq no-FSRS": budgets(0.6, 0.7, 0.8, 0.95),
            }
        )
    )
    assert not t["turn · memq query"]["met"] and not t["turn · memq query"]["at_or_above_every_budget"]
    assert not t["recall"]["250"]["met"] and not t["recall"]["1000"]["met"]
    assert t["fsrs_never_behind_no_fsrs"] == {"met": False, "behind_by": {"memq @250": 0.05, "memq @2000": 0.05}}


def test_fsrs_is_compared_with_no_fsrs_at_each_limit_measured():
    level = budgets(0.6, 0.7, 0.8, 0.9)
    t = targets(
        run_with(
            {
                "memq": level,
                "memq no-FSRS": level,
                "memq limit 10": budgets(0.6, 0.7, 0.75, 0.8),
                "memq no-FSRS limit 10": budgets(0.6, 0.7, 0.8, 0.8),
            }
        )
    )
    assert t["fsrs_never_behind_no_fsrs"] == {"met": False, "behind_by": {"memq limit 10 @1000": 0.05}}
    assert targets(run_with({"memq": level, "memq no-FSRS": level}))["fsrs_never_behind_no_fsrs"]["met"]
