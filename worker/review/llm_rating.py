"""Rating retrieved memories with an LLM (litellm, JSON schema; the same retry and fallback
discipline as summaries): the reviewer sees what the conversation said after the
retrieval and each memory under a short local number with the queries that found it,
and rates each one again / hard / good / easy (noise / tangential / used / central).
An answer that leaves a memory out, rates one twice or names a number not shown is
malformed (retried, then the usage signal rates instead)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from memq.shared.llm import complete_json
from memq.shared.settings import Settings
from memq.worker.review.fsrs_update import RATINGS

SYSTEM = (
    "You review an AI agent's long-term memory. Earlier in this conversation the agent retrieved some memories. "
    "Below is what the conversation said afterwards, then each retrieved memory with a number and the queries that "
    "found it. Rate every memory by how it was actually used afterwards:\n"
    "- easy: central, the conversation relied on it;\n- good: used;\n- hard: tangential, barely relevant;\n"
    "- again: noise, not used at all.\n"
    "Answer with one rating per memory number, each number exactly once."
)


@dataclass(frozen=True)
class Reviewed:
    number: int  # 1-based, as shown
    title: str
    summary: str
    queries: tuple[str, ...]


class _Rating(BaseModel):
    memory: int = Field(description="the memory's number")
    rating: Literal["again", "hard", "good", "easy"]
    reason: str = Field(default="", description="a few words")


def answer_model(count: int) -> type[BaseModel]:
    class Ratings(BaseModel):
        ratings: list[_Rating]

        @model_validator(mode="after")
        def _each_once(self) -> Ratings:
            numbers = [r.memory for r in self.ratings]
            if sorted(numbers) != list(range(1, count + 1)):
                raise ValueError(f"rate each memory 1..{count} exactly once; got {numbers}")
            return self

    Ratings.__name__ = "MemoryRatings"
    return Ratings


def render(segment: Sequence[str], memories: Sequence[Reviewed]) -> str:
    lines = ["WHAT THE CONVERSATION SAID AFTERWARDS:", *segment, "", "RETRIEVED MEMORIES:"]
    for m in memories:
        queries = "; ".join(f'"{q}"' for q in m.queries)
        lines.append(f"[{m.number}] {m.title} — {m.summary} (found by {queries})")
    return "\n".join(lines)


def llm_ratings(
    settings: Settings, segment: Sequence[str], memories: Sequence[Reviewed]
) -> tuple[dict[int, tuple[int, str]], str]:
    """number -> (rating 1-4, reason), and the model. Raises ``LLMError``."""
    result = complete_json(
        settings,
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": render(segment, memories)}],
        answer_model(len(memories)),
        purpose="memory_review",
    )
    return {r.memory: (RATINGS[r.rating], r.reason[:300]) for r in result.value.ratings}, result.model  # type: ignore[attr-defined]  # the model answer_model built
