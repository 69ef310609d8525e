"""Where things sit on a time axis drawn as an inline SVG: blocks for spans of time
(episodes, the open event, a fact's valid and recorded periods) and the axis' ticks. Pure
geometry: the template draws what this computes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

WIDTH = 1000  # the SVG's viewBox width; it scales to the page
LEFT = RIGHT = 12
MIN_BLOCK = 4  # an episode of one message is still a block one can see and click
TICKS = 5


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class Axis:
    start: datetime
    end: datetime

    @classmethod
    def over(cls, times: Sequence[datetime]) -> Axis | None:
        """The axis spanning ``times`` (a minute at least), None without any."""
        if not times:
            return None
        start, end = min(times), max(times)
        return cls(start, max(end, start + timedelta(minutes=1)))

    def x(self, at: datetime) -> float:
        share = (at - self.start) / (self.end - self.start)
        return round(LEFT + min(1.0, max(0.0, share)) * (WIDTH - LEFT - RIGHT), 1)

    def span(self, start: datetime, end: datetime) -> tuple[float, float]:
        """(x, width) of a block from ``start`` to ``end``."""
        left = self.x(start)
        width = max(self.x(end) - left, MIN_BLOCK)
        return min(left, WIDTH - RIGHT - width), round(width, 1)

    def ticks(self) -> list[Tick]:
        long = self.end - self.start > timedelta(days=1)
        out = []
        for i in range(TICKS):
            at = self.start + (self.end - self.start) * i / (TICKS - 1)
            out.append(Tick(self.x(at), at.astimezone(UTC).strftime("%Y-%m-%d" if long else "%H:%M UTC")))
        return out
