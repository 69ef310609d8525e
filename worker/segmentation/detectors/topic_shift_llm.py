"""Plast Mem's LLM topic-shift check: given the current event model and recent
history, does the new message start a new event? Through litellm with a JSON
schema (``memq.shared.llm``); any failure raises ``LLMError`` and the caller falls back."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from memq.shared.llm import complete_json
from memq.shared.mailbox.codec import QueuedMessage
from memq.shared.settings import Settings

SYSTEM = (
    "You detect event boundaries in a conversation, following Event Segmentation Theory. "
    "The EVENT MODEL describes what is happening now. Decide whether the NEW MESSAGE starts a new "
    "event. Judge: topic coherence (did the topic shift significantly?), intent change (did the "
    "speaker's goal change, e.g. discussion -> decision?), and temporal or discourse markers "
    "('by the way', 'anyway'). Return JSON: is_boundary, confidence (0-1), signals with scores "
    "0-1 for topic_shift, intent_shift, temporal_marker, and updated_event_model: when there is "
    "no boundary, a one-sentence description of the event including the new message; when there "
    "is a boundary, a description of the new event."
)


class Signals(BaseModel):
    topic_shift: float = Field(ge=0, le=1)
    intent_shift: float = Field(ge=0, le=1)
    temporal_marker: float = Field(ge=0, le=1)


class TopicShift(BaseModel):
    is_boundary: bool
    confidence: float = Field(ge=0, le=1)
    signals: Signals
    updated_event_model: str


def llm_topic_shift(
    settings: Settings, event_model: str | None, history: Sequence[QueuedMessage], new: QueuedMessage
) -> TopicShift:
    lines = [f"{m.role}: {m.content[:500]}" for m in history]
    user = (
        f"EVENT MODEL: {event_model or '(none yet: describe it from the history)'}\n\n"
        "RECENT HISTORY:\n"
        + ("\n".join(lines) if lines else "(none)")
        + f"\n\nNEW MESSAGE:\n{new.role}: {new.content[:1000]}"
    )
    result = complete_json(
        settings,
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        TopicShift,
        purpose="topic_shift",
    )
    return result.value
