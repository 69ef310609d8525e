"""Semantic consolidation (Plast Mem) settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ConsolidationSettings(BaseModel):
    """Semantic consolidation (Plast Mem)."""

    consolidation_threshold: int = Field(
        default=3, ge=1, description="Plast Mem: unconsolidated episodes of a conversation that start a consolidation."
    )
    consolidation_max_episodes: int = Field(
        default=12, ge=1, le=100, description="Episodes one consolidation run reads."
    )
    consolidation_candidates: int = Field(default=20, ge=1, le=100, description="Related known facts shown to the LLM.")
    fact_duplicate_similarity: float = Field(
        default=0.95, gt=0, le=1, description="A new fact this close (cosine) to an active one reinforces it instead."
    )
    review_notes_queue_max: int = Field(
        default=10_000,
        ge=1,
        description="Retrievals' review notes a process holds while PostgreSQL cannot take them; past this, new ones "
        "are dropped and logged (a lost note costs one FSRS review, never a memory).",
    )
    review_notes_linger_ms: float = Field(
        default=50.0,
        ge=0,
        le=5000,
        description="How long a process's review-notes writer waits after a retrieval for more notes to write with it.",
    )
    retrieval_facts: int = Field(default=5, ge=0, le=50, description="Active facts in a retrieval's facts section.")
    fact_min_similarity: float = Field(
        default=0.35,
        ge=0,
        le=1,
        description="A fact found by its vector alone is shown only this close (cosine) to the query.",
    )
    session_facts: int = Field(default=5, ge=0, le=50, description="Active facts in a session context.")
