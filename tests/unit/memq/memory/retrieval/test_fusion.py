"""Reciprocal Rank Fusion: the score is the sum of 1 / (k + rank) over the legs that
found a candidate, so agreement between legs beats a single good rank."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memq.memory.retrieval.fusion import Fused, kept, rrf


def test_one_leg_scores_by_rank_from_one():
    fused = rrf({"vector": ["a", "b", "c"]}, k=60)
    assert [f.id for f in fused] == ["a", "b", "c"]
    assert [f.score for f in fused] == pytest.approx([1 / 61, 1 / 62, 1 / 63])
    assert [f.ranks for f in fused] == [{"vector": 1}, {"vector": 2}, {"vector": 3}]


def test_found_by_both_legs_beats_first_of_one():
    fused = rrf({"vector": ["a", "b"], "lexical": ["c", "b"]}, k=60)
    assert fused[0].id == "b"
    assert fused[0].score == pytest.approx(2 / 62)
    assert fused[0].ranks == {"vector": 2, "lexical": 2}
    assert {f.id: f.ranks for f in fused[1:]} == {"a": {"vector": 1}, "c": {"lexical": 1}}


def test_repeats_in_a_leg_count_once_and_do_not_shift_ranks():
    fused = rrf({"vector": ["a", "a", "b"]}, k=10)
    assert {f.id: f.ranks["vector"] for f in fused} == {"a": 1, "b": 2}
    assert {f.id: f.score for f in fused} == pytest.approx({"a": 1 / 11, "b": 1 / 12})


def test_ties_keep_the_order_of_first_appearance():
    fused = rrf({"vector": ["a", "b"], "lexical": ["b", "a"]}, k=60)
    assert [f.id for f in fused] == ["a", "b"] and fused[0].score == pytest.approx(fused[1].score)


def test_smaller_k_rewards_the_top_ranks_more():
    legs = {"vector": ["a", "x", "y", "b"], "lexical": ["p", "q", "r", "b"]}
    assert rrf(legs, k=1)[0].id == "a"  # 1/2 beats 2 x 1/5
    assert rrf(legs, k=60)[0].id == "b"  # 2/64 beats 1/61


def test_no_legs_no_candidates():
    assert rrf({}, k=60) == [] and rrf({"vector": []}, k=60) == []


@given(
    rankings=st.dictionaries(
        st.sampled_from(["episode_vector", "episode_lexical", "message_vector", "message_lexical"]),
        st.lists(st.sampled_from("abcdefghij"), max_size=15),
    ),
    k=st.floats(min_value=0.5, max_value=100),
)
def test_scores_are_the_sum_over_legs_and_sorted_best_first(rankings, k):
    fused = rrf(rankings, k)
    expected_ids = {i for ids in rankings.values() for i in ids}
    assert {f.id for f in fused} == expected_ids and len(fused) == len(expected_ids)
    for f in fused:
        assert f.score == pytest.approx(sum(1 / (k + r) for r in f.ranks.values()))
        for leg, rank in f.ranks.items():
            assert list(dict.fromkeys(rankings[leg])).index(f.id) + 1 == rank
    assert all(a.score >= b.score for a, b in itertools.pairwise(fused))


def _fused(*scores: float) -> list[Fused]:
    return [Fused(f"e{i}", s) for i, s in enumerate(scores)]


def test_kept_is_the_best_how_many_and_those_tied_with_the_last():
    fused = _fused(0.5, 0.4, 0.3, 0.3, 0.2)
    assert kept(fused, 3, 1, 0.0) == ["e0", "e1", "e2", "e3"]
    assert kept(fused, 10, 1, 0.0) == ["e0", "e1", "e2", "e3", "e4"]


def test_kept_drops_what_reranking_cannot_lift_into_the_returned():
    fused = _fused(0.5, 0.4, 0.3, 0.2)
    # the 2nd best is 0.4; at most x2 up for the others, at least x0.5 for it: 0.4 * 0.5 = 0.2 stays
    assert kept(fused, 100, 2, 0.5) == ["e0", "e1", "e2", "e3"]
    assert kept(fused, 100, 2, 0.7) == ["e0", "e1", "e2"]
    assert kept(fused, 100, 1, 1.0) == ["e0"]


def test_kept_of_nothing_or_no_room_is_nothing():
    assert kept([], 5, 1, 1.0) == []
    assert kept(_fused(0.5), 0, 1, 1.0) == []
    assert kept(_fused(0.5), 5, 0, 1.0) == []


def test_kept_tolerates_scores_summed_in_another_order():
    a = 1 / 61 + 1 / 62 + 1 / 63
    b = 1 / 63 + 1 / 62 + 1 / 61  # the same sum, maybe not the same last bit
    assert kept([Fused("x", a), Fused("y", b)], 1, 1, 1.0) == ["x", "y"]
