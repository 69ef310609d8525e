"""Tests for memq_lab.evaluation.metrics."""

from __future__ import annotations

import random

import pytest

from memq_lab.evaluation.metrics import (
    METRIC_KEYS,
    aggregate,
    all_boundaries,
    boundaries_to_mask,
    boundary_f1,
    every_k,
    no_boundaries,
    pk,
    score_dialogue,
    window_size,
    windowdiff,
)


def _mask(text: str) -> list[int]:
    return [int(c) for c in text]


# ------------------------------------------------------------------ conversions


def test_boundaries_to_mask_marks_boundary_after_previous_utterance() -> None:
    assert boundaries_to_mask({2, 4}, 6) == [0, 1, 0, 1, 0, 0]
    assert boundaries_to_mask(set(), 3) == [0, 0, 0]
    assert boundaries_to_mask([1], 2) == [1, 0]
    assert boundaries_to_mask([], 0) == []


@pytest.mark.parametrize("bad", [0, 6, -1, 7])
def test_boundaries_to_mask_rejects_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError):
        boundaries_to_mask({bad}, 6)


@pytest.mark.parametrize(
    ("n", "segments", "expected"),
    [
        (12, 2, 3),  # 12 / 2 / 2 = 3
        (10, 2, 2),  # 2.5 rounds half to even -> 2
        (14, 2, 4),  # 3.5 rounds half to even -> 4
        (16, 4, 2),
        (20, 1, 10),
        (3, 3, 2),  # 0.5 -> 0, floored at 2
        (1, 1, 2),
    ],
)
def test_window_size(n: int, segments: int, expected: int) -> None:
    assert window_size(n, segments) == expected


def test_window_size_rejects_zero_segments() -> None:
    with pytest.raises(ValueError):
        window_size(10, 0)


# ------------------------------------------------------------------ Pk / WindowDiff


@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_perfect_segmentation_scores_zero(k: int) -> None:
    mask = _mask("010010")
    assert pk(mask, mask, k) == 0.0
    assert windowdiff(mask, mask, k) == 0.0


def test_missed_boundary_by_hand() -> None:
    # ref mask 001000, hyp 000000, k=2: windows [00][01][10][00][00] -> 2 of 5 differ.
    ref, hyp = _mask("001000"), _mask("000000")
    assert pk(ref, hyp, 2) == pytest.approx(2 / 5)
    assert windowdiff(ref, hyp, 2) == pytest.approx(2 / 5)


def test_shifted_boundary_by_hand() -> None:
    ref, hyp = _mask("001000"), _mask("000100")
    # k=2: ref windows 0,1,1,0,0 vs hyp 0,0,1,1,0 -> errors at 1 and 3.
    assert pk(ref, hyp, 2) == pytest.approx(2 / 5)
    assert windowdiff(ref, hyp, 2) == pytest.approx(2 / 5)
    # k=3: ref windows 1,1,1,0 vs hyp 0,1,1,1 -> errors at 0 and 3.
    assert pk(ref, hyp, 3) == pytest.approx(2 / 4)
    assert windowdiff(ref, hyp, 3) == pytest.approx(2 / 4)


def test_pk_and_windowdiff_differ_on_extra_nearby_boundary() -> None:
    ref, hyp = _mask("010000"), _mask("011000")
    # k=3 windows: ref counts 1,1,0,0; hyp counts 2,2,1,0.
    # Pk only sees presence: T,T,F,F vs T,T,T,F -> 1 error of 4.
    assert pk(ref, hyp, 3) == pytest.approx(1 / 4)
    # WindowDiff sees counts: 3 of 4 windows differ.
    assert windowdiff(ref, hyp, 3) == pytest.approx(3 / 4)


def test_nltk_doctest_values() -> None:
    """Values from nltk.metrics.segmentation's own doctests."""
    s1, s2, s3 = _mask("000100000010"), _mask("000010000100"), _mask("100000010000")
    assert windowdiff(s1, s1, 3) == 0.0
    assert windowdiff(s1, s2, 3) == pytest.approx(0.3)
    assert windowdiff(s2, s3, 3) == pytest.approx(0.8)
    # nltk prints these as '0.50'; exactly, of the 399 windows of width 2 over
    # "0100" * 100, 200 contain a boundary (i % 4 in {0, 1}) and 199 do not.
    ref = _mask("0100" * 100)
    assert pk(ref, [1] * 400, 2) == pytest.approx(199 / 399)
    assert pk(ref, [0] * 400, 2) == pytest.approx(200 / 399)
    assert pk(ref, ref, 2) == 0.0


