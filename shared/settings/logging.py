"""Logging settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator


class LoggingSettings(BaseModel):
    """Logging."""

    log_format: str = Field(default="console", description="'console' or 'json'")
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR.")

    @field_validator("log_format")
    @classmethod
    def _log_format(cls, v: str) -> str:
        if v not in {"console", "json"}:
            raise ValueError("MEMQ_LOG_FORMAT must be 'console' or 'json'")
        return v
