"""A scripted LLM for the soak that answers every memq request kind and can be
switched into failing: HTTP 500s, 429s, timeouts, malformed JSON."""

from __future__ import annotations

import itertools
from typing import Any

from memq_lab.testing.scripted_answers import valid_answer
from memq_lab.testing.scripted_llm import Reply, ScriptedLLM

MODES = ("ok", "http_500", "http_429", "timeout", "malformed")


class SoakLLM:
    def __init__(self, timeout_delay: float = 10.0):
        self.server = ScriptedLLM()
        self.mode = "ok"
        self.timeout_delay = timeout_delay
        self._cycle = itertools.cycle(MODES[1:])
        self.server.default = self._answer
        self.answered: dict[str, int] = dict.fromkeys(MODES, 0)

    def start(self) -> SoakLLM:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def set_mode(self, mode: str) -> None:
        assert mode in MODES or mode == "mixed", mode
        self.mode = mode

    def _answer(self, request: dict) -> Any:
        mode = next(self._cycle) if self.mode == "mixed" else self.mode
        self.answered[mode] += 1
        if mode == "http_500":
            return Reply(status=500, content="scripted outage")
        if mode == "http_429":
            return Reply(status=429, content="scripted rate limit", headers={"Retry-After": "0"})
        if mode == "timeout":
            return Reply(content="{}", delay=self.timeout_delay)
        if mode == "malformed":
            return '{"title": "unterminated'
        return self._valid(request)

    @staticmethod
    def _valid(request: dict) -> Any:
        return valid_answer(request)
