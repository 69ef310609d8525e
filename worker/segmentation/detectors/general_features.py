"""Domain-general features of a candidate boundary, for the cross-domain learned scorer.

The TIAGE scorer (``boundary_features``) reads 1,536 embedding interactions: it learns
which *directions* of the embedding space mark a topic shift in chit-chat, and that does
not carry over to other kinds of conversation. These features are a few dozen numbers
that mean the same thing in any domain:

* **gap similarities**: the cosine between the mean of the ``k`` messages before the gap
  and the mean of the ``k`` messages from the new one on (TextTiling's block
  comparison), for ``k`` = 1, 2, 3, with as much look-ahead as the detector has;
* **depth scores** (TextTiling): how far the gap's similarity lies below the highest
  similarity of the nearby gaps on its left (from history) and on its right (from the
  look-ahead), for ``k`` = 1 and 2;
* **calibration to the conversation**: the adjacent-message cosine as a z-score against
  that conversation's own running mean and spread (``SimilarityStats``), since one
  domain's "unusually dissimilar" is another's normal;
* **dialogue-act cues** (``boundary_features.text_features``) and whether the new
  message is the user's (in assistant conversations new topics come from the user);
* **a boundary-rate prior**: how many messages the open event already holds.

Pure functions: the same code builds training rows offline and scores messages live.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memq.worker.segmentation.detectors.boundary_features import TEXT_FEATURES, text_features

WIDTHS = (1, 2, 3)
DEPTH_WIDTHS = (1, 2)
HISTORY = 6  # earlier messages the features look at
NEIGHBOURS = 3  # gaps on each side a depth score compares with
EVENT_CAP = 12  # event sizes above this count as this

# Prior for a conversation's adjacent-message cosine before it has any of its own
# (pseudo-count ``PRIOR_WEIGHT``), and how many messages the running statistics remember.
PRIOR_MEAN = 0.3
PRIOR_SD = 0.15
PRIOR_WEIGHT = 4.0
STATS_HORIZON = 100

GENERAL_FEATURES: tuple[str, ...] = (
    *(f"sim{k}" for k in WIDTHS),
    *(f"depth{k}" for k in DEPTH_WIDTHS),
    *(f"depth{k}_left" for k in DEPTH_WIDTHS),
    *(f"depth{k}_right" for k in DEPTH_WIDTHS),
    "z_sim1",
    "z_sim2",
    "cos_next_prev",
    "cos_next_new",
    *TEXT_FEATURES,
    "user_new",
    "event_size",
)


@dataclass(frozen=True)
class SimilarityStats:
    """Running mean and variance of a conversation's adjacent-message cosines
    (exponentially forgetting after ``STATS_HORIZON`` messages)."""

    count: float = 0.0
    mean: float = 0.0
    var: float = 0.0

    def update(self, value: float) -> SimilarityStats:
        n = min(self.count + 1.0, float(STATS_HORIZON))
        delta = value - self.mean
        mean = self.mean + delta / n
        var = self.var + (delta * (value - mean) - self.var) / n
        return SimilarityStats(self.count + 1.0, mean, max(0.0, var))

    def shrunk(self) -> tuple[float, float]:
        """Mean and spread of the conversation so far, shrunk toward the prior while it is short."""
        n = min(self.count, float(STATS_HORIZON))
        mean = (n * self.mean + PRIOR_WEIGHT * PRIOR_MEAN) / (n + PRIOR_WEIGHT)
        var = (n * self.var + PRIOR_WEIGHT * PRIOR_SD**2) / (n + PRIOR_WEIGHT)
        return float(mean), float(np.sqrt(var))

    def z(self, value: float) -> float:
        """``value`` against the conversation so far (``shrunk``)."""
        mean, sd = self.shrunk()
        return float(np.clip((value - mean) / max(sd, 0.05), -5.0, 5.0))

    def to_list(self) -> list[float]:
        return [round(self.count, 1), round(self.mean, 6), round(self.var, 6)]

    @classmethod
    def from_list(cls, values: Sequence[float] | None) -> SimilarityStats:
        return cls(*values) if values else cls()


def _prefix_sums(seq: Sequence[np.ndarray]) -> np.ndarray:
    """Row i: the sum of ``seq[:i]`` (float64), so any window's sum is one subtraction."""
    sums = np.zeros((len(seq) + 1, len(seq[0])), dtype=np.float64)
    np.cumsum(np.stack(seq), axis=0, dtype=np.float64, out=sums[1:])
    return sums


