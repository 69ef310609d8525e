"""Run a detector profile over a labelled dialogue offline, through the same
``memq.worker.segmentation.segmenter.Segmenter`` the workers' drains advance (rule layer,
token counting and all), and return the boundary set it produces."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from memq.shared.mailbox.codec import QueuedMessage
from memq.shared.settings import Settings
from memq.worker.segmentation.detectors.base import Detector
from memq.worker.segmentation.segmenter import Segmenter
from memq_lab.evaluation.datasets import Dialogue

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SPACING = timedelta(seconds=30)  # the sets have no times: messages 30 s apart never cross the 15-minute rule


def _role(speaker: str, index: int) -> str:
    s = speaker.lower()
    if s in ("user", "assistant", "system", "tool"):
        return s
    if s == "agent":
        return "assistant"
    return "user" if index % 2 == 0 else "assistant"


def as_messages(dialogue: Dialogue) -> list[QueuedMessage]:
    out = []
    for i, (speaker, text) in enumerate(dialogue.utterances):
        ts = T0 + SPACING * i
        out.append(QueuedMessage(i + 1, f"{dialogue.dialogue_id}:{i}", _role(speaker, i), text, ts, ts, ts))
    return out


def segment_dialogue(
    dialogue: Dialogue,
    embeddings: np.ndarray | None,
    detector: Detector,
    settings: Settings,
    lookahead: int = 0,
    trace: list | None = None,
) -> set[int]:
    """Boundary indices (a new segment starts at utterance i) the segmenter produces."""
    return segment_messages(as_messages(dialogue), embeddings, detector, settings, lookahead, trace)


def segment_messages(
    messages: Sequence[QueuedMessage],
    embeddings: np.ndarray | None,
    detector: Detector,
    settings: Settings,
    lookahead: int = 0,
    trace: list | None = None,
) -> set[int]:
    """The same over messages with their own times (e.g. a shipped sample)."""
    segmenter = Segmenter.from_settings(settings, detector)
    boundaries: set[int] = set()
    for i, message in enumerate(messages):
        vector = embeddings[i] if embeddings is not None else None
        ahead: Sequence[np.ndarray] = (
            list(embeddings[i + 1 : i + 1 + lookahead]) if embeddings is not None and lookahead else []
        )
        result = segmenter.advance(message, vector, ahead)
        if trace is not None:
            trace.append((i, result))
        if result.segment is not None:
            # The closed segment ends before the edge message (or with it, on force-create).
            start_next = i if result.push else i + 1
            if 0 < start_next < len(messages):
                boundaries.add(start_next)
    return boundaries
