"""Titles and summaries from an LLM (Plast Mem: a 5-15 word title and a third-person
narrative), with the previous segment's tail shown as context only (agent-memory)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from memq.shared.llm import complete_json
from memq.shared.settings import Settings

SYSTEM = (
    "You write episodic memories of conversations for an AI agent's long-term memory. "
    "Given one segment of a conversation, return JSON with:\n"
    "- title: a concise {min}-{max} word title naming the event (no quotes, no trailing period);\n"
    "- summary: a third-person narrative of what happened (who asked or said what, decisions, "
    "facts, numbers, names, outcomes, tools used), 2-6 sentences, refer to the speakers as "
    "'the user' and 'the assistant'.\n"
    "Lines marked CONTEXT come from before the segment: use them only to understand it; do not "
    "summarise them."
)


class TitleAndSummary(BaseModel):
    title: str = Field(description="5-15 word title")
    summary: str = Field(description="third-person narrative summary")

    @field_validator("title", "summary")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        v = " ".join(v.split())
        if not v:
            raise ValueError("must not be blank")
        return v


def _line(m: dict[str, Any], prefix: str = "") -> str:
    content = m["content"]
    if m["role"] == "tool" and len(content) > 1000:
        content = content[:1000] + " [...]"
    return f"{prefix}[{m['timestamp'][:16]}] {m['role']}: {content}"


def render_segment(messages: Sequence[dict[str, Any]], overlap: Sequence[dict[str, Any]]) -> str:
    lines = [_line(m, "CONTEXT ") for m in overlap]
    lines += [_line(m) for m in messages]
    return "\n".join(lines)


def llm_title_and_summary(
    settings: Settings, messages: Sequence[dict[str, Any]], overlap: Sequence[dict[str, Any]], tools: Sequence[str]
) -> tuple[str, str, str]:
    """(title, summary, model). Raises ``LLMError`` when no usable answer came."""
    lo, hi = settings.title_min_words, settings.title_max_words

    class Answer(TitleAndSummary):
        @field_validator("title")
        @classmethod
        def _length(cls, v: str) -> str:
            v = v.rstrip(". ")  # stored without a trailing period: count the words that are kept
            n = len(v.split())
            if n < lo or n > hi:
                raise ValueError(f"title has {n} words; {lo}-{hi} required")
            return v

    Answer.__name__ = "EpisodeTitleAndSummary"
    user = render_segment(messages, overlap)
    if tools:
        user += "\n\nTools used in this segment: " + ", ".join(tools)
    result = complete_json(
        settings,
        [{"role": "system", "content": SYSTEM.format(min=lo, max=hi)}, {"role": "user", "content": user}],
        Answer,
        purpose="episode_summary",
    )
    value = result.value
    return value.title, value.summary, result.model
