"""The ``rules`` detector: never finds a boundary itself, so events end only by the
rule layer (50 messages, 15-minute gaps, the 4,000-token budget) or by flush and
inactivity collapse. Needs no embeddings: the cheapest profile."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memq.shared.mailbox.codec import QueuedMessage
from memq.worker.segmentation.detectors.base import DetectionInput, Verdict
from memq.worker.segmentation.event_state import EventState


@dataclass
class RulesOnlyDetector:
    name: str = "rules"
    needs_embeddings: bool = False
    lookahead: int = 0

    def check(self, data: DetectionInput) -> Verdict:
        return Verdict(boundary=False, state=data.state, reason="no_detector", source="rules")

    def observe(self, message: QueuedMessage, embedding: np.ndarray | None, state: EventState) -> EventState:
        return state

    def start_event(self, edge: QueuedMessage | None, embedding: np.ndarray | None, state: EventState) -> EventState:
        return state.evolve(event_model=None, event_model_embedding=None, last_embedding=None, armed=True, extras={})
