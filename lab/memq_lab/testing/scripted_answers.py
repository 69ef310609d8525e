"""A valid answer to every kind of request memq's workers make of an LLM, for a scripted
server (``scripted_llm.py``): topic confirmation, titles and summaries, memory review and
consolidation. Deterministic (a hash of the prompt decides a topic shift), shaped like a
real model's, meaning nothing: what they are for is the request path and its cost.
Used by the soak and by ``memq eval-longmemeval --scripted-llm``."""

from __future__ import annotations

import hashlib
import json
from typing import Any

# the JSON schema names of memq's requests (the pydantic model each answer is read into)
STAGES = {"TopicShift": "topic confirmation", "MemoryRatings": "review", "Consolidation": "facts"}
SUMMARIES = "titles and summaries"  # every other request: an episode's title and summary


def schema_of(request: dict[str, Any]) -> str:
    return str(((request.get("response_format") or {}).get("json_schema") or {}).get("name", ""))


def stage_of(request: dict[str, Any]) -> str:
    """The pipeline stage that made the request."""
    return STAGES.get(schema_of(request), SUMMARIES)


def prompt_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in request.get("messages", []))


def valid_answer(request: dict[str, Any]) -> Any:
    """An answer the request's schema accepts."""
    schema = schema_of(request)
    text = prompt_text(request)
    digest = int(hashlib.sha1(text.encode("utf-8", "replace")).hexdigest(), 16)
    if schema == "Consolidation":  # the chain goes on: nothing lasting in scripted chatter
        return {"actions": []}
    if schema == "MemoryRatings":
        shown = [line.split("]", 1)[0][1:] for line in text.splitlines() if line.startswith("[")]
        return {"ratings": [{"memory": int(n), "rating": "good", "reason": "scripted"} for n in shown if n.isdigit()]}
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
            "title": f"Scripted episode about {' '.join(words[:4]) or 'messages'} and more",
            "summary": f"The user and the assistant exchanged messages about {topic}.",
        }
    )
