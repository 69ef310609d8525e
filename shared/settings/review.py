"""Memory review (Plast Mem) settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ReviewSettings(BaseModel):
    """Memory review (Plast Mem)."""

    review_easy_similarity: float = Field(default=0.75, ge=0, le=1, description="Usage signal: closeness for easy.")
    review_good_similarity: float = Field(default=0.6, ge=0, le=1, description="Usage signal: closeness for good.")
    review_hard_similarity: float = Field(default=0.45, ge=0, le=1, description="Usage signal: closeness for hard.")
    review_easy_uptake: int = Field(default=4, ge=1, description="Usage signal: distinctive words taken up for easy.")
    review_good_uptake: int = Field(default=2, ge=1, description="Usage signal: distinctive words taken up for good.")
    review_hard_uptake: int = Field(default=1, ge=1, description="Usage signal: distinctive words taken up for hard.")
