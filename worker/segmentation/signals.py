"""Signals for boundary detection, as pure functions over unit-normalised vectors
and message text."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

DISCOURSE_MARKERS = (
    "by the way",
    "btw",
    "anyway",
    "anyways",
    "speaking of",
    "on another note",
    "on a different note",
    "on a side note",
    "unrelated",
    "totally unrelated",
    "switching gears",
    "changing the subject",
    "change of subject",
    "different question",
    "another question",
    "quick question",
    "oh also",
    "oh, also",
    "also, ",
    "before i forget",
    "one more thing",
    "moving on",
    "let's talk about",
    "new topic",
    "random question",
    "so anyway",
    "oh and",
    "oh, and",
    "last thing",
    "separate question",
    "on another topic",
)
_MARKER_RE = re.compile(
    r"^\W*(?:" + "|".join(re.escape(m).replace(r"\ ", r"\s+") for m in DISCOURSE_MARKERS) + r")\b", re.IGNORECASE
)
_ANYWHERE_RE = re.compile(
    r"\b(?:by the way|btw|speaking of|unrelated|switching gears|changing the subject|on another note)\b", re.IGNORECASE
)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def normalise(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return (v / n).astype(np.float32) if n else np.asarray(v, dtype=np.float32)


def rolling(previous: np.ndarray, new: np.ndarray, alpha: float) -> np.ndarray:
    """Plast Mem's rolling average: the new message weighs ``alpha``."""
    return normalise((1.0 - alpha) * previous + alpha * new)


def centroid_update(centroid: np.ndarray | None, size: int, new: np.ndarray) -> np.ndarray:
    """Running mean direction of the event's messages (``size`` already in it)."""
    if centroid is None or size <= 0:
        return normalise(new)
    return normalise(centroid * size + new)


def mean_vector(vectors: Sequence[np.ndarray]) -> np.ndarray | None:
    if not vectors:
        return None
    return normalise(np.mean(np.stack(vectors), axis=0))


def discourse_marker(text: str) -> float:
    """1.0 for an opening topic-change marker ("By the way, ..."), 0.5 for one inside
    the message, else 0.0 (Plast Mem's temporal/discourse markers)."""
    if _MARKER_RE.search(text):
        return 1.0
    if _ANYWHERE_RE.search(text):
        return 0.5
    return 0.0
