"""What memq's LLM path costs, per 1,000 messages and by stage: a replay with an LLM
turned on, the LLM being a scripted OpenAI-compatible server on 127.0.0.1
(``memq_lab.testing.scripted_llm``) reached through litellm's real request path by the
workers, answering every request validly (``memq_lab.testing.scripted_answers``).

It counts each request by the stage that made it (topic confirmation, titles and
summaries, review, facts) and its prompt's tokens (the messages' text, counted with
tiktoken's cl100k as memq counts everything; the JSON schema sent beside them as the
response format is not counted). Completion tokens are not reported: a scripted answer's
length says nothing of a real model's.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from memq.shared.tokens import count_tokens
from memq_lab.testing.scripted_answers import STAGES, SUMMARIES, prompt_text, stage_of, valid_answer
from memq_lab.testing.scripted_llm import ScriptedLLM

STAGE_ORDER = (STAGES["TopicShift"], SUMMARIES, STAGES["MemoryRatings"], STAGES["Consolidation"])


class LlmMeter:
    """The scripted server and what it was asked, by stage."""

    def __init__(self) -> None:
        self.server = ScriptedLLM()
        self.server.default = self._answer
        self.calls: Counter[str] = Counter()
        self.prompt_tokens: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __enter__(self) -> LlmMeter:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    def _answer(self, request: dict[str, Any]) -> Any:
        stage, tokens = stage_of(request), count_tokens(prompt_text(request))
        with self._lock:
            self.calls[stage] += 1
            self.prompt_tokens[stage] += tokens
        return valid_answer(request)

    def environment(self) -> dict[str, str]:
        """The settings that point workers at the server."""
        return {"MEMQ_LLM_MODEL": "openai/scripted", "MEMQ_LLM_API_BASE": self.server.base_url, "MEMQ_LLM_API_KEY": "x"}

    def per_thousand(self, messages: int) -> dict[str, dict[str, float]]:
        """Calls and prompt tokens per 1,000 messages replayed, by stage, and in all."""
        scale = 1000 / max(1, messages)
        out = {
            stage: {"calls": self.calls[stage] * scale, "prompt_tokens": self.prompt_tokens[stage] * scale}
            for stage in STAGE_ORDER
        }
        out["all"] = {
            "calls": sum(self.calls.values()) * scale,
            "prompt_tokens": sum(self.prompt_tokens.values()) * scale,
        }
        return out
