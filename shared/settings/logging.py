"""Logging settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator


class LoggingSettings(BaseModel):
    """Logging."""

    log_format: str = Field(default="console", description="'console' or 'json'")
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR.")
    log_slow_retrieval_ms: float = Field(
        default=250.0,
        ge=0,
        description="A retrieval logs its `retrieved` line (counts and per-stage timings) at info when it took at "
        "least this long, at debug otherwise: a slow-retrieval log, like PostgreSQL's log_min_duration_statement "
        "(0: every retrieval at info). The API's `request` line already records every call; a log line costs "
        "about 0.1 ms, as much as a tenth of a fast retrieval.",
    )

    @field_validator("log_format")
    @classmethod
    def _log_format(cls, v: str) -> str:
        if v not in {"console", "json"}:
            raise ValueError("MEMQ_LOG_FORMAT must be 'console' or 'json'")
        return v
