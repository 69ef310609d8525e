"""LongMemEval's measures on hand-made rankings, each expected value worked out by hand."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from memq.shared.tokens import count_tokens
from memq_lab.evaluation.longmemeval.data import Question, Session, Turn
from memq_lab.evaluation.longmemeval.measures import (
    MEASURES,
    SEPARATOR_TOKENS,
    QuestionResult,
    aggregate,
    budget_fill,
    dcg,
    evidence_found_at_tokens,
    evidence_recall_at_tokens,
    ndcg,
    question_measures,
    ranking_measures,
    recall_all,
    recall_any,
    session_ranking,
    turn_ranking,
)

RANKED = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]


@dataclass(frozen=True)
class It:
    session_id: str
    turns: tuple[str, ...] = ()
    tokens: int = 0


def test_names_are_the_benchmarks():
    assert set(MEASURES) >= {
        "session_recall_any@5",
        "session_recall_any@10",
        "session_recall_all@5",
        "session_recall_all@10",
        "session_ndcg@10",
        "turn_recall_any@5",
        "turn_recall_any@10",
        "turn_recall_all@5",
        "turn_recall_all@10",
        "turn_ndcg@10",
    }


def test_recall_any_and_all_at_5_and_10():
    # correct c (rank 3) and g (rank 7): any in the top 5, not all; both in the top 10
    assert recall_any(RANKED, {"c", "g"}, 5) == 1.0
    assert recall_all(RANKED, {"c", "g"}, 5) == 0.0
    assert recall_any(RANKED, {"c", "g"}, 10) == 1.0
    assert recall_all(RANKED, {"c", "g"}, 10) == 1.0
    # k at rank 11: in neither
    assert recall_any(RANKED, {"k"}, 10) == 0.0
    assert recall_all(RANKED, {"k"}, 10) == 0.0
    # g (rank 7) only: not at 5, at 10
    assert recall_any(RANKED, {"g"}, 5) == 0.0
    assert recall_any(RANKED, {"g"}, 10) == 1.0
    # nothing correct: any is 0, all is 1 (Python's all() of nothing, as in the original)
    assert recall_any(RANKED, set(), 5) == 0.0
    assert recall_all(RANKED, set(), 5) == 1.0


def test_dcg_discount_is_the_originals():
    # rank 1 weighs 1, rank r >= 2 weighs 1 / log2(r): ranks 1 and 2 both weigh 1
    assert dcg([1, 1, 1, 1], 10) == pytest.approx(1 + 1 + 1 / math.log2(3) + 1 / math.log2(4))
    assert dcg([0, 0, 1], 10) == pytest.approx(1 / math.log2(3))
    assert dcg([1, 1, 1], 2) == 2.0  # cut at k
    assert dcg([], 10) == 0.0


def test_ndcg_at_10_relevant_at_ranks_1_and_3():
    # two correct ids, a (rank 1) and c (rank 3):
    #   DCG  = 1 + 1/log2(3)        = 1.6309297535714575
    #   IDCG = 1 + 1 (ranks 1 and 2) = 2
    #   NDCG = 0.8154648767857288
    # (the textbook 1/log2(rank + 1) would give (1 + 1/2) / (1 + 1/log2(3)) = 0.9197, not this)
    value = ndcg(RANKED, {"a", "c"}, 10)
    assert value == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert value == pytest.approx(0.8154648767857288)
    assert value != pytest.approx(1.5 / (1 + 1 / math.log2(3)))


def test_ndcg_ideal_counts_every_correct_id_up_to_k():
    # three correct ids b (rank 2), d (rank 4) and z (never returned):
    #   DCG  = 1/log2(2) + 1/log2(4) = 1 + 0.5 = 1.5
    #   IDCG = 1 + 1 + 1/log2(3)     = 2.6309297535714573
    #   NDCG = 0.5701389999...
    assert ndcg(RANKED, {"b", "d", "z"}, 10) == pytest.approx(1.5 / (2 + 1 / math.log2(3)))
    # at k = 1 the ideal is one correct id at rank 1: IDCG = 1, and b is not at rank 1
    assert ndcg(RANKED, {"b", "d", "z"}, 1) == 0.0
    # g at rank 7 is past 5
    assert ndcg(RANKED, {"g"}, 5) == 0.0
    # g alone at rank 7 within 10: DCG = 1/log2(7), IDCG = 1
    assert ndcg(RANKED, {"g"}, 10) == pytest.approx(1 / math.log2(7))
    # all correct first: 1.0; nothing correct: 0.0
    assert ndcg(RANKED, {"a", "b", "c"}, 10) == pytest.approx(1.0)
    assert ndcg(RANKED, set(), 10) == 0.0


def test_ndcg_reads_a_ranking_with_repeats_as_its_first_appearances():
    # ["a", "a", "b"] is ["a", "b"]: b at rank 2, which weighs 1 in the original, so NDCG = 1 / 1
    assert ndcg(["a", "a", "b"], {"b"}, 10) == 1.0


def test_ranking_measures_names_and_values():
    values = ranking_measures(RANKED, {"c", "g"}, "session")
    assert values["session_recall_any@5"] == 1.0
    assert values["session_recall_all@5"] == 0.0
    assert values["session_recall_all@10"] == 1.0
    # c at 3, g at 7: DCG = 1/log2(3) + 1/log2(7); IDCG = 2
    assert values["session_ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(7)) / 2)
    # only c within 5: DCG = 1/log2(3); IDCG over min(5, 2) = 2 ones = 2
    assert values["session_ndcg@5"] == pytest.approx((1 / math.log2(3)) / 2)
    assert sorted(values) == sorted(m for m in MEASURES if m.startswith("session_"))


def test_sessions_and_turns_rank_by_first_appearance():
    items = [
        It("s2", ("s2#4",)),
        It("s2", ("s2#1",)),
        It("s1", ("s1#0", "s1#1")),
        It("s3", ("s3#0",)),
        It("s1", ("s1#1", "s1#2")),
        It("s2", ("s2#4",)),
    ]
    assert session_ranking(items) == ["s2", "s1", "s3"]
    assert turn_ranking(items) == ["s2#4", "s2#1", "s1#0", "s1#1", "s3#0", "s1#2"]
    assert session_ranking([]) == []


def test_budget_is_filled_as_units_fill_does():
    # tokens 400, 700, 300, 200 within 1,000, a separator of 1 after the first kept item:
    #   400 -> used 400; 700 + 1 -> 1,101 > 1,000, skipped; 300 + 1 -> 701; 200 + 1 -> 902
    items = [It("s1", ("s1#0",), 400), It("s2", ("s2#0",), 700), It("s3", ("s3#0",), 300), It("s4", ("s4#0",), 200)]
    assert [i.session_id for i in budget_fill(items, 1000)] == ["s1", "s3", "s4"]
    assert [i.session_id for i in budget_fill(items, 902)] == ["s1", "s3", "s4"]  # exactly full
    assert [i.session_id for i in budget_fill(items, 901)] == ["s1", "s3"]
    # the first is too long for 399, the next fits on its own (no separator before it)
    assert [i.session_id for i in budget_fill(items, 399)] == ["s3"]
    assert budget_fill(items, 199) == []
    # evidence in s2 (skipped) and s4 (kept): 1 of 2
    found = evidence_found_at_tokens(items, {"s2#0", "s4#0"}, 1000)
    assert (found.found, found.total) == (1, 2)
    assert evidence_recall_at_tokens(items, {"s2#0", "s4#0"}, 1000) == 0.5
    # at 2,000 every item fits (400 + 701 + 301 + 201 = 1,603)
    assert evidence_recall_at_tokens(items, {"s2#0", "s4#0"}, 2000) == 1.0
    assert evidence_recall_at_tokens(items, set(), 1000) == 0.0


def test_separator_is_what_memq_counts_for_a_blank_line():
    assert count_tokens("\n\n") == SEPARATOR_TOKENS


def _question(qid: str = "q1") -> Question:
    at = datetime(2023, 5, 1, tzinfo=UTC)

    def session(sid: str, evidence: set[int]) -> Session:
        return Session(sid, at, tuple(Turn(sid, i, "user", f"{sid} {i}", i in evidence, at) for i in range(3)))

    sessions = (session("s1", set()), session("s2", {1}), session("s3", {0}), session("s4", set()))
    return Question(qid, "multi-session", "?", "!", at, sessions, ("s2", "s3"))


def test_question_measures_on_turns_and_on_sessions():
    q = _question()
    turns = [It("s3", ("s3#2",), 10), It("s2", ("s2#1",), 10), It("s1", ("s1#0",), 10), It("s3", ("s3#0",), 10)]
    values = question_measures(turns, q, budgets=(21, 32))
    # sessions s3, s2, s1: both answer sessions at ranks 1 and 2
    assert values["session_recall_all@5"] == 1.0
    assert values["session_ndcg@10"] == 1.0
    # turns: evidence s2#1 at rank 2 and s3#0 at rank 4: DCG = 1 + 1/log2(4) = 1.5; IDCG = 2
    assert values["turn_recall_any@5"] == 1.0
    assert values["turn_ndcg@10"] == pytest.approx(0.75)
    # 21 tokens hold the first two turns (10 + 11): s2#1 of the two; 32 hold a third, not the fourth
    assert values["evidence_recall@21_tokens"] == 0.5
    assert values["evidence_recall@32_tokens"] == 0.5
    # whole sessions: no turn ranking unless asked for
    sessions = [It("s2", ("s2#0", "s2#1", "s2#2"), 30), It("s1", ("s1#0", "s1#1", "s1#2"), 30)]
    values = question_measures(sessions, q)
    assert "turn_ndcg@10" not in values
    assert values["session_recall_any@5"] == 1.0 and values["session_recall_all@10"] == 0.0
    # s2 at rank 1 of two answer sessions: DCG = 1, IDCG = 2
    assert values["session_ndcg@10"] == 0.5
    assert "turn_ndcg@10" in question_measures(sessions, q, turn_level=True)


def test_aggregate_leaves_out_abstention_and_means_per_type():
    rows = [
        QuestionResult("q1", "multi-session", {"session_recall_any@5": 1.0, "turn_ndcg@10": 0.5}),
        QuestionResult("q2", "multi-session", {"session_recall_any@5": 0.0, "turn_ndcg@10": 0.25}),
        QuestionResult("q3", "temporal-reasoning", {"session_recall_any@5": 1.0}),
        QuestionResult("q4_abs", "temporal-reasoning", {"session_recall_any@5": 0.0, "turn_ndcg@10": 0.0}),
    ]
    summary = aggregate(rows)
    assert (summary.questions, summary.abstentions) == (3, 1)
    # (1 + 0 + 1) / 3; q4_abs left out
    assert summary.overall["session_recall_any@5"] == pytest.approx(2 / 3)
    # only q1 and q2 have it: (0.5 + 0.25) / 2
    assert summary.overall["turn_ndcg@10"] == pytest.approx(0.375)
    assert summary.per_type["multi-session"] == {"session_recall_any@5": 0.5, "turn_ndcg@10": 0.375}
    assert summary.per_type["temporal-reasoning"] == {"session_recall_any@5": 1.0}
    assert summary.type_counts == {"multi-session": 2, "temporal-reasoning": 1}
    empty = aggregate([])
    assert (empty.questions, empty.overall, empty.per_type) == (0, {}, {})
