"""The conversation's style statistics and the tree model that reads them."""

import math

import numpy as np
import pytest
from vectors import axis, message

from memq.worker.segmentation.detectors.base import DetectionInput
from memq.worker.segmentation.detectors.general_features import GENERAL_FEATURES, PRIOR_MEAN, SimilarityStats
from memq.worker.segmentation.detectors.learned import LearnedDetector
from memq.worker.segmentation.detectors.style_features import (
    POSITION_CAP,
    STYLE_FEATURES,
    length_value,
    style_features,
)
from memq.worker.segmentation.detectors.tree_model import Tree, TreeModel
from memq.worker.segmentation.event_state import EventState


def test_length_is_log_words():
    assert length_value("") == 0.0 and length_value("one two three") == pytest.approx(math.log(4))


def test_style_layout_prior_and_position():
    lengths = SimilarityStats().update(1.0).update(3.0)
    f = dict(zip(STYLE_FEATURES, style_features(SimilarityStats(), lengths).tolist(), strict=True))
    assert f["conv_sim_mean"] == pytest.approx(PRIOR_MEAN)  # no cosines yet: the prior
    assert f["conv_len_mean"] == pytest.approx(2.0) and f["conv_len_sd"] == pytest.approx(1.0)
    assert f["position"] == pytest.approx(2 / POSITION_CAP)


def stump(feature: int, threshold: float, left: float, right: float) -> Tree:
    return Tree(
        np.array([feature, -1, -1]),
        np.array([threshold, 0.0, 0.0]),
        np.array([1, 0, 0]),
        np.array([2, 0, 0]),
        np.array([0.0, left, right]),
    )


def test_tree_model_sums_leaves_and_round_trips():
    m = TreeModel((stump(0, 0.5, -2.0, 2.0), stump(1, 0.0, 0.0, 1.0)), -0.5, 0.6, 0.45, 2, {"x": 1})
    assert m.probability(np.array([0.0, 0.0])) == pytest.approx(1 / (1 + math.exp(2.5)))
    assert m.probability(np.array([1.0, 1.0])) == pytest.approx(1 / (1 + math.exp(-2.5)))
    back = TreeModel.from_json(m.to_json())
    assert back.probability(np.array([1.0, 0.0])) == pytest.approx(m.probability(np.array([1.0, 0.0])))
    assert (back.high, back.low, back.lookahead, back.features, back.info) == (0.6, 0.45, 2, "style", {"x": 1})


def test_style_detector_folds_every_message_length():
    sim1 = GENERAL_FEATURES.index("sim1")
    det = LearnedDetector(TreeModel((stump(sim1, 0.5, 5.0, -5.0),), 0.0, 0.5, 0.3, 0))
    state = det.observe(message(1, "two words"), axis(0), EventState())
    assert state.extras["lens"][:2] == [1.0, pytest.approx(math.log(3), abs=1e-6)]
    state = det.observe(message(2, "two words"), axis(0), state)
    v = det.check(DetectionInput([message(1), message(2)], message(3, "a dissimilar message"), axis(1), state))
    assert v.boundary  # sim1 = 0 goes left: +5
    state = det.start_event(message(3, "a dissimilar message"), axis(1), v.state)
    assert state.extras["lens"][0] == 3.0 and state.extras["sims"][0] == 2.0


def test_shipped_style_model_loads_and_says_how_it_was_trained():
    from memq.shared.errors import ConfigError
    from memq.shared.settings import Settings
    from memq.worker.segmentation.detectors.learned import load_model
    from memq.worker.segmentation.detectors.registry import build_detector

    m = load_model("style_w2")
    assert isinstance(m, TreeModel) and m.features == "style" and m.lookahead == 2 and 0 < m.low < m.high < 1
    assert m.info["trained_on"] == ["tiage_train.json", "superdialseg_validation.jsonl"]
    features = len(GENERAL_FEATURES) + len(STYLE_FEATURES)
    assert all(int(t.feature.max()) < features for t in m.trees)
    assert build_detector(Settings(_env_file=None), "style").lookahead == 2
    with pytest.raises(ConfigError, match="--model trees"):
        build_detector(Settings(lookahead_messages=0), "style")


def test_blend_averages_the_logits_and_round_trips():
    from memq.worker.segmentation.detectors.blend_model import BlendModel
    from memq.worker.segmentation.detectors.learned import LinearModel, model_from_json

    linear = LinearModel(np.zeros(1), np.ones(1), np.array([2.0]), 0.0, 0.5, 0.3, 2, features="general")
    trees = TreeModel((stump(1, 0.5, -1.0, 3.0),), 0.0, 0.5, 0.3, 2)
    m = BlendModel(linear, trees, 1, 0.5, 0.55, 0.4, 2, {"x": 1})
    x = np.array([1.0, 1.0])  # linear logit 2, trees logit 3
    assert m.probability(x) == pytest.approx(1 / (1 + math.exp(-2.5)))
    back = model_from_json(m.to_json())
    assert isinstance(back, BlendModel) and back.probability(x) == pytest.approx(m.probability(x), rel=1e-5)
    assert (back.high, back.low, back.lookahead, back.weight, back.info) == (0.55, 0.4, 2, 0.5, {"x": 1})


def test_shipped_blend_model_loads():
    from memq.shared.settings import Settings
    from memq.worker.segmentation.detectors.blend_model import BlendModel
    from memq.worker.segmentation.detectors.learned import load_model
    from memq.worker.segmentation.detectors.registry import build_detector

    m = load_model("blend_w2")
    assert isinstance(m, BlendModel) and m.linear_features == len(GENERAL_FEATURES) and m.lookahead == 2
    assert m.info["trained_on"] == ["tiage_train.json", "superdialseg_validation.jsonl"] and 0 < m.low < m.high < 1
    assert build_detector(Settings(_env_file=None), "blend").lookahead == 2
