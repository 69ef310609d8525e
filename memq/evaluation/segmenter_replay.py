"""Run a detector profile over a labelled dialogue offline, through the same
``worker.segmentation.engine.step`` the workers run (rule layer included), and
return the boundary set it produces."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from memq.evaluation.datasets import Dialogue
from shared.mailbox.codec import QueuedMessage
from shared.settings import Settings
from shared.tokens import message_tokens
from worker.segmentation.detectors.base import Detector
from worker.segmentation.engine import Buffered, OverlapParams, step
from worker.segmentation.event_state import EventState
from worker.segmentation.rules import RuleParams

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
    rules = RuleParams.from_settings(settings)
    overlap = OverlapParams(timedelta(minutes=settings.overlap_minutes), settings.overlap_tokens)
    messages = as_messages(dialogue)
    buffer: list[Buffered] = []
    state = EventState()
    boundaries: set[int] = set()
    for i, message in enumerate(messages):
        vector = embeddings[i] if embeddings is not None else None
        ahead: Sequence[np.ndarray] = (
            list(embeddings[i + 1 : i + 1 + lookahead]) if embeddings is not None and lookahead else []
        )
        new = Buffered(
            message, message_tokens(message.role, message.content, tool_result_max_chars=settings.tool_result_max_chars)
        )
        result = step(buffer, new, vector, state, detector, rules, overlap, ahead)
        if trace is not None:
            trace.append((i, result))
        if result.segment is not None:
            # The closed segment ends before the edge message (or with it, on force-create).
            start_next = i if result.push else i + 1
            if 0 < start_next < len(messages):
                boundaries.add(start_next)
        buffer = buffer[result.drop :] + ([new] if result.push else [])
        state = result.state
    return boundaries
