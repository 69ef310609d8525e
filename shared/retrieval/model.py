"""What retrieval hands from its legs to selection and rendering."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class MessageView:
    seq: int
    role: str
    speaker: str | None
    content: str
    ts: datetime
    relevance: float = 0.0  # within its episode: fused vector and lexical rank
    ranks: dict[str, int] = field(default_factory=dict)

    @property
    def who(self) -> str:
        return self.speaker or self.role


@dataclass
class EpisodeFields:
    """What retrieval reads of an episodic memory row."""

    id: str
    conversation_id: str
    title: str
    summary: str
    start_at: datetime
    end_at: datetime
    surprise: float
    message_count: int
    summary_source: str


@dataclass
class EpisodeHit(EpisodeFields):
    ranks: dict[str, int] = field(default_factory=dict)  # leg -> 1-based rank
    rrf: float = 0.0
    retrievability: float = 1.0
    time_boost: float = 1.0
    final: float = 0.0
    rank: int = 0
    messages: list[MessageView] = field(default_factory=list)

    def key_moment(self, threshold: float) -> bool:
        return self.surprise >= threshold
