"""LLM calls fit the caller's time budget (memq.shared.deadline) and never swallow Celery's
soft time limit: a batch of slow topic checks cannot overrun a task's time limit."""

from __future__ import annotations

import time

import pytest
from billiard.exceptions import SoftTimeLimitExceeded
from pydantic import BaseModel

from memq.shared import deadline
from memq.shared.llm import LLMError, complete_json, import_litellm
from memq_lab.testing.scripted_llm import Reply


class Answer(BaseModel):
    word: str


def test_a_slow_llm_is_cut_off_at_the_deadline(settings, scripted_llm, monkeypatch):
    monkeypatch.setattr(settings, "llm_timeout_seconds", 30.0)
    monkeypatch.setattr(settings, "llm_max_retries", 3)
    scripted_llm.push(*[Reply(content={"word": "late"}, delay=20)] * 4)
    import_litellm()  # its import takes seconds; not what is measured
    started = time.monotonic()
    with deadline.within(2.5), pytest.raises(LLMError, match=r"Timeout|deadline"):
        complete_json(settings, [{"role": "user", "content": "hi"}], Answer, purpose="test")
    assert time.monotonic() - started < 8.0  # 2.5 s and some slack on a loaded machine, not 4 attempts x 30 s


def test_no_attempt_starts_without_time_left(settings, scripted_llm):
    import_litellm()
    with deadline.within(0.2), pytest.raises(LLMError, match="deadline"):
        complete_json(settings, [{"role": "user", "content": "hi"}], Answer, purpose="test")
    assert scripted_llm.request_count == 0


def test_soft_time_limit_propagates(settings, scripted_llm, monkeypatch):
    litellm = import_litellm()

    def interrupted(**_):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(litellm, "completion", interrupted)
    with pytest.raises(SoftTimeLimitExceeded):
        complete_json(settings, [{"role": "user", "content": "hi"}], Answer, purpose="test")


def test_a_soft_time_limit_wrapped_by_litellm_still_propagates(settings, scripted_llm, monkeypatch):
    """litellm re-raises what its HTTP client raised as its own APIConnectionError."""
    litellm = import_litellm()

    def wrapped(**_):
        try:
            raise SoftTimeLimitExceeded()
        except SoftTimeLimitExceeded as exc:
            raise litellm.APIConnectionError(
                message=f"OpenAIException - {exc!r}", llm_provider="openai", model="scripted"
            ) from exc

    monkeypatch.setattr(litellm, "completion", wrapped)
    with pytest.raises(SoftTimeLimitExceeded):
        complete_json(settings, [{"role": "user", "content": "hi"}], Answer, purpose="test")
