"""One feature row per place a chapter could start (message ``i`` of a stream, ``0 < i <
n``), for the learned scorer. Pure.

A topic a reader would name shows in two ways. In meaning: the messages before ``i`` and
those after it are about different things, read over windows of 3, 6 and 10 messages on
each side (each as the cosine of the windows' mean embeddings, that cosine against the
stream's own mean and spread, and how deep a valley it is between the highest values
within the window on either side, TextTiling's depth score). In wording: a greeting or a
request that opens a matter begins a topic; a follow-up ("and what about ...") or a
pronoun among the first words leans on the one before; a farewell ends one.

Hindsight is the point: chapters are drawn over stored messages, so the windows look as
far ahead as they look back (the online event detector sees two messages ahead)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from memq.memory.chapters.cues import follows_up, greets, opens_a_matter, opens_an_aside, refers_back, says_farewell
from memq.worker.episodes.words import content_words, specificity

WINDOWS = (3, 6, 10)
LEXICAL_WINDOWS = (6, 12)
PIVOT_WINDOWS = (3, 6)
NAMES = (
    "user_greets",
    "user_opens_a_matter",
    "previous_says_farewell",
    "follows_up",
    "refers_back",
    "user_opens_an_aside",
    *(f"{kind}_{w}" for w in WINDOWS for kind in ("cosine", "cosine_z", "depth")),
    *(f"shared_words_{w}" for w in LEXICAL_WINDOWS),
    *(f"pivot_{w}" for w in PIVOT_WINDOWS),
)


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: np.ndarray = vectors / np.where(norms > 0, norms, 1.0)
    return out


def window_cosines(vectors: np.ndarray, w: int) -> np.ndarray:
    """``out[i]``: the cosine of the mean of the ``w`` vectors before ``i`` and the mean of
    the ``w`` from ``i`` on (fewer at the stream's ends); ``out[0]`` is 1."""
    n = len(vectors)
    unit = _unit_rows(np.asarray(vectors, dtype=np.float64))
    prefix = np.vstack([np.zeros((1, unit.shape[1])), np.cumsum(unit, axis=0)])
    i = np.arange(1, n)
    left = prefix[i] - prefix[np.maximum(0, i - w)]
    right = prefix[np.minimum(n, i + w)] - prefix[i]
    cos = np.einsum("ij,ij->i", _unit_rows(left), _unit_rows(right))
    return np.concatenate([[1.0], cos])


def _depths(s: np.ndarray, w: int) -> np.ndarray:
    """TextTiling's depth of each valley: (highest value up to ``w`` before, itself
    included) - s[i] + (highest up to ``w`` after) - s[i], over s[1:]."""
    n = len(s)
    out = np.zeros(n)
    for i in range(1, n):
        out[i] = (s[max(1, i - w) : i + 1].max() - s[i]) + (s[i : min(n, i + w + 1)].max() - s[i])
    return out


def _weighted(words: Sequence[str]) -> Counter[str]:
    """Each content word counted by how specific it is ("Synology" outweighs "thing")."""
    bag: Counter[str] = Counter()
    for word in words:
        bag[word] += specificity(word)  # type: ignore[assignment]
    return bag


def shared_words(bags: Sequence[Counter[str]], w: int) -> np.ndarray:
    """``out[i]``: the cosine of the content words (weighed by how specific each is) of the
    ``w`` messages before ``i`` and of the ``w`` from ``i`` on (the same words on both
    sides: the same topic)."""
    n = len(bags)
    out = np.ones(n)
    for i in range(1, n):
        left: Counter[str] = Counter()
        right: Counter[str] = Counter()
        for b in bags[max(0, i - w) : i]:
            left.update(b)
        for b in bags[i : i + w]:
            right.update(b)
        dot = sum(c * right[k] for k, c in left.items() if k in right)
        norm = np.sqrt(sum(c * c for c in left.values()) * sum(c * c for c in right.values()))
        out[i] = dot / norm if norm else 0.0
    return out


def pivots(vectors: np.ndarray, w: int) -> np.ndarray:
    """``out[i]``: how much closer message ``i`` is to the ``w`` messages after it than to
    the ``w`` before it (a question that opens a topic belongs with its answers)."""
    n = len(vectors)
    unit = _unit_rows(np.asarray(vectors, dtype=np.float64))
    prefix = np.vstack([np.zeros((1, unit.shape[1])), np.cumsum(unit, axis=0)])
    i = np.arange(1, n)
    left = _unit_rows(prefix[i] - prefix[np.maximum(0, i - w)])
    right = _unit_rows(prefix[np.minimum(n, i + 1 + w)] - prefix[i + 1])
    return np.concatenate([[0.0], np.einsum("ij,ij->i", unit[i], right) - np.einsum("ij,ij->i", unit[i], left)])


def feature_rows(texts: Sequence[str], roles: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    """Rows for positions 1..n-1 of one stream (one conversation's messages in order), in
    the order of ``NAMES``; an empty (0, len(NAMES)) array for fewer than two messages. A
    greeting or an opening request counts when a user says it (an assistant greeting
    someone named in the talk, "Hello, Gerald!", opens nothing)."""
    n = len(texts)
    if n < 2:
        return np.zeros((0, len(NAMES)))
    columns: list[np.ndarray] = []
    cues = np.array(
        [
            [
                roles[i] == "user" and greets(texts[i]),
                roles[i] == "user" and opens_a_matter(texts[i]),
                says_farewell(texts[i - 1]),
                follows_up(texts[i]),
                refers_back(texts[i]),
                roles[i] == "user" and opens_an_aside(texts[i]),
            ]
            for i in range(1, n)
        ],
        dtype=np.float64,
    )
    columns.append(cues)
    for w in WINDOWS:
        s = window_cosines(vectors, w)
        inner = s[1:]
        z = (inner - inner.mean()) / (inner.std() + 1e-6)
        columns.append(np.column_stack([inner, z, _depths(s, w)[1:]]))
    bags = [_weighted(content_words(t[:2000])) for t in texts]
    columns.append(np.column_stack([shared_words(bags, w)[1:] for w in LEXICAL_WINDOWS]))
    columns.append(np.column_stack([pivots(vectors, w)[1:] for w in PIVOT_WINDOWS]))
    return np.hstack(columns)
