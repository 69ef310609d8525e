"""A boundary score that averages two models' logits: the linear model over the general
features (which transfers best to a kind of conversation no training set covers) and the
tree model over the general and style features (best on the kinds it was fit on).

``memq eval --train --model blend`` fits both on the same rows; the linear part reads the
first ``len(linear.weights)`` features of the tree model's row (the general features).
Same interface as ``LinearModel`` (``probability``, ``high`` / ``low``, ``lookahead``,
``features``, ``to_json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from memq.worker.segmentation.detectors.tree_model import model_header


class Part(Protocol):
    def probability(self, x: np.ndarray) -> float: ...

    def to_json(self) -> str: ...


def _logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return float(np.log(p / (1 - p)))


@dataclass(frozen=True)
class BlendModel:
    linear: Part
    trees: Part
    linear_features: int  # the linear part reads x[:linear_features]
    weight: float  # of the trees' logit; the linear one gets 1 - weight
    high: float
    low: float
    lookahead: int
    info: dict[str, Any] = field(default_factory=dict)
    features: str = "style"

    def probability(self, x: np.ndarray) -> float:
        z = (1 - self.weight) * _logit(self.linear.probability(x[: self.linear_features])) + self.weight * _logit(
            self.trees.probability(x)
        )
        return float(1.0 / (1.0 + np.exp(-z)))

    def to_json(self) -> str:
        return json.dumps(
            {
                **model_header("blend", self),
                "weight": self.weight,
                "linear_features": self.linear_features,
                "linear": json.loads(self.linear.to_json()),
                "trees": json.loads(self.trees.to_json()),
            },
            indent=None,
        )
