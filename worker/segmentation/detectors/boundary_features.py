"""Features of a candidate boundary before the new message, for the learned scorer.

Pure: built from the last few message embeddings (``recent``), the new message's
embedding, the look-ahead embeddings, and the texts of the previous and new
messages. The same function builds training rows offline and scores messages live,
so what was trained is what runs.

Embedding features: element-wise products and absolute differences of (previous,
new) and of (left window mean, right window mean), plus a handful of cosines.
Text features: generic dialogue-act cues (questions, "do you ..." invitations,
discourse markers, short acknowledgements, greetings, lengths).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from memq.worker.segmentation.signals import discourse_marker

_YOU_QUESTION = re.compile(r"\b(?:do|what|how|are|have|did|would|can|could|where|which|who) you\b", re.IGNORECASE)
_ACK = re.compile(
    r"^\W*(?:yes|no|yeah|yep|nope|sure|i do|i am|me too|that is|that's|"
    r"cool|nice|wow|oh|ok|okay|great|thanks|lol|haha)\b",
    re.IGNORECASE,
)
_GREETING = re.compile(r"^\W*(?:hi|hello|hey|good (?:morning|evening|afternoon))\b", re.IGNORECASE)

HISTORY = 3  # earlier messages ``feature_vector`` looks at: what a detector using it must keep
TEXT_FEATURES = ("q_new", "q_prev", "you_question", "marker", "len_new", "len_prev", "ack_new", "greeting_prev")
COSINES = ("cos_prev", "cos_left", "cos_left_right", "cos_left2_right2", "cos_prev2", "cos_next_prev", "cos_next_new")


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n else v


def _mean(vectors: Sequence[np.ndarray]) -> np.ndarray:
    return _unit(np.mean(np.stack(vectors), axis=0))


def text_features(new_text: str, prev_text: str) -> np.ndarray:
    return np.array(
        [
            1.0 if "?" in new_text else 0.0,
            1.0 if "?" in prev_text else 0.0,
            1.0 if _YOU_QUESTION.search(new_text) else 0.0,
            discourse_marker(new_text),
            min(len(new_text.split()), 40) / 40,
            min(len(prev_text.split()), 40) / 40,
            1.0 if _ACK.match(new_text) else 0.0,
            1.0 if _GREETING.match(prev_text) else 0.0,
        ],
        dtype=np.float32,
    )


def feature_vector(
    recent: Sequence[np.ndarray],
    new: np.ndarray,
    lookahead: Sequence[np.ndarray],
    new_text: str,
    prev_text: str,
    *,
    right: int,
) -> np.ndarray:
    """``recent`` oldest first (at least one message); ``right`` = look-ahead used."""
    prev = recent[-1]
    left = _mean(recent[-HISTORY:])
    rwin = _mean([new, *list(lookahead)[:right]])
    left2 = _mean(recent[-2:])
    right2 = _mean([new, *list(lookahead)[:1]])
    nxt = lookahead[0] if lookahead and right > 0 else new
    cos = np.array(
        [
            prev @ new,
            left @ new,
            left @ rwin,
            left2 @ right2,
            (recent[-2] @ new) if len(recent) >= 2 else 1.0,
            nxt @ prev,
            nxt @ new,
        ],
        dtype=np.float32,
    )
    return np.concatenate(
        [new * prev, np.abs(new - prev), left * rwin, np.abs(left - rwin), cos, text_features(new_text, prev_text)]
    ).astype(np.float32)


def feature_names(dim: int) -> list[str]:
    """The name of each position of ``feature_vector`` (for reading a fitted model's weights;
    the tests hold the vector to it)."""
    blocks = ("new*prev", "|new-prev|", "left*right", "|left-right|")
    return [f"{b}[{i}]" for b in blocks for i in range(dim)] + list(COSINES) + list(TEXT_FEATURES)
