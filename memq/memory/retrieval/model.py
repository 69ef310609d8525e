"""What retrieval hands from its legs to selection and rendering."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(slots=True)
class MessageView:
    seq: int
    role: str
    speaker: str | None
    content: str
    ts: datetime
    relevance: float = 0.0  # the priority it competes for the budget with (``relevance.py``)
    ranks: Mapping[str, int] = field(default_factory=dict)  # "vector" / "lexical" -> 1-based rank in the message legs
    speaker_match: bool = False  # said by a participant the query names
    excerpt: bool = False  # ``content`` is an excerpt of the message (``excerpts.py``), not all of it

    @property
    def who(self) -> str:
        return self.speaker or self.role


@dataclass(slots=True)
class EpisodeHit:
    """An episode a leg found: what retrieval reads of its row, then (``service.rerank``) its
    scores and rank."""

    id: str
    conversation_id: str
    title: str
    summary: str
    start_at: datetime
    end_at: datetime
    surprise: float
    message_count: int
    first_seq: int
    last_seq: int
    summary_source: str
    # the FSRS memory state, from the episode's card: stability (days) and the last review
    # (when the memory formed, until it is reviewed); None: retrievability 0
    stability: float | None = None
    last_review: datetime | None = None

    # the scores
    ranks: dict[str, int] = field(default_factory=dict)  # leg -> 1-based rank
    rrf: float = 0.0
    retrievability: float = 1.0
    time_boost: float = 1.0
    final: float = 0.0
    rank: int = 0
    # the messages that may be shown, in seq order: those a message leg found and their
    # neighbours (``legs.py``), each with its priority; not the episode's every message
    messages: list[MessageView] = field(default_factory=list)

    def key_moment(self, threshold: float) -> bool:
        return self.surprise >= threshold
