"""Episodes and FSRS (Plast Mem) settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class EpisodeSettings(BaseModel):
    """Episodes and FSRS (Plast Mem)."""

    surprise_stability_boost: float = Field(default=0.5, ge=0, description="Plast Mem: S x (1 + boost x surprise)")
    desired_retention: float = Field(default=0.9, gt=0, lt=1, description="FSRS: recall probability reviews aim at")
    title_min_words: int = Field(default=5, ge=1, description="Plast Mem: title 5-15 words")
    title_max_words: int = Field(default=15, ge=1, description="Plast Mem: title 5-15 words")
    summary_max_sentences: int = Field(default=4, ge=1, description="Extractive summary length.")
    extractive_title_min_words: int = Field(default=3, ge=1, description="Extractive (no-LLM) title: fewest words")
    extractive_title_max_words: int = Field(default=10, ge=1, description="Extractive (no-LLM) title: most words")
    episode_summary_weight: float = Field(
        default=0.25,
        ge=0,
        le=1,
        description="An episode's vector: this share of its LLM summary's embedding, the rest the mean of its "
        "messages' (an extractive summary quotes the messages and is not embedded: the mean alone)",
    )
