import pytest
from pydantic import ValidationError

from memq.shared.settings import Settings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """Other tests in the session export service settings; these test the defaults."""
    import os

    for name in list(os.environ):
        if name.startswith("MEMQ_") or name in ("REDIS_URL", "DATABASE_URL"):
            monkeypatch.delenv(name)


def test_defaults_are_the_seeds_values(monkeypatch):
    s = Settings()
    assert (s.min_messages, s.max_messages, s.time_gap_minutes, s.min_total_chars, s.min_message_chars) == (
        3,
        50,
        15.0,
        100,
        5,
    )
    assert (s.token_budget, s.tool_result_max_chars, s.overlap_minutes, s.overlap_tokens) == (4000, 1000, 5.0, 500)
    assert (s.segment_timeout_minutes, s.collapse_check_seconds) == (60.0, 300.0)
    assert (s.surprise_threshold, s.topic_threshold, s.topic_rolling_alpha, s.llm_confidence_threshold) == (
        0.35,
        0.5,
        0.2,
        0.7,
    )
    assert (s.surprise_stability_boost, s.title_min_words, s.title_max_words, s.embedding_dim) == (0.5, 5, 15, 384)
    assert not s.llm_enabled


def test_environment_overrides_and_service_urls(monkeypatch):
    monkeypatch.setenv("MEMQ_MAX_MESSAGES", "20")
    monkeypatch.setenv("REDIS_URL", "redis://example:6379/2")
    monkeypatch.setenv("DATABASE_URL", "postgresql://u@h/db")
    s = Settings()
    assert (s.max_messages, s.redis_url, s.database_url) == (20, "redis://example:6379/2", "postgresql://u@h/db")


@pytest.mark.parametrize(
    "env",
    [
        {"MEMQ_OUT_OF_ORDER_POLICY": "drop"},
        {"MEMQ_MIN_MESSAGES": "60"},
        {"MEMQ_TITLE_MIN_WORDS": "20"},
        {"MEMQ_TASK_TIME_LIMIT_SECONDS": "600", "MEMQ_VISIBILITY_TIMEOUT_SECONDS": "900"},
        {"MEMQ_LOG_FORMAT": "xml"},
        {"MEMQ_TENANT": "has space"},
        {"MEMQ_EMBEDDING_DIM": "4096"},
        {"MEMQ_RETRIEVAL_PLAN_CACHE_MODE": "sometimes"},
    ],
)
def test_invalid_configuration_fails_at_start(monkeypatch, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValidationError):
        Settings()


def test_every_setting_belongs_to_exactly_one_group():
    from collections import Counter

    from memq.shared.settings import GROUPS

    held = Counter(name for group in GROUPS for name in group.model_fields)
    assert [name for name, n in held.items() if n > 1] == []
    assert set(held) == set(Settings.model_fields)
    # the documented order is the groups' order
    assert list(Settings.model_fields) == [name for group in GROUPS for name in group.model_fields]


def test_the_groups_validators_run_in_the_composed_settings(monkeypatch):
    from memq.shared.settings.retrieval import RetrievalSettings

    monkeypatch.setenv("MEMQ_RETRIEVAL_LIMIT", "7")
    settings = Settings()
    assert isinstance(settings, RetrievalSettings) and settings.retrieval_limit == 7
    for variable, value, says in [
        ("MEMQ_LOG_FORMAT", "xml", "MEMQ_LOG_FORMAT"),  # LoggingSettings
        ("MEMQ_OUT_OF_ORDER_POLICY", "drop", "MEMQ_OUT_OF_ORDER_POLICY"),  # MailboxSettings
        ("MEMQ_TENANT", "a b", "letters, digits"),  # ServiceSettings
    ]:
        monkeypatch.setenv(variable, value)
        with pytest.raises(ValidationError, match=says):
            Settings()
        monkeypatch.delenv(variable)
