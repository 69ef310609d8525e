"""The tree ensemble's score: every tree walked at once (``tree_model._Forest``) reaches
the same leaves as walking each tree node by node (``Tree.leaf_value``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from memq.worker.segmentation.detectors.blend_model import BlendModel
from memq.worker.segmentation.detectors.learned import load_model
from memq.worker.segmentation.detectors.tree_model import Tree, TreeModel

FEATURES = 4


@st.composite
def trees(draw, depth: int = 4) -> Tree:
    """A random binary tree over ``FEATURES`` features, nodes numbered as they are made."""
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    value: list[float] = []

    def node(level: int) -> int:
        i = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(0)
        right.append(0)
        value.append(0.0)
        if level < depth and draw(st.booleans()):
            feature[i] = draw(st.integers(0, FEATURES - 1))
            threshold[i] = draw(st.floats(-2, 2))
            left[i] = node(level + 1)
            right[i] = node(level + 1)
        else:
            value[i] = draw(st.floats(-1, 1))
        return i

    node(0)
    return Tree(*(np.array(a) for a in (feature, threshold, left, right, value)))


def one_by_one(model: TreeModel, x: np.ndarray) -> float:
    return model.baseline + sum(t.leaf_value(x) for t in model.trees)


@settings(max_examples=200, deadline=None)
@given(
    ensemble=st.lists(trees(), min_size=1, max_size=8),
    x=arrays(np.float64, FEATURES, elements=st.floats(-3, 3) | st.just(float("nan"))),
)
def test_all_trees_at_once_reach_the_leaves_each_tree_does(ensemble, x):
    model = TreeModel(tuple(ensemble), 0.25, 0.5, 0.3, 2)
    z = np.log(model.probability(x) / (1 - model.probability(x)))
    assert z == pytest.approx(one_by_one(model, x), abs=1e-9)


def test_the_shipped_blend_models_trees_score_as_before():
    blend = load_model("blend_w2")
    assert isinstance(blend, BlendModel) and isinstance(blend.trees, TreeModel)
    trees_part = blend.trees
    width = max(int(t.feature.max()) for t in trees_part.trees) + 1
    rows = np.random.default_rng(7).standard_normal((200, width))
    rows[::5, 2] = np.nan
    for x in rows:
        expected = 1 / (1 + np.exp(-one_by_one(trees_part, x)))
        assert trees_part.probability(x) == pytest.approx(expected, abs=1e-12)
