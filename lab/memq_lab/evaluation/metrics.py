"""Topic-segmentation metrics: Pk, WindowDiff and boundary F1 (pure functions).

Conventions
-----------
A segmentation of a dialogue of ``n`` utterances is given as a *boundary set*:
index ``i`` (``0 < i < n``) means "a new topic starts at utterance ``i``", as in
:class:`memq_lab.evaluation.datasets.Dialogue`.

:func:`pk` and :func:`windowdiff` follow ``nltk.metrics.segmentation`` exactly and
take nltk-style per-utterance *indicator masks* instead. We use the "boundary
after unit" reading of nltk's masks: the mask has length ``n`` and

    ``mask[j] == 1``  iff  a new topic starts at utterance ``j + 1``
    (i.e. there is a boundary between utterances ``j`` and ``j + 1``),

so boundary index ``i`` maps to ``mask[i - 1] = 1`` and ``mask[n - 1]`` is always
0 (see :func:`boundaries_to_mask`). With this reading nltk's window
``mask[i:i + k]`` counts the boundaries between utterances ``i`` and ``i + k``,
which is the probe pair of Beeferman et al.'s Pk and Pevzner & Hearst's
WindowDiff. Both masks of a comparison must use the same convention.

The window size per dialogue is ``k = max(2, round(n / num_segments / 2))`` with
``num_segments`` taken from the reference (:func:`window_size`); ``round`` is
Python's (round-half-to-even), as in nltk's own default.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from statistics import fmean

__all__ = [
    "METRIC_KEYS",
    "aggregate",
    "all_boundaries",
    "boundaries_to_mask",
    "boundary_f1",
    "every_k",
    "no_boundaries",
    "pk",
    "score_dialogue",
    "window_size",
    "windowdiff",
]

#: Per-dialogue metrics that :func:`aggregate` averages.
METRIC_KEYS: tuple[str, ...] = ("pk", "windowdiff", "precision", "recall", "f1")


# ------------------------------------------------------------------ conversions


def boundaries_to_mask(boundaries: Iterable[int], n: int) -> list[int]:
    """Convert a boundary set into an nltk-style indicator mask of length ``n``.

    ``mask[i - 1] = 1`` for every boundary ``i`` ("boundary after utterance
    ``i - 1``"); every other entry, including ``mask[n - 1]``, is 0.

    >>> boundaries_to_mask({2, 4}, 6)
    [0, 1, 0, 1, 0, 0]

    Raises:
        ValueError: if ``n < 0`` or a boundary lies outside ``1..n - 1``.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    mask = [0] * n
    for i in boundaries:
        if not 0 < i < n:
            raise ValueError(f"boundary {i} outside 1..{n - 1} for n={n}")
        mask[i - 1] = 1
    return mask


def window_size(n: int, num_segments: int) -> int:
    """Pk/WindowDiff window: ``max(2, round(n / num_segments / 2))``.

    ``num_segments`` is the number of *reference* segments (boundaries + 1), so
    ``k`` is half the mean reference segment length, but at least 2.
    """
    if num_segments < 1:
        raise ValueError(f"num_segments must be >= 1, got {num_segments}")
    return max(2, round(n / num_segments / 2))


# ------------------------------------------------------------------ Pk/WindowDiff


def _check_masks(reference: Sequence[int], hypothesis: Sequence[int], k: int) -> int:
    n = len(reference)
    if len(hypothesis) != n:
        raise ValueError(f"segmentations have unequal length ({n} vs {len(hypothesis)})")
    if not 1 <= k <= n:
        raise ValueError(f"window size k must be in 1..{n} (the mask length), got {k}")
    return n


def pk(reference: Sequence[int], hypothesis: Sequence[int], k: int) -> float:
    """Beeferman's Pk, identical to ``nltk.metrics.segmentation.pk(ref, hyp, k, 1)``.

    ``reference`` and ``hypothesis`` are 0/1 masks (see the module docstring).
    For each of the ``n - k + 1`` windows ``[i, i + k)`` count an error when
    exactly one of the two masks has a boundary in the window; return the error
    rate. 0 is perfect.

    Unlike nltk, ``k`` must satisfy ``1 <= k <= n`` (nltk returns nonsense or
    divides by zero otherwise); masks of unequal length raise ``ValueError``.
    """
    n = _check_masks(reference, hypothesis, k)
    errors = 0
    for i in range(n - k + 1):
        in_ref = any(reference[i : i + k])
        in_hyp = any(hypothesis[i : i + k])
        errors += in_ref != in_hyp
    return errors / (n - k + 1)


def windowdiff(reference: Sequence[int], hypothesis: Sequence[int], k: int) -> float:
    """WindowDiff, identical to ``nltk.metrics.segmentation.windowdiff(ref, hyp, k, 1)``.

    ``reference`` and ``hypothesis`` are 0/1 masks (see the module docstring).
    For each of the ``n - k + 1`` windows ``[i, i + k)`` count an error when the
    two masks hold a different *number* of boundaries in the window (unweighted
    variant); return the error rate. 0 is perfect.

    Raises:
        ValueError: if the masks differ in length or ``k`` is not in ``1..n``.
    """
    n = _check_masks(reference, hypothesis, k)
    errors = 0
    for i in range(n - k + 1):
        errors += sum(reference[i : i + k]) != sum(hypothesis[i : i + k])
    return errors / (n - k + 1)


# ------------------------------------------------------------------ boundary F1


def boundary_f1(reference: set[int], hypothesis: set[int]) -> tuple[float, float, float]:
    """Exact-position boundary precision, recall and F1.

    A hypothesised boundary counts only if the very same index is a reference
    boundary. Empty sets are handled "vacuously": precision is 1.0 when nothing
    is hypothesised and recall is 1.0 when there is nothing to find. Hence

    * both empty -> ``(1.0, 1.0, 1.0)``;
    * reference empty, hypothesis not -> ``(0.0, 1.0, 0.0)``;
    * hypothesis empty, reference not -> ``(1.0, 0.0, 0.0)``.

    F1 is the harmonic mean of precision and recall (0.0 when both are 0).
    """
    ref, hyp = set(reference), set(hypothesis)
    hits = len(ref & hyp)
    precision = hits / len(hyp) if hyp else 1.0
    recall = hits / len(ref) if ref else 1.0
    total = precision + recall
    f1 = 2 * precision * recall / total if total else 0.0
    return precision, recall, f1


# ------------------------------------------------------------------ per dialogue


def score_dialogue(n: int, reference: set[int], hypothesis: set[int]) -> dict[str, float]:
    """Score one dialogue of ``n`` utterances given two boundary sets.

    ``k = window_size(n, len(reference) + 1)``, clamped to ``n`` (this only
    matters for ``n == 1``, where the clamp gives ``k = 1`` and every metric is
    perfect because no boundary is possible).

    Returns:
        ``{"pk", "windowdiff", "precision", "recall", "f1", "k"}``.

    Raises:
        ValueError: if ``n < 1`` or a boundary lies outside ``1..n - 1``.
    """
    if n < 1:
        raise ValueError(f"cannot score a dialogue with {n} utterances")
    ref_mask = boundaries_to_mask(reference, n)
    hyp_mask = boundaries_to_mask(hypothesis, n)
    k = min(window_size(n, len(set(reference)) + 1), n)
    precision, recall, f1 = boundary_f1(set(reference), set(hypothesis))
    return {
        "pk": pk(ref_mask, hyp_mask, k),
        "windowdiff": windowdiff(ref_mask, hyp_mask, k),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "k": k,
    }


def aggregate(scores: list[dict[str, float]]) -> dict[str, float]:
    """Macro-average :data:`METRIC_KEYS` over dialogues.

    Returns:
        The mean of each metric in :data:`METRIC_KEYS` plus ``"dialogues"``, the
        number of dialogues averaged (``k`` is not averaged).

    Raises:
        ValueError: if ``scores`` is empty.
    """
    if not scores:
        raise ValueError("cannot aggregate an empty list of scores")
    result: dict[str, float] = {key: fmean(s[key] for s in scores) for key in METRIC_KEYS}
    result["dialogues"] = len(scores)
    return result


# ------------------------------------------------------------------ baselines


def no_boundaries(n: int) -> set[int]:
    """Baseline: the whole dialogue is one segment."""
    return set()


def every_k(n: int, k: int) -> set[int]:
    """Baseline: a boundary every ``k`` utterances, at ``k, 2k, ...`` (< ``n``)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return set(range(k, n, k))


def all_boundaries(n: int) -> set[int]:
    """Baseline: every utterance after the first starts a new segment."""
    return set(range(1, n))
