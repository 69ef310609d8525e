"""A gradient-boosted tree ensemble as a boundary score, evaluated with numpy alone.

``memq eval --train --model trees`` fits scikit-learn's HistGradientBoostingClassifier
and stores its trees as JSON (per tree: the feature and threshold of each split node,
its children, and the value of each leaf); scoring needs no scikit-learn. A row goes
left at a node when its feature is <= the threshold. The probability is the logistic
of the baseline plus the sum of the leaves reached. Same interface as ``LinearModel``
(``probability``, ``high`` / ``low``, ``lookahead``, ``features``, ``to_json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Tree:
    feature: np.ndarray  # per node; -1 at leaves
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray  # leaf values (0 at split nodes)

    def leaf_value(self, x: np.ndarray) -> float:
        node = 0
        while self.feature[node] >= 0:
            node = int(self.left[node] if x[self.feature[node]] <= self.threshold[node] else self.right[node])
        return float(self.value[node])

    def to_dict(self) -> dict[str, list[Any]]:
        return {
            "feature": [int(v) for v in self.feature],
            "threshold": [round(float(v), 7) for v in self.threshold],
            "left": [int(v) for v in self.left],
            "right": [int(v) for v in self.right],
            "value": [round(float(v), 7) for v in self.value],
        }

    @classmethod
    def from_dict(cls, d: dict[str, list[Any]]) -> Tree:
        return cls(
            np.array(d["feature"], dtype=np.int64),
            np.array(d["threshold"], dtype=np.float64),
            np.array(d["left"], dtype=np.int64),
            np.array(d["right"], dtype=np.int64),
            np.array(d["value"], dtype=np.float64),
        )


def model_header(kind: str, model: Any) -> dict[str, Any]:
    """The fields every model file starts with (what it is, what it reads, its thresholds)."""
    return {
        "kind": kind,
        "features": model.features,
        "lookahead": model.lookahead,
        "high": model.high,
        "low": model.low,
        "info": model.info,
    }


@dataclass(frozen=True)
class TreeModel:
    trees: tuple[Tree, ...]
    baseline: float
    high: float
    low: float
    lookahead: int
    info: dict[str, Any] = field(default_factory=dict)
    features: str = "style"

    def probability(self, x: np.ndarray) -> float:
        z = self.baseline + sum(t.leaf_value(x) for t in self.trees)
        return float(1.0 / (1.0 + np.exp(-z)))

    def to_json(self) -> str:
        return json.dumps(
            {
                **model_header("gradient_boosted_trees", self),
                "baseline": self.baseline,
                "trees": [t.to_dict() for t in self.trees],
            },
            indent=None,
        )

    @classmethod
    def from_json(cls, text: str) -> TreeModel:
        d = json.loads(text)
        return cls(
            tuple(Tree.from_dict(t) for t in d["trees"]),
            float(d["baseline"]),
            float(d["high"]),
            float(d["low"]),
            int(d["lookahead"]),
            d.get("info", {}),
            d.get("features", "style"),
        )
