"""Named detector profiles: a profile selects a detector and its parameters
(seed 004's profiles). ``MEMQ_DETECTOR`` or ``memq ... --detector`` picks one."""

from __future__ import annotations

from collections.abc import Callable

from shared.errors import ConfigError
from shared.settings import Settings
from worker.segmentation.detectors.base import Detector
from worker.segmentation.detectors.rules_only import RulesOnlyDetector

Factory = Callable[[Settings], Detector]

PROFILES: dict[str, tuple[str, Factory]] = {
    "rules": ("time gaps, token budget and buffer size only (no embeddings)", lambda s: RulesOnlyDetector()),
}


def build_detector(settings: Settings, name: str | None = None) -> Detector:
    name = name or settings.detector
    try:
        _, factory = PROFILES[name]
    except KeyError:
        raise ConfigError(f"unknown detector profile {name!r}; choose one of: {', '.join(PROFILES)}") from None
    return factory(settings)
