"""The 'either' profile (``either.py``): a cut when the first scorer reaches its threshold
or the second reaches its threshold times ``second_scale``; one hysteresis over both."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest
from vectors import axis, message

from memq.worker.segmentation.detectors.base import DetectionInput
from memq.worker.segmentation.detectors.either import EitherDetector
from memq.worker.segmentation.detectors.learned import LearnedDetector, LinearModel
from memq.worker.segmentation.event_state import EventState


def thresholds(high: float, low: float, lookahead: int = 2) -> LinearModel:
    one = np.ones(1, np.float32)
    return LinearModel(one * 0, one, one, 0.0, high, low, lookahead)


@dataclass
class Scripted(LearnedDetector):
    """A scorer whose probabilities are given, one per call of ``score``."""

    script: Iterator[float] = field(default_factory=lambda: iter(()))

    def score(self, data: DetectionInput) -> tuple[float, dict[str, float]]:
        p = next(self.script)
        return p, {"p": p}


class Pair(EitherDetector):
    def __init__(self, first: list[float], second: list[float], scale: float = 1.25) -> None:
        super().__init__(
            thresholds(0.5, 0.3),
            name="either",
            first=Scripted(thresholds(0.35, 0.2), script=iter(first)),
            second_scale=scale,
        )
        self.second_script = iter(second)

    def score(self, data: DetectionInput) -> tuple[float, dict[str, float]]:
        p = next(self.second_script)
        return p, {"p": p}


def run(detector: EitherDetector, steps: int) -> list[bool]:
    state = EventState(recent=[axis(0)], armed=True)
    cuts = []
    for i in range(steps):
        verdict = detector.check(DetectionInput([message(1)], message(i + 2), axis(0), state))
        cuts.append(verdict.boundary)
        state = verdict.state
    return cuts


def test_the_first_scorer_cuts_at_its_own_threshold():
    assert run(Pair(first=[0.36, 0.1], second=[0.0, 0.0]), 2) == [True, False]


def test_the_second_scorer_cuts_only_at_its_stricter_threshold():
    # 0.6 is above the second's own high (0.5) but below 0.5 x 1.25
    assert run(Pair(first=[0.1, 0.1], second=[0.6, 0.1]), 2) == [False, False]
    assert run(Pair(first=[0.1], second=[0.63]), 1) == [True]
    assert run(Pair(first=[0.1], second=[0.6], scale=1.0), 1) == [True]


def test_one_hysteresis_re_arms_only_when_both_are_low():
    # cut, then the second stays above its low: no second cut until both fall below
    cuts = run(Pair(first=[0.4, 0.1, 0.4, 0.1, 0.4], second=[0.1, 0.35, 0.1, 0.1, 0.1]), 5)
    assert cuts == [True, False, False, False, True]


def test_the_profile_reads_the_tiage_and_blend_models():
    from memq.shared.settings import Settings
    from memq.worker.segmentation.detectors.registry import build_detector

    detector = build_detector(Settings(_env_file=None), "either")
    assert isinstance(detector, EitherDetector) and detector.first is not None
    assert detector.first.model.info["trained_on"] == "tiage_train.json"
    assert detector.model.features == "style" and detector.lookahead == 2
    assert detector.second_scale == pytest.approx(1.25)
    stricter = build_detector(Settings(_env_file=None, either_second_scale=1.5), "either")
    assert isinstance(stricter, EitherDetector) and stricter.second_scale == 1.5
