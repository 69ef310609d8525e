"""The detector interface.

The rule layer asks a detector only when no rule decided (``RuleAction.DETECT``). A
detector sees the open event, the new message and its embedding, and the persisted
``EventState``; it returns a ``Verdict`` with the updated state. Detectors are pure
apart from an optional injected LLM adapter, so they are unit-tested on hand-made
embedding sequences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from memq.shared.mailbox.codec import QueuedMessage
from memq.worker.segmentation.event_state import EventState


@dataclass(frozen=True)
class DetectionInput:
    buffer: Sequence[QueuedMessage]  # the open event, before the new message
    new: QueuedMessage
    embedding: np.ndarray | None  # unit-normalised; None when the detector needs none
    state: EventState
    lookahead: Sequence[np.ndarray] = ()  # embeddings of the next messages, when look-ahead is on


@dataclass(frozen=True)
class Verdict:
    boundary: bool
    state: EventState
    surprise: float = 0.0
    reason: str = ""  # which channel or factor decided
    source: str = "rules"  # "embedding", "llm", "hysteresis", ...
    score: float | None = None
    factors: dict[str, Any] = field(default_factory=dict)


class Detector(Protocol):
    name: str
    needs_embeddings: bool

    @property
    def lookahead(self) -> int:
        """Messages after the new one the detector wants to see (0 = streaming)."""
        ...

    def check(self, data: DetectionInput) -> Verdict:
        """Decide whether ``data.new`` starts a new event."""
        ...

    def observe(self, message: QueuedMessage, embedding: np.ndarray | None, state: EventState) -> EventState:
        """Fold a message the rules let through without detection into the state."""
        ...

    def start_event(self, edge: QueuedMessage | None, embedding: np.ndarray | None, state: EventState) -> EventState:
        """Reset the state after a boundary; ``edge`` (if kept) is the new event's first message."""
        ...
