"""One benchmark figure and its floor: what the same work costs when done by the bare
component underneath (a redis-py pipeline, the embedding model alone, the legs' SQL alone),
measured in the same run on the same data. Absolute times on a shared machine are noisy;
the ratio is what is tracked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Measurement:
    name: str  # e.g. "ingest_library", "retrieval_tenant"
    value: float
    unit: str  # "messages/s", "ms", "ratio", "bytes", ...
    floor: float | None = None  # the same work done by the bare component (None: a figure with no floor)
    higher_is_better: bool = True
    target: float | None = None  # the ratio the issue sets (>= when higher_is_better, else <=)
    params: dict[str, Any] = field(default_factory=dict)  # what was measured: sizes, batch, workers...

    @property
    def ratio(self) -> float | None:
        """value / floor. A throughput's floor is the bare component's (1.0: as fast; higher is
        better), a latency's the bare work's time (1.0: no overhead; lower is better)."""
        if self.floor is None or self.floor == 0:
            return None
        return self.value / self.floor

    @property
    def met(self) -> bool | None:
        ratio = self.ratio if self.floor is not None else self.value
        if self.target is None or ratio is None:
            return None
        return ratio >= self.target if self.higher_is_better else ratio <= self.target

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": round(self.value, 4),
            "unit": self.unit,
            "floor": None if self.floor is None else round(self.floor, 4),
            "ratio": None if self.ratio is None else round(self.ratio, 4),
            "target": self.target,
            "met": self.met,
            "params": self.params,
        }
