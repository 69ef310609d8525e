"""Errors memq raises on purpose. Each message says what to do about it."""


class MemqError(Exception):
    """Base class of memq's own errors."""


class ConfigError(MemqError):
    """Settings are missing or inconsistent."""


class ServiceError(MemqError):
    """Redis or PostgreSQL cannot be reached or started."""


class ValidationError(MemqError, ValueError):
    """Input refused at the edge; nothing was written."""

    def __init__(self, message: str, *, field: str | None = None, index: int | None = None):
        where = ""
        if index is not None:
            where += f"message #{index}: "
        if field:
            where += f"{field}: "
        super().__init__(where + message)
        self.field = field
        self.index = index
