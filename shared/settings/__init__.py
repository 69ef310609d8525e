"""One typed settings object for producer, workers and tools, grouped by subsystem.

Every value comes from an environment variable (``MEMQ_<NAME>``, except the two
service URLs, which use the conventional ``REDIS_URL`` and ``DATABASE_URL``),
has a documented default and is validated when the process starts. Constants
taken from published designs are settings whose defaults are those designs' values;
the description of each names the design (Plast Mem, MIRA, agent-memory, episodic_agent;
see docs/architecture.md).

Each subsystem's settings are one class in this package (``ServiceSettings``,
``RetrievalSettings``, ...; ``GROUPS`` lists them in the order they are documented).
``Settings`` is all of them at once, read from the environment: code reads
``settings.retrieval_limit`` whatever group holds it, and a function that needs one
subsystem's settings only may say so by taking that group's type.

``Settings`` is mutable (tests and tools assign to its fields, ``validate_assignment``
checks each value) and so, like any mutable pydantic model, not hashable: a cache of
something built from settings is keyed by ``by_value(settings)``, the values it holds
when it is looked up, so that equal settings share an entry and changed settings are
never served one built from their old values.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memq.shared.settings.api import ApiSettings
from memq.shared.settings.consolidation import ConsolidationSettings
from memq.shared.settings.context import ContextSettings
from memq.shared.settings.embeddings import EmbeddingSettings
from memq.shared.settings.episodes import EpisodeSettings
from memq.shared.settings.llm import LlmSettings
from memq.shared.settings.logging import LoggingSettings
from memq.shared.settings.mailbox import MailboxSettings
from memq.shared.settings.retrieval import RetrievalSettings
from memq.shared.settings.review import ReviewSettings
from memq.shared.settings.segmentation import SegmentationSettings
from memq.shared.settings.services import ServiceSettings
from memq.shared.settings.webhooks import WebhookSettings
from memq.shared.settings.worker import WorkerSettings

# The groups in the order docs/configuration.md lists them.
GROUPS: tuple[type[BaseModel], ...] = (
    ServiceSettings,
    MailboxSettings,
    SegmentationSettings,
    EpisodeSettings,
    RetrievalSettings,
    ReviewSettings,
    ConsolidationSettings,
    ContextSettings,
    ApiSettings,
    EmbeddingSettings,
    LlmSettings,
    WorkerSettings,
    WebhookSettings,
    LoggingSettings,
)


# Bases in reverse: pydantic collects the fields of the last base first, so the fields keep
# the documented order.
class Settings(
    LoggingSettings,
    WebhookSettings,
    WorkerSettings,
    LlmSettings,
    EmbeddingSettings,
    ApiSettings,
    ContextSettings,
    ConsolidationSettings,
    ReviewSettings,
    RetrievalSettings,
    EpisodeSettings,
    SegmentationSettings,
    MailboxSettings,
    ServiceSettings,
    BaseSettings,
):
    model_config = SettingsConfigDict(
        env_prefix="MEMQ_",
        env_file=None,
        extra="ignore",
        validate_assignment=True,
    )

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if self.title_min_words > self.title_max_words:
            raise ValueError("MEMQ_TITLE_MIN_WORDS must not exceed MEMQ_TITLE_MAX_WORDS")
        if self.extractive_title_min_words > self.extractive_title_max_words:
            raise ValueError("MEMQ_EXTRACTIVE_TITLE_MIN_WORDS must not exceed MEMQ_EXTRACTIVE_TITLE_MAX_WORDS")
        if self.min_messages >= self.max_messages:
            raise ValueError("MEMQ_MIN_MESSAGES must be below MEMQ_MAX_MESSAGES")
        if self.task_time_limit_seconds * 2 > self.visibility_timeout_seconds:
            raise ValueError(
                "MEMQ_VISIBILITY_TIMEOUT_SECONDS must be at least twice MEMQ_TASK_TIME_LIMIT_SECONDS, "
                "or Redis redelivers tasks that are still running"
            )
        if self.drain_max_seconds * 2 > self.task_time_limit_seconds:
            raise ValueError(
                "MEMQ_DRAIN_MAX_SECONDS must be at most half of MEMQ_TASK_TIME_LIMIT_SECONDS, so a drain ends "
                "on its own budget well before Celery's time limit kills it"
            )
        if self.retry_backoff_max_seconds * 2 > self.visibility_timeout_seconds:
            raise ValueError("MEMQ_RETRY_BACKOFF_MAX_SECONDS must be below half of MEMQ_VISIBILITY_TIMEOUT_SECONDS")
        if self.retrieval_limit > self.retrieval_limit_max or self.retrieval_max_tokens > self.retrieval_max_tokens_max:
            raise ValueError("MEMQ_RETRIEVAL_LIMIT / MEMQ_RETRIEVAL_MAX_TOKENS must not exceed their _MAX")
        unknown = set(self.legs) - {"episode_vector", "episode_lexical", "message_vector", "message_lexical"}
        if unknown or not self.legs:
            raise ValueError(
                f"MEMQ_RETRIEVAL_LEGS: unknown legs {sorted(unknown)}; choose from episode_vector, "
                "episode_lexical, message_vector, message_lexical"
            )
        if self.worker_stall_exit_seconds and self.worker_stall_exit_seconds <= self.worker_stall_seconds:
            raise ValueError("MEMQ_WORKER_STALL_EXIT_SECONDS must exceed MEMQ_WORKER_STALL_SECONDS (or be 0: never)")
        if self.api_rate_limit_messages_per_second > 0 and self.api_rate_limit_messages_burst < self.api_max_batch:
            raise ValueError(
                "MEMQ_API_RATE_LIMIT_MESSAGES_BURST must be at least MEMQ_API_MAX_BATCH, or a batch that large "
                "could never pass"
            )
        if self.mailbox_redis_cluster and not self.mailbox_redis_url:
            raise ValueError("MEMQ_MAILBOX_REDIS_CLUSTER needs MEMQ_MAILBOX_REDIS_URL (a node of the cluster)")
        return self

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_model)

    @property
    def legs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(x.strip() for x in self.retrieval_legs.split(",") if x.strip()))

    @property
    def data_path(self) -> Path:
        return self.data_dir.expanduser().resolve()


@dataclass(frozen=True, eq=False)
class SettingsKey:
    """A settings object as a cache key: hashed and compared by the values of its fields
    when the key was made (``by_value``), and carrying the object itself for the cached
    function to build from."""

    settings: Settings
    values: tuple[object, ...]

    def __hash__(self) -> int:
        return hash(self.values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SettingsKey) and self.values == other.values


def by_value(settings: Settings) -> SettingsKey:
    """``settings`` as a cache key (``SettingsKey``). Every field's value is hashable (str,
    int, float, bool, None, Path); the key costs a few microseconds."""
    return SettingsKey(settings, (type(settings), *settings.__dict__.values()))


@functools.lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment. A refused environment
    raises ``ConfigError`` naming each variable and what is wrong with it."""
    from pydantic import ValidationError

    from memq.shared.errors import ConfigError
    from memq.shared.settings.environment import invalid_message

    try:
        return Settings()
    except ValidationError as exc:
        raise ConfigError(invalid_message(exc.errors())) from None


def reset_settings() -> None:
    """Forget the cached settings (tests and CLI options that change the environment)."""
    get_settings.cache_clear()


__all__ = ["GROUPS", "Settings", "SettingsKey", "by_value", "get_settings", "reset_settings"]
