"""Named detector profiles: a profile selects a detector and its parameters
(episodic_agent's profiles). ``MEMQ_DETECTOR`` (or ``--detector`` on ``memq demo`` and
``memq eval``) picks one; ``memq eval`` scores them all side by side.

The LLM, when configured (``MEMQ_LLM_MODEL``), confirms dual-channel topic
candidates; without one, the hysteresis detector does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memq.shared.errors import ConfigError
from memq.shared.mailbox.codec import QueuedMessage
from memq.shared.settings import Settings
from memq.worker.segmentation.detectors.base import Detector
from memq.worker.segmentation.detectors.dual_channel import ConfirmFn, DualChannelDetector, DualChannelParams
from memq.worker.segmentation.detectors.either import EitherDetector
from memq.worker.segmentation.detectors.hysteresis import HysteresisDetector, HysteresisParams
from memq.worker.segmentation.detectors.learned import MODELS, LearnedDetector, load_model
from memq.worker.segmentation.detectors.rules_only import RulesOnlyDetector
from memq.worker.segmentation.detectors.topic_shift_llm import TopicShift

EmbedText = Callable[[str], np.ndarray]


def seed_hysteresis(settings: Settings) -> HysteresisParams:
    """episodic_agent's parameters, overridable by settings."""
    return HysteresisParams(
        high=settings.hysteresis_high,
        low=settings.hysteresis_low,
        time_interval=settings.hysteresis_time_interval,
        prediction_weight=settings.hysteresis_prediction_weight,
        drift_weight=settings.hysteresis_drift_weight,
        drop_weight=settings.hysteresis_drop_weight,
        marker_weight=settings.hysteresis_marker_weight,
        time_weight=settings.hysteresis_time_weight,
        bias=settings.hysteresis_bias,
        window=settings.hysteresis_window,
    )


# How each model family is trained (``memq eval --train``; docs/evaluation.md).
TRAIN_COMMANDS = {
    "tiage": "memq eval --train tiage_train.json",
    "general": (
        "memq eval --train tiage_train.json --train superdialseg_validation.jsonl "
        "--features general --stitch 300 --c 0.03"
    ),
    "style": (
        "memq eval --train tiage_train.json --train superdialseg_validation.jsonl "
        "--features style --model trees --stitch 300"
    ),
    "blend": (
        "memq eval --train tiage_train.json --train superdialseg_validation.jsonl "
        "--features style --model blend --c 0.03 --stitch 300"
    ),
}


def learned(settings: Settings, name: str, default_lookahead: int, family: str = "tiage") -> LearnedDetector:
    """A learned scorer (``memq eval --train``) of ``family`` (``tiage``: fit on TIAGE train
    only; ``general``: the cross-domain model; ``style``: its tree variant reading the
    conversation's style; ``blend``: the two averaged), in the variant trained for the look-ahead in
    force (``MEMQ_LOOKAHEAD_MESSAGES`` or the profile's)."""
    w = default_lookahead if settings.lookahead_messages is None else settings.lookahead_messages
    available = sorted(p.stem for p in MODELS.glob(f"{family}_w*.json"))
    if f"{family}_w{w}" not in available:
        raise ConfigError(
            f"no learned boundary model for look-ahead {w} (have: {', '.join(available)}); "
            f"set MEMQ_LOOKAHEAD_MESSAGES to one of those or train one: "
            f"{TRAIN_COMMANDS[family]} --lookahead {w}"
        )
    return LearnedDetector(load_model(f"{family}_w{w}"), name=name)


def either(settings: Settings, name: str) -> EitherDetector:
    """The TIAGE scorer and the cross-domain ``blend`` scorer, a cut when either is
    confident (``either.py``), in the variants trained for the look-ahead in force."""
    first = learned(settings, name, 2)
    second = learned(settings, name, 2, "blend")
    return EitherDetector(second.model, name=name, first=first, second_scale=settings.either_second_scale)


def _lookahead(settings: Settings) -> int:
    return settings.lookahead_messages or 0


