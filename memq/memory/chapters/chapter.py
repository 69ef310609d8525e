"""Chapters drawn over stored events: each a run of messages of one conversation, the
events it holds (an event in the chapter holding most of its messages), its time span and
a title. Pure: the caller passes the episodes, their messages in order and the scorer.

A chapter of one event keeps the event's title. A longer one is titled from its messages
without an LLM (the extractive title, the same code as an event's); when its events were
titled by an LLM, it takes the title of its largest LLM-titled event (an LLM is never
called on a read)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memq.memory.chapters.detector import StreamMessage, chapter_starts
from memq.shared.episode_listing import EpisodeListing
from memq.worker.episodes.extractive import extractive_title
from memq.worker.segmentation.detectors.tree_model import TreeModel


@dataclass(frozen=True)
class Chapter:
    id: str  # its first event's id
    conversation_id: str
    title: str
    title_source: str  # "episode" (one event's title), "extractive" or "llm"
    start_at: datetime
    end_at: datetime
    message_count: int
    episode_ids: tuple[str, ...]  # oldest first
    tools_used: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "conversation_id": self.conversation_id,
            "title": self.title,
            "title_source": self.title_source,
            "start_at": self.start_at.isoformat(),
            "end_at": self.end_at.isoformat(),
            "message_count": self.message_count,
            "episode_ids": list(self.episode_ids),
            "tools_used": list(self.tools_used),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Chapter:
        return cls(
            **{
                **data,
                "start_at": datetime.fromisoformat(data["start_at"]),
                "end_at": datetime.fromisoformat(data["end_at"]),
                "episode_ids": tuple(data["episode_ids"]),
                "tools_used": tuple(data["tools_used"]),
            }
        )


def _title(
    events: Sequence[EpisodeListing], messages: Sequence[StreamMessage], min_words: int, max_words: int
) -> tuple[str, str]:
    if len(events) == 1:
        return events[0].title, "episode"
    by_llm = [e for e in events if e.summary_source == "llm"]
    if by_llm:
        return max(by_llm, key=lambda e: e.message_count).title, "llm"
    as_dicts = [
        {"id": str(i), "role": m.role, "content": m.content, "metadata": {"name": m.speaker} if m.speaker else {}}
        for i, m in enumerate(messages)
    ]
    return extractive_title(as_dicts, min_words, max_words), "extractive"


def draw_chapters(
    episodes: Sequence[EpisodeListing],
    messages: Sequence[StreamMessage],
    model: TreeModel,
    *,
    gap: timedelta,
    min_messages: int,
    title_words: tuple[int, int] = (3, 8),
) -> list[Chapter]:
    """``messages``: the episodes' messages, each conversation's in order (conversations
    one after another); returns the chapters, oldest first within each conversation and
    by start time across them."""
    if not messages:
        return []
    by_id = {e.id: e for e in episodes}
    starts = [0, *chapter_starts(messages, model, gap=gap, min_messages=min_messages), len(messages)]
    chapter_of = [0] * len(messages)
    for k in range(len(starts) - 1):
        for i in range(starts[k], starts[k + 1]):
            chapter_of[i] = k
    # each event goes to the chapter holding most of its messages (ties: the earlier one)
    votes: dict[str, dict[int, int]] = {}
    for i, m in enumerate(messages):
        counts = votes.setdefault(m.episode_id, {})
        counts[chapter_of[i]] = counts.get(chapter_of[i], 0) + 1
    home = {e: max(c.items(), key=lambda kv: (kv[1], -kv[0]))[0] for e, c in votes.items()}
    chapters = []
    for k in range(len(starts) - 1):
        span = messages[starts[k] : starts[k + 1]]
        events = sorted((by_id[e] for e, h in home.items() if h == k and e in by_id), key=lambda e: (e.start_at, e.id))
        if not events:  # a few messages of an event that lives in the next chapter
            continue
        title, source = _title(events, span, *title_words)
        chapters.append(
            Chapter(
                events[0].id,
                span[0].conversation_id,
                title,
                source,
                span[0].at,
                span[-1].at,
                len(span),
                tuple(e.id for e in events),
                tuple(dict.fromkeys(t for e in events for t in e.tools_used)),
            )
        )
    return sorted(chapters, key=lambda c: (c.start_at, c.id))
