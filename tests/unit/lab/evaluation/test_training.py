import numpy as np
import pytest

from memq_lab.evaluation.training import fit_logistic


def test_logistic_regression_separates_a_noisy_linear_rule():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 5))
    y = (X[:, 0] - 2 * X[:, 3] + 0.3 * rng.normal(size=600) > 0).astype(float)
    mean, scale, w, b = fit_logistic(X, y, c=1.0)
    p = 1 / (1 + np.exp(-(((X - mean) / scale) @ w + b)))
    assert ((p > 0.5) == (y == 1)).mean() > 0.95
    assert w[0] > 0 and w[3] < 0 and abs(w[1]) < abs(w[0]) / 5


def test_stronger_regularisation_shrinks_weights():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(float)
    assert np.abs(fit_logistic(X, y, c=0.001)[2]).sum() < np.abs(fit_logistic(X, y, c=10.0)[2]).sum()


def _dialogue(name, n, boundaries=()):
    from memq_lab.evaluation.datasets import Dialogue

    return Dialogue(
        "t", name, [("A" if i % 2 == 0 else "B", f"{name} says {i}") for i in range(n)], frozenset(boundaries)
    )


def test_stitched_streams_mark_junctions_and_keep_gold_boundaries():
    from memq_lab.evaluation.training import stitch

    dialogues = [_dialogue("a", 4, {2}), _dialogue("b", 5), _dialogue("c", 3, {1})]
    vectors = [np.full((len(d), 2), k, dtype=np.float32) for k, d in enumerate(dialogues)]
    streams, stream_vectors = stitch(dialogues, vectors, 4, parts=3, seed=1)
    assert len(streams) == 4
    for s, v in zip(streams, stream_vectors):
        assert len(s) == 12 == len(v)
        starts = [0]
        for i in range(1, len(s)):
            if s.utterances[i][1].split()[0] != s.utterances[i - 1][1].split()[0]:
                starts.append(i)
        junctions = set(starts[1:])
        own = {
            start + b
            for start in starts
            for d in dialogues
            if d.utterances[0][1] == s.utterances[start][1]
            for b in d.boundaries
        }
        assert s.boundaries == frozenset(junctions | own)
        for i in range(len(s)):  # each utterance keeps its own vector
            name = s.utterances[i][1].split()[0]
            assert v[i][0] == "abc".index(name)


def test_general_rows_are_teacher_forced():
    from memq.worker.segmentation.detectors.general_features import EVENT_CAP, GENERAL_FEATURES
    from memq_lab.evaluation.training import rows

    d = _dialogue("a", 6, {3})
    E = np.eye(6, 4, dtype=np.float32)
    E[:, 0] = 1.0
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    X, y = rows([d], [E], 1, "general")
    assert X.shape == (5, len(GENERAL_FEATURES)) and y.tolist() == [0, 0, 1, 0, 0]
    size = X[:, GENERAL_FEATURES.index("event_size")] * EVENT_CAP
    assert size.round().tolist() == [1, 2, 3, 1, 2]  # counted from the previous gold boundary
    assert X[:, GENERAL_FEATURES.index("user_new")].tolist() == [0, 1, 0, 1, 0]


def test_style_rows_append_the_conversation_style():
    from memq.worker.segmentation.detectors.general_features import GENERAL_FEATURES
    from memq.worker.segmentation.detectors.style_features import POSITION_CAP, STYLE_FEATURES
    from memq_lab.evaluation.training import rows

    d = _dialogue("a", 6, {3})
    E = np.eye(6, 4, dtype=np.float32)
    X, y = rows([d], [E], 1, "style")
    assert X.shape == (5, len(GENERAL_FEATURES) + len(STYLE_FEATURES)) and y.tolist() == [0, 0, 1, 0, 0]
    position = X[:, len(GENERAL_FEATURES) + STYLE_FEATURES.index("position")] * POSITION_CAP
    assert position.round().tolist() == [2, 3, 4, 5, 6]  # messages so far, the new one included


def test_exported_trees_score_as_scikit_learn_does():
    from sklearn.ensemble import HistGradientBoostingClassifier

    from memq.worker.segmentation.detectors.tree_model import TreeModel
    from memq_lab.evaluation.training import TREE_PARAMS, fit_trees

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = ((X[:, 0] * X[:, 1] > 0) ^ (rng.random(400) < 0.1)).astype(float)
    trees, baseline = fit_trees(X, y, np.ones(400))
    model = TreeModel(trees, baseline, 0.5, 0.35, 0)
    reference = HistGradientBoostingClassifier(random_state=0, **TREE_PARAMS).fit(X, y).predict_proba(X[:20])[:, 1]
    assert [model.probability(x) for x in X[:20]] == pytest.approx(reference.tolist(), abs=1e-6)