def _dual(
    settings: Settings, fallback: HysteresisDetector | LearnedDetector, embed_text: EmbedText | None, use_llm: bool
) -> DualChannelDetector:
    confirm: ConfirmFn | None = None
    if use_llm and settings.llm_enabled:
        from memq.worker.segmentation.detectors.topic_shift_llm import llm_topic_shift

        def confirm(event_model: str | None, history: Sequence[QueuedMessage], new: QueuedMessage) -> TopicShift:
            return llm_topic_shift(settings, event_model, history, new)

    return DualChannelDetector(
        params=DualChannelParams(
            surprise_threshold=settings.surprise_threshold,
            topic_threshold=settings.topic_threshold,
            alpha=settings.topic_rolling_alpha,
            confidence=settings.llm_confidence_threshold,
        ),
        confirm_llm=confirm,
        embed_text=embed_text,
        hysteresis=fallback,
    )


@dataclass(frozen=True)
class Profile:
    description: str
    build: Callable[[Settings, EmbedText | None], Detector]


PROFILES: dict[str, Profile] = {
    "rules": Profile(
        "rule layer only: 50 messages, 15-minute gaps, 4,000-token budget (no embeddings)",
        lambda s, e: RulesOnlyDetector(),
    ),
    "dual_channel": Profile(
        "Plast Mem: surprise < 0.35 or topic < 0.5 confirmed by the LLM (else by seed-004 hysteresis)",
        lambda s, e: _dual(s, HysteresisDetector(seed_hysteresis(s), lookahead=_lookahead(s)), e, use_llm=True),
    ),
    "hysteresis": Profile(
        "episodic_agent: weighted factors with high/low thresholds, seed weights",
        lambda s, e: HysteresisDetector(seed_hysteresis(s), lookahead=_lookahead(s)),
    ),
    "learned": Profile(
        "hysteresis over a logistic-regression score fit on TIAGE train, 2 messages of look-ahead",
        lambda s, e: learned(s, "learned", 2),
    ),
    "learned_streaming": Profile(
        "the learned scorer without look-ahead (pure streaming)",
        lambda s, e: learned(s, "learned_streaming", 0),
    ),
    "general": Profile(
        "hysteresis over a logistic regression of domain-general features (gap similarities, depth scores, "
        "similarities calibrated to the conversation) fit on TIAGE train + SuperDialseg validation + stitched "
        "streams, 2 messages of look-ahead",
        lambda s, e: learned(s, "general", 2, "general"),
    ),
    "style": Profile(
        "hysteresis over gradient-boosted trees of the general features and the conversation's style "
        "(running similarity and message-length statistics) fit on TIAGE train + SuperDialseg validation + "
        "stitched streams, 2 messages of look-ahead",
        lambda s, e: learned(s, "style", 2, "style"),
    ),
    "blend": Profile(
        "hysteresis over the average of the 'general' logistic regression and the 'style' trees (their logits), "
        "fit together on the same sets, 2 messages of look-ahead",
        lambda s, e: learned(s, "blend", 2, "blend"),
    ),
    "either": Profile(
        "a cut when either the TIAGE scorer ('learned') or the cross-domain 'blend' scorer at a stricter "
        "threshold (MEMQ_EITHER_SECOND_SCALE) is confident, 2 messages of look-ahead",
        lambda s, e: either(s, "either"),
    ),
    "dual_channel_learned": Profile(
        "Plast Mem's dual channel with the learned scorer confirming topic candidates when no LLM answers",
        lambda s, e: _dual(s, learned(s, "dual_channel_learned", 2), e, use_llm=True),
    ),
    "dual_channel_either": Profile(
        "Plast Mem's dual channel with 'either' confirming topic candidates when no LLM answers",
        lambda s, e: _dual(s, either(s, "dual_channel_either"), e, use_llm=True),
    ),
    "default": Profile(
        "no LLM: 'either'; with an LLM: 'dual_channel_either' (the LLM confirms topic shifts)",
        lambda s, e: _dual(s, either(s, "default"), e, use_llm=True) if s.llm_enabled else either(s, "default"),
    ),
}


def build_detector(settings: Settings, name: str | None = None, embed_text: EmbedText | None = None) -> Detector:
    name = name or settings.detector
    try:
        profile = PROFILES[name]
    except KeyError:
        raise ConfigError(f"unknown detector profile {name!r}; choose one of: {', '.join(PROFILES)}") from None
    return profile.build(settings, embed_text)
