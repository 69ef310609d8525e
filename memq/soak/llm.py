"""A scripted LLM for the soak that answers every memq request kind and can be
switched into failing: HTTP 500s, 429s, timeouts, malformed JSON."""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

from memq.testing.scripted_llm import Reply, ScriptedLLM

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
        schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("name", "")
        text = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
        digest = int(hashlib.sha1(text.encode("utf-8", "replace")).hexdigest(), 16)
        if schema == "Consolidation":  # the chain goes on: nothing lasting in soak chatter
            return {"actions": []}
        if schema == "MemoryRatings":
            shown = [line.split("]", 1)[0][1:] for line in text.splitlines() if line.startswith("[")]
            return {"ratings": [{"memory": int(n), "rating": "good", "reason": "soak"} for n in shown if n.isdigit()]}
        if schema == "TopicShift":
            shift = digest % 5 == 0
            return {
                "is_boundary": shift,
                "confidence": 0.9 if shift else 0.4,
                "signals": {"topic_shift": 0.8 if shift else 0.2, "intent_shift": 0.3, "temporal_marker": 0.0},
                "updated_event_model": "The conversation continues on the same subject.",
            }
        words = [w for w in text.split() if w.isalpha()][:40]
        topic = " ".join(words[-6:]) or "a conversation"
        return json.dumps(
            {
                "title": f"Soak episode about {' '.join(words[:4]) or 'messages'} and more",
                "summary": f"The user and the assistant exchanged messages about {topic}.",
            }
        )
