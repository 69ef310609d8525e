"""Segmentation settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SegmentationSettings(BaseModel):
    """Segmentation: the rule layer (Plast Mem), token budget and overlap (agent-memory),
    inactivity collapse (MIRA), boundary detection (Plast Mem's dual channel, episodic_agent's
    hysteresis)."""

    min_messages: int = Field(default=3, ge=1, description="Plast Mem: fewer messages -> skip")
    max_messages: int = Field(default=50, ge=2, description="Plast Mem: this many -> force-create, drain all")
    time_gap_minutes: float = Field(default=15.0, gt=0, description="Plast Mem: larger gap -> time boundary")
    min_total_chars: int = Field(default=100, ge=0, description="Plast Mem: fewer chars in buffer -> skip")
    min_message_chars: int = Field(default=5, ge=0, description="Plast Mem: shorter latest message -> skip")

    # token budget and overlap (agent-memory)
    token_budget: int = Field(default=4000, ge=1, description="agent-memory: buffer tokens -> boundary")
    tool_result_max_chars: int = Field(default=1000, ge=1, description="agent-memory: tool text counted")
    overlap_minutes: float = Field(default=5.0, ge=0, description="agent-memory: overlap time window")
    overlap_tokens: int = Field(default=500, ge=0, description="agent-memory: overlap token cap")
    tokenizer_encoding: str = Field(default="cl100k_base", description="tiktoken encoding that counts tokens.")

    # inactivity collapse (MIRA)
    segment_timeout_minutes: float = Field(default=60.0, gt=0, description="MIRA: idle -> collapse")
    collapse_check_seconds: float = Field(default=300.0, gt=0, description="MIRA: check every 5 min")
    stalled_after_seconds: float = Field(
        default=120.0, gt=0, description="Queued drain or pending episode older than this is re-queued."
    )

    # boundary detection (Plast Mem's dual channel, episodic_agent's hysteresis)
    detector: str = Field(default="default", description="Detector profile (see `memq eval --list`).")
    lookahead_messages: int | None = Field(
        default=None,
        ge=0,
        le=10,
        description="Decide a boundary before message i once i..i+w arrived; 0 = pure streaming; "
        "unset = the profile's own (2 for 'default', 'learned' and 'general', 0 otherwise).",
    )
    either_second_scale: float = Field(
        default=1.25,
        ge=1.0,
        le=3.0,
        description="Profile 'either': the cross-domain scorer cuts only at its threshold times this (stricter), "
        "the TIAGE scorer at its own. Measured (2026-12-05): 1.2 / 1.25 / 1.3 / 1.4 gave TIAGE dev Pk "
        ".331 / .329 / .330 / .332 and SuperDialseg validation .384 / .391 / .397 / .418.",
    )
    boundary_verbose: bool = Field(default=False, description="Log every message's boundary score and factors.")
    surprise_threshold: float = Field(default=0.35, description="Plast Mem: event-model cosine below -> boundary")
    topic_threshold: float = Field(default=0.5, description="Plast Mem: last-embedding cosine below -> ask LLM")
    topic_rolling_alpha: float = Field(default=0.2, ge=0, le=1, description="Plast Mem: rolling average")
    llm_confidence_threshold: float = Field(default=0.7, ge=0, le=1, description="Plast Mem")
    hysteresis_high: float = Field(default=0.8, description="episodic_agent: trigger at or above")
    hysteresis_low: float = Field(default=0.3, description="episodic_agent: re-arm below")
    hysteresis_time_interval: int = Field(default=100, ge=1, description="episodic_agent: time factor saturates")
    hysteresis_prediction_weight: float = Field(default=0.3, description="episodic_agent prediction_weight")
    hysteresis_drift_weight: float = Field(default=0.5, description="episodic_agent event_weight (topic drift here)")
    hysteresis_drop_weight: float = Field(default=0.0, description="previous-message dissimilarity weight")
    hysteresis_marker_weight: float = Field(default=1.0, description="episodic_agent location_weight (discourse)")
    hysteresis_time_weight: float = Field(default=0.2, description="episodic_agent time factor weight")
    hysteresis_bias: float = Field(default=0.0, description="added to the boundary score before the thresholds")
    hysteresis_window: int = Field(default=3, ge=1, le=16, description="left-window messages for topic drift")
