"""Plast Mem's dual-channel boundary detection.

Either channel can end the event:

- Surprise: ``cos(event model embedding, new) < surprise_threshold`` (0.35) is a
  boundary directly, no LLM; surprise = 1 - that cosine, recorded on the episode.
- Topic: ``cos(last embedding, new) >= topic_threshold`` (0.5) is the same topic and
  updates the last embedding by a rolling average (alpha 0.2). Below it, the change is
  a candidate, confirmed by the LLM when one is configured (``is_boundary`` and
  ``confidence >= 0.7``; when not a boundary the LLM's updated event model replaces
  the old and is re-embedded), and otherwise, or when the LLM fails, by the
  hysteresis detector (episodic_agent).

Without an LLM the event model is the centroid of the event's message embeddings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import structlog

from memq.shared.llm import LLMError
from memq.shared.mailbox.codec import QueuedMessage
from memq.worker.segmentation.detectors.base import DetectionInput, Verdict
from memq.worker.segmentation.detectors.hysteresis import HysteresisDetector, new_event, remember
from memq.worker.segmentation.detectors.learned import LearnedDetector
from memq.worker.segmentation.detectors.topic_shift_llm import TopicShift
from memq.worker.segmentation.event_state import PREV_TEXT, EventState
from memq.worker.segmentation.signals import cosine, rolling

log = structlog.get_logger("memq.segmentation")

ConfirmFn = Callable[[str | None, Sequence[QueuedMessage], QueuedMessage], TopicShift]
EmbedFn = Callable[[str], np.ndarray]


@dataclass(frozen=True)
class DualChannelParams:
    surprise_threshold: float = 0.35
    topic_threshold: float = 0.5
    alpha: float = 0.2
    confidence: float = 0.7
    history: int = 6  # messages of recent history shown to the LLM


@dataclass
class DualChannelDetector:
    params: DualChannelParams = field(default_factory=DualChannelParams)
    confirm_llm: ConfirmFn | None = None
    embed_text: EmbedFn | None = None
    hysteresis: HysteresisDetector | LearnedDetector = field(default_factory=HysteresisDetector)
    name: str = "dual_channel"
    needs_embeddings: bool = True

    @property
    def lookahead(self) -> int:
        return getattr(self.hysteresis, "lookahead", 0)

    def check(self, data: DetectionInput) -> Verdict:
        # needs_embeddings: the drain embeds every message for this detector
        e, state, p = cast(np.ndarray, data.embedding), data.state, self.params
        surprise = 0.0
        factors: dict[str, float] = {}
        if state.event_model_embedding is not None:
            sim_event = cosine(state.event_model_embedding, e)
            surprise = min(1.0, max(0.0, 1.0 - sim_event))
            factors["event_sim"] = sim_event
            if sim_event < p.surprise_threshold:
                return Verdict(True, state, surprise, "surprise", "embedding", score=surprise, factors=factors)

        if state.last_embedding is None:
            return Verdict(
                False,
                self._absorb(state, e, None, data.new.content),
                surprise,
                "topic_init",
                "embedding",
                factors=factors,
            )
        sim_topic = cosine(state.last_embedding, e)
        factors["topic_sim"] = sim_topic
        if sim_topic >= p.topic_threshold:
            return Verdict(
                False,
                self._absorb(state, e, rolling(state.last_embedding, e, p.alpha), data.new.content),
                surprise,
                "same_topic",
                "embedding",
                factors=factors,
            )

        # A topic-shift candidate: the LLM decides when there is one.
        if self.confirm_llm is not None:
            try:
                shift = self.confirm_llm(state.event_model, list(data.buffer)[-p.history :], data.new)
                factors.update(confidence=shift.confidence, **shift.signals.model_dump())
                if shift.is_boundary and shift.confidence >= p.confidence:
                    nxt = state.evolve(extras={**state.extras, "next_event_model": shift.updated_event_model})
                    return Verdict(True, nxt, surprise, "topic_shift", "llm", score=shift.confidence, factors=factors)
                absorbed = self._absorb(state, e, rolling(state.last_embedding, e, p.alpha), data.new.content)
                model_vec = (
                    self.embed_text(shift.updated_event_model) if self.embed_text else absorbed.event_model_embedding
                )
                absorbed = absorbed.evolve(event_model=shift.updated_event_model, event_model_embedding=model_vec)
                return Verdict(
                    False, absorbed, surprise, "topic_continues", "llm", score=shift.confidence, factors=factors
                )
            except LLMError as exc:
                log.warning("topic_shift_llm_failed", error=":".join(str(exc).split(":")[:2]), fallback="hysteresis")
                factors["llm_failed"] = 1.0

        trigger, s, f, armed_state = self.hysteresis.evaluate(data)
        factors.update(f)
        if trigger:
            return Verdict(True, armed_state, surprise, "topic_shift", "hysteresis", score=s, factors=factors)
        return Verdict(
            False,
            self._absorb(armed_state, e, rolling(state.last_embedding, e, p.alpha), data.new.content),
            surprise,
            "topic_candidate_rejected",
            "hysteresis",
            score=s,
            factors=factors,
        )

    def _absorb(
        self, state: EventState, embedding: np.ndarray, last: np.ndarray | None, text: str | None = None
    ) -> EventState:
        if text is not None:
            state = state.evolve(extras={**state.extras, PREV_TEXT: text[:500]})
        state = remember(state, embedding, self.hysteresis.keep)
        return state.evolve(last_embedding=embedding if last is None else last)

    def observe(self, message: QueuedMessage, embedding: np.ndarray | None, state: EventState) -> EventState:
        state = state.evolve(extras={**state.extras, PREV_TEXT: message.content[:500]})
        if embedding is None:
            return remember(state, None, self.hysteresis.keep)
        last = (
            embedding if state.last_embedding is None else rolling(state.last_embedding, embedding, self.params.alpha)
        )
        return self._absorb(state, embedding, last)

    def start_event(self, edge: QueuedMessage | None, embedding: np.ndarray | None, state: EventState) -> EventState:
        next_model = state.extras.get("next_event_model")
        fresh = new_event(state.evolve(extras={}), edge, embedding, self.hysteresis.keep)
        if edge is not None:
            fresh = fresh.evolve(extras={PREV_TEXT: edge.content[:500]})
        if next_model and edge is not None and self.embed_text is not None:
            fresh = fresh.evolve(event_model=next_model, event_model_embedding=self.embed_text(next_model))
        return fresh
