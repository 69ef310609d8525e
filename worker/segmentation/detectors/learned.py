"""A learned boundary scorer inside episodic_agent's hysteresis: the boundary score is a
logistic regression (weighted factors whose weights were fit on labelled dialogues),
triggering when armed at ``high`` and re-arming below ``low``.

A model names the features it reads: ``embedding`` (``boundary_features``: embedding
interactions, cosines and dialogue-act cues; the TIAGE models) or ``general``
(``general_features``: gap similarities, depth scores, similarities calibrated to the
conversation, dialogue-act cues, the speaker and the event's size; the cross-domain
model) or ``style`` (the general features and the conversation's style,
``style_features``, read by a gradient-boosted tree model, ``tree_model``). For
``general`` and ``style`` the detector keeps the conversation's running cosine
statistics in the event state (``extras["sims"]``), and for ``style`` its running
message lengths (``extras["lens"]``), folding in every message.

Model files live in ``models/`` as JSON (feature means and scales, weights, bias,
thresholds, the look-ahead it was trained for, and how it was trained), written by
``memq eval --train``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from memq.shared.errors import ConfigError
from memq.shared.mailbox.codec import QueuedMessage
from memq.worker.segmentation.detectors.base import DetectionInput, Verdict
from memq.worker.segmentation.detectors.blend_model import BlendModel
from memq.worker.segmentation.detectors.boundary_features import COSINES, TEXT_FEATURES, feature_vector
from memq.worker.segmentation.detectors.boundary_features import HISTORY as EMBEDDING_HISTORY
from memq.worker.segmentation.detectors.general_features import GENERAL_FEATURES, SimilarityStats, general_features
from memq.worker.segmentation.detectors.general_features import HISTORY as GENERAL_HISTORY
from memq.worker.segmentation.detectors.hysteresis import new_event, remember
from memq.worker.segmentation.detectors.style_features import length_value, style_features
from memq.worker.segmentation.detectors.tree_model import TreeModel
from memq.worker.segmentation.event_state import PREV_TEXT, EventState
from memq.worker.segmentation.signals import cosine

MODELS = Path(__file__).parent / "models"


@dataclass(frozen=True)
class LinearModel:
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    high: float
    low: float
    lookahead: int
    info: dict[str, Any] = field(default_factory=dict)
    features: str = "embedding"  # which feature function the weights read: embedding | general

    def probability(self, x: np.ndarray) -> float:
        z = float(((x - self.mean) / self.scale) @ self.weights + self.bias)
        p: float = 1.0 / (1.0 + np.exp(-z))
        return p

    def to_json(self) -> str:
        return json.dumps(
            {
                "kind": "logistic_regression",
                "features": self.features,
                "lookahead": self.lookahead,
                "high": self.high,
                "low": self.low,
                "bias": self.bias,
                "mean": [round(float(v), 6) for v in self.mean],
                "scale": [round(float(v), 6) for v in self.scale],
                "weights": [round(float(v), 6) for v in self.weights],
                "info": self.info,
            },
            indent=None,
        )

    @classmethod
    def from_json(cls, text: str) -> LinearModel:
        d = json.loads(text)
        return cls(
            np.array(d["mean"], dtype=np.float32),
            np.array(d["scale"], dtype=np.float32),
            np.array(d["weights"], dtype=np.float32),
            float(d["bias"]),
            float(d["high"]),
            float(d["low"]),
            int(d["lookahead"]),
            d.get("info", {}),
            d.get("features", "embedding"),
        )


BoundaryModel = LinearModel | TreeModel | BlendModel


def model_from_json(text: str) -> BoundaryModel:
    """A model file of any kind (``logistic_regression``, ``gradient_boosted_trees``, ``blend``)."""
    d = json.loads(text)
    kind = d.get("kind")
    if kind == "gradient_boosted_trees":
        return TreeModel.from_json(text)
    if kind == "blend":
        return BlendModel(
            LinearModel.from_json(json.dumps(d["linear"])),
            TreeModel.from_json(json.dumps(d["trees"])),
            int(d["linear_features"]),
            float(d["weight"]),
            float(d["high"]),
            float(d["low"]),
            int(d["lookahead"]),
            d.get("info", {}),
            d.get("features", "style"),
        )
    return LinearModel.from_json(text)


@functools.lru_cache(maxsize=8)
def load_model(name: str) -> BoundaryModel:
    path = MODELS / f"{name}.json"
    if not path.exists():
        raise ConfigError(f"boundary model {name!r} not found in {MODELS}; train it with `memq eval --train`")
    return model_from_json(path.read_text())


@dataclass
class LearnedDetector:
    model: BoundaryModel
    name: str = "learned"
    needs_embeddings: bool = True

    @property
    def lookahead(self) -> int:
        return self.model.lookahead

    @property
    def keep(self) -> int:
        """Earlier messages' embeddings kept in the event state: what the model's features
        read, no more. The state is written to Redis at every step, 2 kB per vector as
        stored: a window of 8 made it ~18 kB of writes per message."""
        return GENERAL_HISTORY if self.model.features in ("general", "style") else EMBEDDING_HISTORY

    def score(self, data: DetectionInput) -> tuple[float, dict[str, float]]:
        """The model's boundary probability for ``data.new`` (the event has a message) and
        the factors logged with it."""
        state = data.state
        prev_text = state.extras.get(PREV_TEXT, "")
        embedding = cast(np.ndarray, data.embedding)  # needs_embeddings: the drain embeds every message
        if self.model.features in ("general", "style"):
            stats = SimilarityStats.from_list(state.extras.get("sims"))
            x = general_features(
                state.recent,
                embedding,
                list(data.lookahead),
                data.new.content,
                prev_text,
                right=self.model.lookahead,
                stats=stats,
                user_new=data.new.role == "user",
                event_size=state.event_size,
            )
            if self.model.features == "style":
                lengths = SimilarityStats.from_list(state.extras.get("lens")).update(length_value(data.new.content))
                x = np.concatenate([x, style_features(stats, lengths)])
            f = {name: float(x[GENERAL_FEATURES.index(name)]) for name in ("sim1", "depth2", "z_sim1", "event_size")}
        else:
            x = feature_vector(
                state.recent, embedding, list(data.lookahead), data.new.content, prev_text, right=self.model.lookahead
            )
            cos = x[-(len(COSINES) + len(TEXT_FEATURES)) :]
            f = {"cos_prev": float(cos[0]), "cos_left_right": float(cos[2]), "you_question": float(x[-6])}
        p = float(self.model.probability(x))
        return p, {"p": p, **f}

    def evaluate(self, data: DetectionInput) -> tuple[bool, float, dict[str, float], EventState]:
        """The hysteresis over ``score``: trigger when armed at ``high``, re-arm below ``low``."""
        state = data.state
        if not state.recent:
            return False, 0.0, {}, state
        p, f = self.score(data)
        armed = state.armed
        trigger = bool(armed and p >= self.model.high)
        if trigger:
            armed = False
        elif p < self.model.low:
            armed = True
        return trigger, p, f, state.evolve(armed=armed)

    def check(self, data: DetectionInput) -> Verdict:
        trigger, p, f, state = self.evaluate(data)
        surprise = 0.0
        if state.event_model_embedding is not None:
            surprise = min(1.0, max(0.0, 1.0 - cosine(state.event_model_embedding, cast(np.ndarray, data.embedding))))
        if not trigger:
            state = self.observe(data.new, data.embedding, state)
        return Verdict(
            boundary=trigger,
            state=state,
            surprise=surprise,
            reason="learned_boundary",
            source="embedding",
            score=p,
            factors=f,
        )

    def _fold(self, state: EventState, message: QueuedMessage, embedding: np.ndarray | None) -> dict[str, Any]:
        """The extras with this message's cosine to the previous one folded into the
        conversation's running statistics (``general`` and ``style`` models), and its
        length into the running lengths (``style`` models)."""
        extras = state.extras
        if self.model.features == "style":
            lens = SimilarityStats.from_list(extras.get("lens")).update(length_value(message.content))
            extras = {**extras, "lens": lens.to_list()}
        if self.model.features not in ("general", "style") or embedding is None or not state.recent:
            return extras
        return {**extras, "sims": fold_similarity(extras.get("sims"), state.recent[-1], embedding)}

    def observe(self, message: QueuedMessage, embedding: np.ndarray | None, state: EventState) -> EventState:
        extras = self._fold(state, message, embedding)
        state = remember(state, embedding, self.keep)
        return state.evolve(extras={**extras, PREV_TEXT: message.content[:500]})

    def start_event(self, edge: QueuedMessage | None, embedding: np.ndarray | None, state: EventState) -> EventState:
        extras = self._fold(state, edge, embedding) if edge is not None else state.extras
        fresh = new_event(state.evolve(extras=extras), edge, embedding, self.keep)
        if edge is not None:
            fresh = fresh.evolve(extras={**fresh.extras, PREV_TEXT: edge.content[:500]})
        return fresh


def fold_similarity(stats: list[float] | None, previous: np.ndarray, embedding: np.ndarray) -> list[float]:
    """Running statistics (as stored in the event state) updated with one adjacent cosine."""
    return SimilarityStats.from_list(stats).update(float(previous @ embedding)).to_list()
