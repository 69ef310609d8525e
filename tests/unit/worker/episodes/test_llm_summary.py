"""The LLM's title and summary (with the model call faked: no network)."""

import pydantic
import pytest

from memq.shared.llm import LLMResult
from memq.shared.settings import Settings
from memq.worker.episodes import llm_summary

S = Settings(_env_file=None)
MESSAGES = [{"role": "user", "content": "hello", "timestamp": "2026-05-01T12:00:00+00:00"}]


@pytest.fixture
def answer_model(monkeypatch):
    seen = {}

    def fake(settings, messages, output, *, purpose):
        seen["model"] = output
        return LLMResult(
            output.model_validate({"title": "Baking a  sourdough loaf at home.", "summary": " The user asked. "}),
            "m",
            1,
            0.0,
        )

    monkeypatch.setattr(llm_summary, "complete_json", fake)
    title, summary, _ = llm_summary.llm_title_and_summary(S, MESSAGES, [], [])
    assert (title, summary) == ("Baking a sourdough loaf at home", "The user asked.")
    return seen["model"]


@pytest.mark.parametrize("title", ["one two three four .", "one two three four . . .", "....."])
def test_a_title_is_counted_without_its_trailing_periods(answer_model, title):
    """ "one two three four ." passed the 5-word check and was stored as 4 words."""
    with pytest.raises(pydantic.ValidationError, match="title has"):
        answer_model.model_validate({"title": title, "summary": "x"})


def test_render_segment_marks_context_and_clips_tool_output():
    tool = {"role": "tool", "content": "x" * 5000, "timestamp": "2026-05-01T12:00:00+00:00"}
    text = llm_summary.render_segment([tool], MESSAGES)
    assert text.startswith("CONTEXT [2026-05-01T12:00] user: hello\n") and text.endswith("x [...]") and len(text) < 1100