@pytest.mark.parametrize("metric", [pk, windowdiff])
def test_metrics_validate_arguments(metric) -> None:
    with pytest.raises(ValueError):
        metric([0, 1, 0], [0, 1], 2)
    with pytest.raises(ValueError):
        metric([0, 1, 0], [0, 1, 0], 4)
    with pytest.raises(ValueError):
        metric([0, 1, 0], [0, 1, 0], 0)


def test_matches_nltk_on_random_sequences() -> None:
    """nltk (a dev dependency) is the independent reference: its Pk and WindowDiff."""
    from nltk.metrics import segmentation

    rng = random.Random(1234)
    for _ in range(500):
        n = rng.randint(1, 40)
        ref = [int(rng.random() < 0.25) for _ in range(n)]
        hyp = [int(rng.random() < rng.random()) for _ in range(n)]
        k = rng.randint(1, n)
        assert pk(ref, hyp, k) == pytest.approx(segmentation.pk(ref, hyp, k, boundary=1))
        assert windowdiff(ref, hyp, k) == pytest.approx(segmentation.windowdiff(ref, hyp, k, boundary=1))
        # nltk's usual string form gives the same values.
        ref_s, hyp_s = "".join(map(str, ref)), "".join(map(str, hyp))
        assert pk(ref, hyp, k) == pytest.approx(segmentation.pk(ref_s, hyp_s, k))


# ------------------------------------------------------------------ boundary F1


def test_boundary_f1_exact_matching() -> None:
    precision, recall, f1 = boundary_f1({3, 7}, {3, 8, 10})
    assert precision == pytest.approx(1 / 3)
    assert recall == pytest.approx(1 / 2)
    assert f1 == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    assert boundary_f1({3, 7}, {3, 7}) == (1.0, 1.0, 1.0)
    assert boundary_f1({3}, {4}) == (0.0, 0.0, 0.0)


def test_boundary_f1_empty_sets() -> None:
    assert boundary_f1(set(), set()) == (1.0, 1.0, 1.0)
    assert boundary_f1(set(), {2}) == (0.0, 1.0, 0.0)
    assert boundary_f1({2}, set()) == (1.0, 0.0, 0.0)


# ------------------------------------------------------------------ per dialogue


def test_score_dialogue_by_hand() -> None:
    scores = score_dialogue(6, {3}, set())
    assert scores["k"] == 2  # round(6 / 2 / 2) = round(1.5) = 2
    assert scores["pk"] == pytest.approx(2 / 5)
    assert scores["windowdiff"] == pytest.approx(2 / 5)
    assert (scores["precision"], scores["recall"], scores["f1"]) == (1.0, 0.0, 0.0)
    assert set(scores) == {*METRIC_KEYS, "k"}


def test_score_dialogue_perfect_and_degenerate() -> None:
    perfect = score_dialogue(10, {4, 7}, {4, 7})
    assert perfect["pk"] == perfect["windowdiff"] == 0.0
    assert perfect["f1"] == 1.0
    single = score_dialogue(1, set(), set())
    assert single["k"] == 1
    assert single["pk"] == single["windowdiff"] == 0.0
    with pytest.raises(ValueError):
        score_dialogue(0, set(), set())
    with pytest.raises(ValueError):
        score_dialogue(5, {5}, set())


def test_aggregate_averages_metrics() -> None:
    a = score_dialogue(6, {3}, set())
    b = score_dialogue(6, {3}, {3})
    result = aggregate([a, b])
    assert result["dialogues"] == 2
    assert result["pk"] == pytest.approx((2 / 5 + 0.0) / 2)
    assert result["f1"] == pytest.approx(0.5)
    assert result["precision"] == pytest.approx(1.0)
    assert "k" not in result
    with pytest.raises(ValueError):
        aggregate([])


# ------------------------------------------------------------------ baselines


def test_baselines() -> None:
    assert no_boundaries(5) == set()
    assert every_k(10, 4) == {4, 8}
    assert every_k(8, 4) == {4}
    assert every_k(3, 4) == set()
    assert all_boundaries(4) == {1, 2, 3}
    assert all_boundaries(1) == set()
    with pytest.raises(ValueError):
        every_k(10, 0)
