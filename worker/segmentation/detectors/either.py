"""Two learned scorers, one boundary: a cut when either is confident.

The TIAGE scorer (``tiage_w*``, embedding features) is precise on chit-chat and all but
silent on task and document-grounded dialogue (SuperDialseg: 0.5 cuts per dialogue where
the gold has 3.2); the cross-domain ``blend`` scorer fires there, and on chit-chat adds
cuts of lower precision than the TIAGE scorer's. So the second counts only at a stricter
threshold, its ``high`` times ``second_scale`` (``MEMQ_EITHER_SECOND_SCALE``): where the
first is sure the conversation is chit-chat it adds little, where the first is silent it
cuts as the cross-domain scorer would. One hysteresis over both: a cut when armed and
either reaches its (scaled) threshold, re-armed once both are below their ``low``.

The event state is the second scorer's (its longer history and running statistics, which
the first's features are a window of), so ``observe`` and ``start_event`` are
``LearnedDetector``'s. Measured in docs/evaluation.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from memq.worker.segmentation.detectors.base import DetectionInput
from memq.worker.segmentation.detectors.learned import LearnedDetector
from memq.worker.segmentation.event_state import EventState


@dataclass
class EitherDetector(LearnedDetector):
    """``model`` is the second scorer (the cross-domain one, whose state the detector
    keeps); ``first`` the first, at its own thresholds."""

    first: LearnedDetector | None = None
    second_scale: float = 1.25

    @property
    def lookahead(self) -> int:
        first = self.first.lookahead if self.first is not None else 0
        return max(first, self.model.lookahead)

    def evaluate(self, data: DetectionInput) -> tuple[bool, float, dict[str, float], EventState]:
        state = data.state
        if not state.recent:
            return False, 0.0, {}, state
        assert self.first is not None, "an EitherDetector is built with both scorers"
        p_second, factors = self.score(data)
        p_first, _ = self.first.score(data)
        first, second = self.first.model, self.model
        second_high = min(1.0, second.high * self.second_scale)
        # each probability over its own threshold: 1.0 is where that scorer alone would cut
        level = max(p_first / first.high, p_second / second_high)
        armed = state.armed
        trigger = bool(armed and level >= 1.0)
        if trigger:
            armed = False
        elif p_first < first.low and p_second < second.low:
            armed = True
        f = {**factors, "p": level, "p_first": p_first, "p_second": p_second}
        return trigger, level, f, state.evolve(armed=armed)
