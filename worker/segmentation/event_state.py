"""The segmenter's memory of the open event, persisted in the conversation's Redis
state hash (field ``event``) after every step so any worker can resume.

Embeddings are stored as base64 float32 (~2 kB each): the state is rewritten at every
step, so a detector keeps in ``recent`` only the embeddings its features read (its
``keep``); a window of 8 made ~18 kB of Redis writes per message, the largest share of them.

A conversation closed by a flush or an inactivity collapse keeps its state ``at_rest``:
without the left window and the previous message's text, which only the next event's
first messages would read, and which a closed conversation would otherwise hold in Redis
for the state's whole TTL (six vectors: ~12 kB per idle conversation).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from memq.shared.vector_codec import decode_vector, encode_vector

PREV_TEXT = "prev_text"  # extras key: the previous message's text, for detectors that read it


def _vec_out(v: np.ndarray | None) -> str | None:
    return None if v is None else encode_vector(v)


def _vec_in(s: str | None) -> np.ndarray | None:
    return None if s is None else decode_vector(s)


@dataclass(frozen=True, eq=False)
class EventState:
    event_model: str | None = None  # textual description of "what is happening now" (LLM path)
    event_model_embedding: np.ndarray | None = None
    last_embedding: np.ndarray | None = None  # rolling context embedding of the open event
    armed: bool = True  # hysteresis: may trigger again
    recent: list[np.ndarray] = field(default_factory=list)  # last few message embeddings (left window)
    event_size: int = 0  # messages in the open event
    overlap: list[dict[str, Any]] = field(default_factory=list)  # tail of the previous segment
    extras: dict[str, Any] = field(default_factory=dict)  # detector-specific small values

    def evolve(self, **changes: Any) -> EventState:
        return replace(self, **changes)

    def at_rest(self) -> EventState:
        """The state once its event is closed by a flush or an inactivity collapse: the next
        message opens an event as a conversation's first does, without looking back across
        the closed one (the local context before it ended with it). Kept: the
        conversation's running statistics (``extras`` other than ``prev_text``), the
        overlap tail the next episode begins with, and arming."""
        extras = {k: v for k, v in self.extras.items() if k != PREV_TEXT}
        return self.evolve(recent=[], last_embedding=None, event_model=None, event_model_embedding=None, extras=extras)

    def to_json(self) -> str:
        data = asdict(self)
        data["event_model_embedding"] = _vec_out(self.event_model_embedding)
        data["last_embedding"] = _vec_out(self.last_embedding)
        data["recent"] = [_vec_out(v) for v in self.recent]
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str | None) -> EventState:
        if not raw:
            return cls()
        data = json.loads(raw)
        data["event_model_embedding"] = _vec_in(data.get("event_model_embedding"))
        data["last_embedding"] = _vec_in(data.get("last_embedding"))
        data["recent"] = [_vec_in(v) for v in data.get("recent") or []]
        return cls(**data)
