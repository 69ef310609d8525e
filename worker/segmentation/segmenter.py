"""One conversation's open event advancing message by message: the segmentation loop.

The one implementation of "count the message's tokens, hand it to ``step`` with its
embedding and look-ahead, keep the buffer and event state ``step`` returns": the worker's
drain (which commits every step to Redis before the next), the offline evaluation's
replay and the property tests all advance a ``Segmenter``, so what is evaluated and
property-tested is what runs in production. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

import numpy as np

from memq.shared.mailbox.codec import QueuedMessage
from memq.shared.settings import Settings
from memq.shared.tokens import message_tokens
from memq.worker.segmentation.detectors.base import Detector
from memq.worker.segmentation.engine import Buffered, OverlapParams, Step, close_open_event, step
from memq.worker.segmentation.event_state import EventState
from memq.worker.segmentation.rules import RuleParams


@dataclass
class Segmenter:
    detector: Detector
    rules: RuleParams
    overlap: OverlapParams
    tool_result_max_chars: int
    encoding: str
    buffer: list[Buffered] = field(default_factory=list)
    state: EventState = field(default_factory=EventState)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        detector: Detector,
        buffer: Sequence[QueuedMessage] = (),
        state: EventState | None = None,
    ) -> Segmenter:
        """A segmenter configured by ``settings``, resuming an open event (``buffer``, ``state``)."""
        segmenter = cls(
            detector,
            RuleParams.from_settings(settings),
            OverlapParams(timedelta(minutes=settings.overlap_minutes), settings.overlap_tokens),
            settings.tool_result_max_chars,
            settings.tokenizer_encoding,
        )
        segmenter.buffer = [segmenter.buffered(m) for m in buffer]
        segmenter.state = state if state is not None else EventState()
        return segmenter

    def buffered(self, message: QueuedMessage) -> Buffered:
        tokens = message_tokens(
            message.role, message.content, tool_result_max_chars=self.tool_result_max_chars, encoding=self.encoding
        )
        return Buffered(message, tokens)

    def advance(
        self, message: QueuedMessage, embedding: np.ndarray | None, lookahead: Sequence[np.ndarray] = ()
    ) -> Step:
        """The next message meets the open event; the segmenter keeps what the step returns."""
        new = self.buffered(message)
        result = step(self.buffer, new, embedding, self.state, self.detector, self.rules, self.overlap, lookahead)
        self.buffer = self.buffer[result.drop :] + ([new] if result.push else [])
        self.state = result.state
        return result

    def close(self, reason: str) -> Step | None:
        """Close whatever is open (a flush, an inactivity collapse); None when nothing is.
        Either way the state is left ``at_rest``: a closed conversation keeps no left window."""
        result = close_open_event(self.buffer, self.state, self.detector, self.overlap, reason=reason)
        if result is None:
            self.state = self.state.at_rest()
            return None
        result = replace(result, state=result.state.at_rest())
        self.buffer = self.buffer[result.drop :]
        self.state = result.state
        return result
