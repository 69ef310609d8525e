"""Rating a retrieved memory without an LLM, from how the conversation went on (pure).

Two signals, each from what was said *after* the retrieval:

- closeness: the highest cosine between any of the memory's vectors (its summary and its
  messages) and any of the segment's message vectors;
- uptake: the memory's distinctive words (not in the query, not common words, at least
  four letters) that the segment went on to use.

The rating is the best level either signal reaches (thresholds are settings): ``easy``
(central), ``good`` (used), ``hard`` (tangential), else ``again`` (noise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memq.worker.review.fsrs_update import NAMES

_WORD = re.compile(r"[^\W\d_]{4,}", re.UNICODE)
COMMON = frozenset(
    [
        "about",
        "above",
        "after",
        "again",
        "against",
        "also",
        "always",
        "another",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "cannot",
        "could",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "even",
        "every",
        "from",
        "further",
        "have",
        "having",
        "here",
        "hers",
        "herself",
        "himself",
        "into",
        "just",
        "know",
        "like",
        "made",
        "make",
        "many",
        "more",
        "most",
        "much",
        "must",
        "myself",
        "never",
        "only",
        "other",
        "ours",
        "ourselves",
        "over",
        "really",
        "same",
        "should",
        "some",
        "such",
        "than",
        "that",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "thing",
        "things",
        "think",
        "this",
        "those",
        "though",
        "through",
        "very",
        "want",
        "well",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "will",
        "with",
        "would",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "going",
        "good",
        "great",
        "thanks",
        "thank",
        "yeah",
        "okay",
        "sure",
        "right",
        "maybe",
        "still",
        "back",
        "time",
        "today",
        "something",
        "anything",
        "nothing",
    ]
)


@dataclass(frozen=True)
class UsageParams:
    easy_similarity: float = 0.75
    good_similarity: float = 0.6
    hard_similarity: float = 0.45
    easy_uptake: int = 4
    good_uptake: int = 2
    hard_uptake: int = 1


@dataclass(frozen=True)
class UsageRating:
    rating: int
    closeness: float
    taken_up: list[str] = field(default_factory=list)

    def detail(self) -> dict[str, Any]:
        return {"closeness": round(self.closeness, 4), "taken_up": self.taken_up, "rating": NAMES[self.rating]}


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - COMMON


def usage_rating(
    memory_vectors: np.ndarray,
    segment_vectors: np.ndarray,
    memory_text: str,
    segment_text: str,
    queries: list[str],
    p: UsageParams,
) -> UsageRating:
    closeness = 0.0
    if len(memory_vectors) and len(segment_vectors):
        closeness = float(np.max(np.asarray(memory_vectors) @ np.asarray(segment_vectors).T))
    asked = set().union(*(words(q) for q in queries)) if queries else set()
    taken = sorted((words(memory_text) - asked) & words(segment_text))
    n = len(taken)
    if closeness >= p.easy_similarity or n >= p.easy_uptake:
        rating = 4
    elif closeness >= p.good_similarity or n >= p.good_uptake:
        rating = 3
    elif closeness >= p.hard_similarity or n >= p.hard_uptake:
        rating = 2
    else:
        rating = 1
    return UsageRating(rating, closeness, taken)