def _similarities(sums: np.ndarray, gaps: Sequence[int], widths: Sequence[int]) -> np.ndarray:
    """``gap_similarity`` for each (gap, k) pair at once. The cosine of two windows' means is
    the cosine of their sums; 0 where a window sums to nothing."""
    g, k = np.asarray(gaps), np.asarray(widths)
    left = sums[g] - sums[np.maximum(0, g - k)]
    right = sums[np.minimum(len(sums) - 1, g + k)] - sums[g]
    norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    dots = np.einsum("ij,ij->i", left, right)
    out: np.ndarray = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return out


def _depth_gaps(n: int, gap: int) -> tuple[list[int], int]:
    """The gaps a depth score of ``gap`` compares (its left neighbours, itself, its right
    neighbours, in order) in a sequence of ``n``, and where ``gap`` is among them."""
    left = list(range(max(1, gap - NEIGHBOURS), gap))
    return [*left, gap, *range(gap + 1, min(n, gap + 1 + NEIGHBOURS))], len(left)


def _depth(similarities: np.ndarray, own: int) -> tuple[float, float]:
    value = similarities[own]
    return float(similarities[: own + 1].max() - value), float(similarities[own:].max() - value)


def gap_similarity(seq: Sequence[np.ndarray], gap: int, k: int) -> float:
    """Cosine of the means of ``seq[gap-k:gap]`` and ``seq[gap:gap+k]`` (each side cut to what exists)."""
    return float(_similarities(_prefix_sums(seq), [gap], [k])[0])


def depth(seq: Sequence[np.ndarray], gap: int, k: int) -> tuple[float, float]:
    """TextTiling's depth of ``gap``: (highest similarity among the ``NEIGHBOURS`` gaps on
    its left, or itself) minus its own, and the same on its right; both >= 0."""
    gaps, own = _depth_gaps(len(seq), gap)
    return _depth(_similarities(_prefix_sums(seq), gaps, [k] * len(gaps)), own)


def general_features(
    recent: Sequence[np.ndarray],
    new: np.ndarray,
    lookahead: Sequence[np.ndarray],
    new_text: str,
    prev_text: str,
    *,
    right: int,
    stats: SimilarityStats,
    user_new: bool,
    event_size: int,
) -> np.ndarray:
    """``recent`` oldest first (at least one message); ``right`` = look-ahead used;
    ``stats`` = the conversation's adjacent cosines before ``new``; ``event_size`` =
    messages in the open event before ``new``."""
    history = list(recent)[-HISTORY:]
    ahead = list(lookahead)[:right]
    seq = [*history, new, *ahead]
    gap = len(history)
    # every similarity the features read, in one vectorised pass over the window sums
    near, own = _depth_gaps(len(seq), gap)
    pairs = [(gap, k) for k in WIDTHS] + [(g, k) for k in DEPTH_WIDTHS for g in near]
    found = _similarities(_prefix_sums(seq), [g for g, _ in pairs], [k for _, k in pairs])
    sims = [float(v) for v in found[: len(WIDTHS)]]
    depths = [
        _depth(found[len(WIDTHS) + i * len(near) : len(WIDTHS) + (i + 1) * len(near)], own)
        for i in range(len(DEPTH_WIDTHS))
    ]
    prev = history[-1]
    nxt = ahead[0] if ahead else new
    return np.array(
        [
            *sims,
            *(a + b for a, b in depths),
            *(a for a, _ in depths),
            *(b for _, b in depths),
            stats.z(sims[0]),
            stats.z(sims[1]),
            float(nxt @ prev),
            float(nxt @ new),
            *text_features(new_text, prev_text),
            1.0 if user_new else 0.0,
            min(event_size, EVENT_CAP) / EVENT_CAP,
        ],
        dtype=np.float32,
    )
