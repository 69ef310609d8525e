"""The domain-general boundary features: gap similarities, depth scores, the
conversation's running similarity statistics."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from vectors import axis

from memq.worker.segmentation.detectors.general_features import (
    EVENT_CAP,
    GENERAL_FEATURES,
    PRIOR_MEAN,
    STATS_HORIZON,
    SimilarityStats,
    depth,
    gap_similarity,
    general_features,
)

FRESH = SimilarityStats()


def features(recent, new, ahead=(), *, right=2, stats=FRESH, user=True, size=3, text="and you?"):
    x = general_features(
        recent, new, list(ahead), text, "i like trains", right=right, stats=stats, user_new=user, event_size=size
    )
    return dict(zip(GENERAL_FEATURES, x.tolist(), strict=True))


def test_layout_and_a_clean_topic_change():
    a, b = axis(0), axis(1)
    f = features([a, a, a], b, [b, b])
    assert len(f) == len(GENERAL_FEATURES)
    assert f["sim1"] == pytest.approx(0.0) and f["sim2"] == pytest.approx(0.0) and f["sim3"] == pytest.approx(0.0)
    # every neighbouring gap lies inside one topic (similarity 1): the change is a valley of depth 2
    assert f["depth1"] == pytest.approx(2.0) and f["depth1_left"] == pytest.approx(1.0)
    assert f["cos_next_prev"] == pytest.approx(0.0) and f["cos_next_new"] == pytest.approx(1.0)
    assert f["user_new"] == 1.0 and f["event_size"] == pytest.approx(3 / EVENT_CAP) and f["q_new"] == 1.0


def test_no_change_has_no_depth_and_look_ahead_is_cut_to_right():
    a = axis(0)
    f = features([a, a], a, [axis(1), axis(1)], right=0)
    assert f["sim1"] == pytest.approx(1.0) and f["depth1"] == pytest.approx(0.0)
    assert f["depth2_right"] == pytest.approx(0.0)  # the look-ahead is not read without right
    assert f["cos_next_prev"] == pytest.approx(1.0)  # no look-ahead: the new message stands in


def test_event_size_is_capped():
    assert features([axis(0)], axis(0), size=500)["event_size"] == 1.0


def test_gap_similarity_cuts_windows_to_what_exists():
    seq = [axis(0), axis(1), axis(1)]
    assert gap_similarity(seq, 1, 3) == pytest.approx(0.0)
    assert gap_similarity(seq, 2, 1) == pytest.approx(1.0)
    assert depth(seq, 2, 1) == pytest.approx((0.0, 0.0))


def _cosine_of_means(seq, gap, k):
    left, right = np.mean(seq[max(0, gap - k) : gap], axis=0), np.mean(seq[gap : gap + k], axis=0)
    norms = np.linalg.norm(left) * np.linalg.norm(right)
    return float(left @ right / norms) if norms else 0.0


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 12),
    k=st.integers(1, 4),
    data=st.data(),
)
def test_window_sums_give_the_cosine_of_the_window_means(seed, n, k, data):
    """Every similarity comes from the prefix sums of the window (one pass); it is the
    cosine of the means as written out, and depths the valley of those."""
    seq = list(np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32))
    gap = data.draw(st.integers(1, n - 1))
    assert gap_similarity(seq, gap, k) == pytest.approx(_cosine_of_means(seq, gap, k), abs=1e-6)
    around = [_cosine_of_means(seq, g, k) for g in range(max(1, gap - 3), min(n, gap + 4))]
    own = _cosine_of_means(seq, gap, k)
    at = gap - max(1, gap - 3)
    expected = (max(around[: at + 1]) - own, max(around[at:]) - own)
    assert depth(seq, gap, k) == pytest.approx(expected, abs=1e-6)


def test_calibration_reads_the_conversation_not_the_domain():
    """A cosine of 0.5 is low in a conversation whose messages are all alike and high in one
    whose messages all differ."""
    alike, differ = SimilarityStats(), SimilarityStats()
    for _ in range(30):
        alike, differ = alike.update(0.8), differ.update(0.1)
    assert alike.z(0.5) < -1.0 < 1.0 < differ.z(0.5)


def test_a_fresh_conversation_uses_the_prior():
    assert SimilarityStats().z(PRIOR_MEAN) == pytest.approx(0.0)
    assert SimilarityStats().z(PRIOR_MEAN - 0.15) == pytest.approx(-1.0)


@given(st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=60))
def test_running_statistics_are_the_mean_and_variance(values):
    stats = SimilarityStats()
    for v in values:
        stats = stats.update(v)
    assert stats.count == len(values)
    if len(values) <= STATS_HORIZON:
        assert stats.mean == pytest.approx(float(np.mean(values)), abs=1e-9)
        assert stats.var == pytest.approx(float(np.var(values)), abs=1e-9)
    assert SimilarityStats.from_list(stats.to_list()).mean == pytest.approx(stats.mean, abs=1e-6)
    assert -5.0 <= stats.z(values[0]) <= 5.0


def test_statistics_forget_after_the_horizon():
    stats = SimilarityStats()
    for _ in range(STATS_HORIZON):
        stats = stats.update(0.0)
    for _ in range(3 * STATS_HORIZON):
        stats = stats.update(1.0)
    assert stats.mean > 0.9
