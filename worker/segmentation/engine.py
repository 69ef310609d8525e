"""One step of the segmenter: a new message meets the open event.

Pure: takes the open event (with token counts), the new message (with its embedding
when the detector needs one), the persisted ``EventState`` and a detector, and
returns what to change, which the caller commits atomically to Redis. The same
function runs in the worker and in the offline evaluation, so what is measured is
what runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np

from memq.shared.mailbox.codec import QueuedMessage
from memq.worker.segmentation.detectors.base import DetectionInput, Detector, Verdict
from memq.worker.segmentation.event_state import EventState
from memq.worker.segmentation.overlap import select_overlap
from memq.worker.segmentation.rules import RuleAction, RuleParams, Unit, decide


@dataclass(frozen=True)
class Buffered:
    message: QueuedMessage
    tokens: int

    @property
    def unit(self) -> Unit:
        return Unit(self.message.timestamp, len(self.message.content), self.tokens)


@dataclass(frozen=True)
class OverlapParams:
    window: timedelta = timedelta(minutes=5)
    max_tokens: int = 500


@dataclass(frozen=True)
class ClosedSegment:
    """Messages that become one episode, and why the event ended."""

    messages: tuple[QueuedMessage, ...]
    reason: str  # force_create | time_boundary | token_boundary | <detector reason> | flush | inactivity
    surprise: float
    detector: str
    source: str  # what decided: rules, embedding, llm, hysteresis, flush
    overlap: tuple[dict[str, Any], ...]  # previous segment's tail, context only
    token_count: int


@dataclass(frozen=True)
class Step:
    drop: int  # buffer messages leaving the open event (into ``segment``)
    push: bool  # whether the new message joins the (possibly new) open event
    segment: ClosedSegment | None
    state: EventState
    action: str  # rule action or "boundary"/"continue" after detection
    verdict: Verdict | None = None


def _close(
    buffer: Sequence[Buffered],
    state: EventState,
    *,
    reason: str,
    surprise: float,
    detector: str,
    source: str,
    overlap: OverlapParams,
) -> tuple[ClosedSegment, EventState]:
    messages = tuple(b.message for b in buffer)
    segment = ClosedSegment(
        messages=messages,
        reason=reason,
        surprise=surprise,
        detector=detector,
        source=source,
        overlap=tuple(state.overlap),
        token_count=sum(b.tokens for b in buffer),
    )
    tail = select_overlap(
        list(buffer),
        [b.message.timestamp for b in buffer],
        [b.tokens for b in buffer],
        window=overlap.window,
        max_tokens=overlap.max_tokens,
    )
    return segment, state.evolve(overlap=[b.message.to_record() for b in tail])


def step(
    buffer: Sequence[Buffered],
    new: Buffered,
    embedding: np.ndarray | None,
    state: EventState,
    detector: Detector,
    rules: RuleParams,
    overlap: OverlapParams,
    lookahead: Sequence[np.ndarray] = (),
) -> Step:
    action = decide([b.unit for b in buffer], new.unit, rules)

    if action is RuleAction.FORCE_CREATE:
        state = detector.observe(new.message, embedding, state)  # the last message of this event
        segment, state = _close(
            [*buffer, new],
            state,
            reason=action.value,
            surprise=0.0,
            detector=detector.name,
            source="rules",
            overlap=overlap,
        )
        state = detector.start_event(None, None, state)
        return Step(drop=len(buffer), push=False, segment=segment, state=state, action=action.value)

    if action.keeps_edge:
        segment, state = _close(
            buffer, state, reason=action.value, surprise=0.0, detector=detector.name, source="rules", overlap=overlap
        )
        state = detector.start_event(new.message, embedding, state)
        return Step(drop=len(buffer), push=True, segment=segment, state=state, action=action.value)

    if action is RuleAction.SKIP:
        state = detector.observe(new.message, embedding, state)
        return Step(drop=0, push=True, segment=None, state=state, action=action.value)

    verdict = detector.check(
        DetectionInput(
            buffer=[b.message for b in buffer], new=new.message, embedding=embedding, state=state, lookahead=lookahead
        )
    )
    if not verdict.boundary:
        return Step(drop=0, push=True, segment=None, state=verdict.state, action="continue", verdict=verdict)
    segment, state = _close(
        buffer,
        verdict.state,
        reason=verdict.reason,
        surprise=verdict.surprise,
        detector=detector.name,
        source=verdict.source,
        overlap=overlap,
    )
    state = detector.start_event(new.message, embedding, state)
    return Step(drop=len(buffer), push=True, segment=segment, state=state, action="boundary", verdict=verdict)


def close_open_event(
    buffer: Sequence[Buffered], state: EventState, detector: Detector, overlap: OverlapParams, *, reason: str
) -> Step | None:
    """Close whatever is open (explicit flush or inactivity collapse)."""
    if not buffer:
        return None
    segment, state = _close(
        buffer, state, reason=reason, surprise=0.0, detector=detector.name, source="flush", overlap=overlap
    )
    state = detector.start_event(None, None, state)
    return Step(drop=len(buffer), push=False, segment=segment, state=state, action=reason)
