"""The learned scorer's model file, arming, and the shipped TIAGE models."""

import numpy as np
import pytest
from vectors import axis, message

from memq.worker.segmentation.detectors.base import DetectionInput
from memq.worker.segmentation.detectors.boundary_features import COSINES, TEXT_FEATURES, feature_names, feature_vector
from memq.worker.segmentation.detectors.learned import LearnedDetector, LinearModel, load_model
from memq.worker.segmentation.event_state import EventState

N = 4 * 8 + len(COSINES) + len(TEXT_FEATURES)


def model(weights, bias=0.0, high=0.5, low=0.3, lookahead=0):
    return LinearModel(
        np.zeros(N, np.float32), np.ones(N, np.float32), np.asarray(weights, np.float32), bias, high, low, lookahead
    )


def test_feature_vector_layout():
    x = feature_vector([axis(0), axis(1)], axis(1), [], "Do you like cars?", "yes", right=0)
    assert x.shape == (N,) and len(feature_names(8)) == N
    names = feature_names(8)
    assert x[names.index("cos_prev")] == pytest.approx(1.0)
    assert x[names.index("you_question")] == 1.0 and x[names.index("q_new")] == 1.0


def test_model_json_round_trip():
    m = model(np.arange(N) / N, bias=-1.5, high=0.4, low=0.2, lookahead=2)
    back = LinearModel.from_json(m.to_json())
    x = np.ones(N, np.float32)
    assert back.probability(x) == pytest.approx(m.probability(x), rel=1e-5)
    assert (back.high, back.low, back.lookahead) == (0.4, 0.2, 2)


def test_you_question_weight_triggers_and_rearms():
    w = np.zeros(N)
    w[feature_names(8).index("you_question")] = 10.0
    det = LearnedDetector(model(w, bias=-5.0))
    state = EventState(recent=[axis(0)], extras={"prev_text": "i like trains"})
    out = []
    for text in ("do you like cars?", "what do you drive?", "i drive a van", "how do you cook rice?"):
        v = det.check(DetectionInput([message(1)], message(2, text), axis(0), state))
        out.append(v.boundary)
        state = v.state if not v.boundary else det.start_event(message(2, text), axis(0), v.state)
    assert out == [True, False, False, True]
    assert state.extras["prev_text"] == "how do you cook rice?"


@pytest.mark.parametrize("name, lookahead", [("tiage_w2", 2), ("tiage_w0", 0)])
def test_shipped_models_load_and_say_how_they_were_trained(name, lookahead):
    m = load_model(name)
    assert isinstance(m, LinearModel)
    assert m.lookahead == lookahead and m.weights.shape == (4 * 384 + len(COSINES) + len(TEXT_FEATURES),)
    assert m.info["trained_on"] == "tiage_train.json" and 0 < m.low < m.high < 1


def test_look_ahead_setting_selects_the_matching_model_or_says_how_to_train_one():
    from memq.shared.errors import ConfigError
    from memq.shared.settings import Settings
    from memq.worker.segmentation.detectors.registry import build_detector

    assert build_detector(Settings(_env_file=None), "learned").lookahead == 2
    assert build_detector(Settings(lookahead_messages=0), "learned").lookahead == 0
    general = build_detector(Settings(lookahead_messages=0), "general")
    assert isinstance(general, LearnedDetector) and general.model.features == "general"
    assert build_detector(Settings(_env_file=None), "general").lookahead == 2
    assert build_detector(Settings(_env_file=None), "default").lookahead == 2
    with pytest.raises(ConfigError, match="--lookahead 5"):
        build_detector(Settings(lookahead_messages=5), "learned")
    with pytest.raises(ConfigError, match="--features general"):
        build_detector(Settings(lookahead_messages=5), "general")


def general_model(weights, bias=0.0, high=0.5, low=0.3, lookahead=0):
    from memq.worker.segmentation.detectors.general_features import GENERAL_FEATURES

    n = len(GENERAL_FEATURES)
    return LinearModel(
        np.zeros(n, np.float32),
        np.ones(n, np.float32),
        np.asarray(weights, np.float32),
        bias,
        high,
        low,
        lookahead,
        features="general",
    )


def test_general_model_round_trips_its_feature_set():
    m = general_model(np.ones(30))
    assert LinearModel.from_json(m.to_json()).features == "general"
    assert LinearModel.from_json(model(np.zeros(N)).to_json()).features == "embedding"


def test_general_detector_folds_every_message_into_the_conversation_statistics():
    from memq.worker.segmentation.detectors.general_features import GENERAL_FEATURES

    w = np.zeros(len(GENERAL_FEATURES))
    w[GENERAL_FEATURES.index("sim1")] = -20.0  # a dissimilar message is a boundary
    det = LearnedDetector(general_model(w, bias=10.0))
    state = det.observe(message(1), axis(0), EventState())
    assert "sims" not in state.extras  # nothing to compare the first message with
    state = det.observe(message(2), axis(0), state)
    assert state.extras["sims"][:2] == [1.0, 1.0]
    v = det.check(DetectionInput([message(1), message(2)], message(3), axis(1), state))
    assert v.boundary and v.factors["sim1"] == pytest.approx(0.0) and "z_sim1" in v.factors
    state = det.start_event(message(3), axis(1), v.state)
    assert state.extras["sims"][0] == 2.0 and state.extras["sims"][1] == pytest.approx(0.5)
    assert state.event_size == 1 and state.extras["prev_text"] == message(3).content
    v = det.check(DetectionInput([message(3)], message(4), axis(1), state))
    assert not v.boundary and v.state.extras["sims"][0] == 3.0


@pytest.mark.parametrize("features", ["embedding", "general"])
def test_the_state_keeps_only_the_embeddings_the_features_read(features):
    """The event state is written to Redis at every step (~2 kB per kept vector): a detector
    keeps the window its features read, and a longer window would not change a score."""
    from memq.worker.segmentation.detectors.general_features import GENERAL_FEATURES

    rng = np.random.default_rng(7)
    weights = rng.normal(size=N if features == "embedding" else len(GENERAL_FEATURES))
    det = LearnedDetector(model(weights) if features == "embedding" else general_model(weights))
    vectors = [v / np.linalg.norm(v) for v in rng.normal(size=(14, 8)).astype(np.float32)]
    state = EventState()
    for i, v in enumerate(vectors[:-1], start=1):
        state = det.observe(message(i), v, state)
    assert len(state.recent) == det.keep == (3 if features == "embedding" else 6)
    longer = state.evolve(recent=vectors[: len(vectors) - 1][-8:])  # what a window of 8 held
    new = DetectionInput([message(13)], message(14), vectors[-1], state)
    assert det.check(new).score == det.check(DetectionInput([message(13)], message(14), vectors[-1], longer)).score
