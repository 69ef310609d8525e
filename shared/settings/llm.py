"""LLM (litellm) settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class LlmSettings(BaseModel):
    """LLM (litellm)."""

    llm_model: str | None = Field(default=None, description="litellm model name; unset = no LLM.")
    llm_api_base: str | None = Field(default=None, description="API base (an OpenAI-compatible server, a proxy).")
    llm_api_key: str | None = Field(
        default=None, description="API key for the LLM (a secret); or the provider's own variable."
    )
    llm_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Per LLM call, shortened to fit the task's deadline."
    )
    llm_max_retries: int = Field(default=2, ge=0, description="Retries of a failed LLM call before the fallback.")
    llm_temperature: float = Field(default=0.2, ge=0, le=2, description="Sampling temperature of LLM calls.")
