"""What the context views are built from: stored episodes (``EpisodeListing``, re-exported
here) and the open segment."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memq.shared.episode_listing import EpisodeListing

__all__ = ["EpisodeListing", "OpenSegment", "OpenSpan", "Said"]


@dataclass(frozen=True)
class Said:
    """One message as an agent is shown it."""

    role: str
    speaker: str | None
    content: str
    at: datetime

    @property
    def who(self) -> str:
        return self.speaker or self.role


@dataclass(frozen=True)
class OpenSegment:
    """Messages accepted but not yet in an episode (closed segments waiting for their
    episode, the open event, the inbox), in order. Quarantined messages are not shown."""

    messages: tuple[Said, ...] = ()


@dataclass(frozen=True)
class OpenSpan:
    """The open segment as the manifest shows it: its first and latest message, and how
    many messages it holds."""

    first: Said
    last: Said
    count: int
