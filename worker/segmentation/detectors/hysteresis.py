"""episodic_agent's hysteresis boundary detector, for conversations.

A boundary score from weighted factors, clamped to [0, 1]:

================  ==========================================================  ============
factor            value                                                       seed analog
================  ==========================================================  ============
prediction error  1 - cos(event centroid, new message)                        prediction_error
topic drift       1 - cos(mean of last ``window`` messages, mean of new +      salient events
                  look-ahead messages)
previous drop     1 - cos(previous message, new message)                       (new)
discourse marker  1.0 opening "by the way", "anyway"...; 0.5 inside            location change
time factor       min(messages in event / time_interval, 1)                    time interval
================  ==========================================================  ============

``score = bias + sum(weight x factor)``. It triggers when armed and the score reaches
``high``; after a trigger it re-arms only once a score falls below ``low``, which
stops rapid boundary/un-boundary oscillation. Each message's score and factors go
to the verbose log: ``Boundary score: 0.85 (pred=.., drift=..) -> TRIGGER``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np

from memq.shared.mailbox.codec import QueuedMessage
from memq.worker.segmentation.detectors.base import DetectionInput, Verdict
from memq.worker.segmentation.event_state import EventState
from memq.worker.segmentation.signals import centroid_update, cosine, discourse_marker, mean_vector


@dataclass(frozen=True)
class HysteresisParams:
    high: float = 0.8  # episodic_agent boundary_high_threshold
    low: float = 0.3  # episodic_agent boundary_low_threshold
    time_interval: int = 100  # episodic_agent boundary_time_interval (messages here)
    prediction_weight: float = 0.3  # episodic_agent
    drift_weight: float = 0.5  # episodic_agent event_weight
    drop_weight: float = 0.0
    marker_weight: float = 1.0  # episodic_agent location_weight: an explicit change of scene
    time_weight: float = 0.2  # episodic_agent
    bias: float = 0.0
    window: int = 3  # messages in the left window for drift

    def describe(self) -> str:
        return (
            f"high={self.high} low={self.low} pred={self.prediction_weight} drift={self.drift_weight} "
            f"drop={self.drop_weight} marker={self.marker_weight} time={self.time_weight}/{self.time_interval} "
            f"bias={self.bias} window={self.window}"
        )


def factors(
    state: EventState, text: str, embedding: np.ndarray, lookahead: list[np.ndarray], window: int, time_interval: int
) -> dict[str, float]:
    pred = (
        0.0 if state.event_model_embedding is None else max(0.0, 1.0 - cosine(state.event_model_embedding, embedding))
    )
    left = mean_vector(state.recent[-window:]) if window else None
    right = mean_vector([embedding, *lookahead])
    assert right is not None  # the mean of at least the message's own vector
    drift = 0.0 if left is None else max(0.0, 1.0 - cosine(left, right))
    drop = 0.0 if not state.recent else max(0.0, 1.0 - cosine(state.recent[-1], embedding))
    return {
        "pred": pred,
        "drift": drift,
        "drop": drop,
        "marker": discourse_marker(text),
        "time": min(state.event_size / max(1, time_interval), 1.0),
    }


def score(f: dict[str, float], p: HysteresisParams) -> float:
    raw = (
        p.bias
        + p.prediction_weight * f["pred"]
        + p.drift_weight * f["drift"]
        + p.drop_weight * f["drop"]
        + p.marker_weight * f["marker"]
        + p.time_weight * f["time"]
    )
    return min(1.0, max(0.0, raw))


def remember(state: EventState, embedding: np.ndarray | None, keep: int) -> EventState:
    """Fold a message into the open event: centroid, size and the recent window."""
    if embedding is None:
        return state.evolve(event_size=state.event_size + 1)
    changes = {
        "recent": [*state.recent, embedding][-keep:],
        "event_size": state.event_size + 1,
    }
    if state.event_model is None:  # no LLM event model: the centroid stands for it
        changes["event_model_embedding"] = centroid_update(state.event_model_embedding, state.event_size, embedding)
    return state.evolve(**changes)


def new_event(state: EventState, edge: QueuedMessage | None, embedding: np.ndarray | None, keep: int) -> EventState:
    """Reset after a boundary; the edge message (if kept) opens the next event and
    initialises its last embedding (Plast Mem). The recent window spans boundaries:
    it describes the local context, not the event."""
    fresh = state.evolve(event_model=None, event_model_embedding=None, last_embedding=None, event_size=0)
    if edge is None:
        return fresh
    return remember(fresh, embedding, keep).evolve(last_embedding=embedding)


@dataclass
class HysteresisDetector:
    params: HysteresisParams = field(default_factory=HysteresisParams)
    name: str = "hysteresis"
    needs_embeddings: bool = True
    lookahead: int = 0

    @property
    def keep(self) -> int:
        """Earlier messages' embeddings kept in the event state: the drift window and the
        previous message, what ``evaluate`` reads (the state is written at every step)."""
        return max(1, self.params.window)

    def evaluate(self, data: DetectionInput) -> tuple[bool, float, dict[str, float], EventState]:
        """Score ``data.new`` and apply hysteresis; the state is updated for arming only."""
        f = factors(
            data.state,
            data.new.content,
            cast(np.ndarray, data.embedding),  # needs_embeddings: the drain embeds every message
            list(data.lookahead),
            self.params.window,
            self.params.time_interval,
        )
        s = float(score(f, self.params))
        armed = data.state.armed
        trigger = bool(armed and s >= self.params.high)
        if trigger:
            armed = False
        elif s < self.params.low:
            armed = True
        return trigger, s, f, data.state.evolve(armed=armed)

    def check(self, data: DetectionInput) -> Verdict:
        trigger, s, f, state = self.evaluate(data)
        surprise = f["pred"]
        if not trigger:
            state = remember(state, data.embedding, self.keep)
        return Verdict(
            boundary=trigger,
            state=state,
            surprise=min(1.0, surprise),
            reason="hysteresis",
            source="embedding",
            score=s,
            factors=f,
        )

    def observe(self, message: QueuedMessage, embedding: np.ndarray | None, state: EventState) -> EventState:
        return remember(state, embedding, self.keep)

    def start_event(self, edge: QueuedMessage | None, embedding: np.ndarray | None, state: EventState) -> EventState:
        return new_event(state, edge, embedding, self.keep)
