"""Where chapters start, and which events each chapter holds. Pure.

A chapter starts at a message when
- it begins another conversation (a chapter never spans two),
- ``gap`` or more passed since the message before (people come back to something else),
- a user announces a new topic at its start ("Totally unrelated, but ...", ``cues.py``), or
- the learned scorer (``features.py`` rows, a tree ensemble fitted on stitched streams of
  labelled dialogues) is at a peak of at least its threshold, ``min_messages`` or more
  from every other start.

Events are whole in their chapter: an event belongs to the chapter that holds most of its
messages (ties: the one its first message is in), so a chapter shown starts where its
first event starts."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from memq.memory.chapters.cues import announces_new_topic
from memq.memory.chapters.features import NAMES, feature_rows
from memq.worker.segmentation.detectors.tree_model import TreeModel

MODEL_PATH = Path(__file__).with_name("models") / "chapters.json"


@dataclass(frozen=True)
class StreamMessage:
    """A stored message as the detector reads it (and the episode it is in)."""

    conversation_id: str
    role: str
    content: str
    at: datetime
    embedding: np.ndarray
    episode_id: str = ""
    speaker: str | None = None


@functools.cache
def load_model(path: Path = MODEL_PATH) -> TreeModel:
    model = TreeModel.from_json(path.read_text())
    if model.features != "chapter" or len(model.info.get("feature_names", NAMES)) != len(NAMES):
        raise ValueError(f"{path} is not a chapter model for these features ({', '.join(NAMES)}); retrain it")
    return model


def rule_starts(messages: Sequence[StreamMessage], gap: timedelta) -> set[int]:
    """Starts no scorer is asked about: another conversation, a time gap, an announced topic."""
    out = set()
    for i in range(1, len(messages)):
        m, prev = messages[i], messages[i - 1]
        if (
            m.conversation_id != prev.conversation_id
            or m.at - prev.at >= gap
            or (m.role == "user" and announces_new_topic(m.content))
        ):
            out.add(i)
    return out


def scored(messages: Sequence[StreamMessage], model: TreeModel) -> np.ndarray:
    """``p[i]``: the scorer's probability that a chapter starts at message i (0 at 0, and
    across conversations, whose streams are scored apart)."""
    p = np.zeros(len(messages))
    start = 0
    for end in range(1, len(messages) + 1):
        if end == len(messages) or messages[end].conversation_id != messages[start].conversation_id:
            run = messages[start:end]
            rows = feature_rows(
                [m.content for m in run],
                [m.role for m in run],
                np.stack([m.embedding for m in run]) if run else np.zeros((0, 1)),
            )
            for k, row in enumerate(rows, start=1):
                p[start + k] = model.probability(row)
            start = end
    return p


def peaks(p: np.ndarray, threshold: float, min_messages: int, taken: set[int]) -> set[int]:
    """Greedy peak picking: the highest probabilities at or above ``threshold``, each at
    least ``min_messages`` from every start already taken."""
    chosen = set(taken)
    for i in np.argsort(-p, kind="stable"):
        if p[i] < threshold:
            break
        if i > 0 and all(abs(int(i) - c) >= min_messages for c in chosen):
            chosen.add(int(i))
    return chosen - taken


def chapter_starts(
    messages: Sequence[StreamMessage], model: TreeModel, *, gap: timedelta, min_messages: int
) -> list[int]:
    """The indices (``0 < i < n``) at which a chapter starts, ascending."""
    rules = rule_starts(messages, gap)
    learned = peaks(scored(messages, model), model.high, min_messages, rules)
    return sorted(rules | learned)


def group_events(spans: Sequence[tuple[int, int]], starts: Sequence[int]) -> list[list[int]]:
    """``spans``: each event's messages as [first, end) indices of the stream, in order;
    returns the events (their indices) of each chapter, in order. An event goes to the
    chapter holding most of its messages."""
    bounds = sorted(starts)

    def chapter_of(index: int) -> int:
        return int(np.searchsorted(bounds, index, side="right"))

    groups: list[list[int]] = []
    last = -1
    for e, (first, end) in enumerate(spans):
        counts: dict[int, int] = {}
        for i in range(first, max(end, first + 1)):
            counts[chapter_of(i)] = counts.get(chapter_of(i), 0) + 1
        best = max(counts.items(), key=lambda kv: (kv[1], -kv[0]))[0]  # ties: the earlier chapter
        if best > last or not groups:  # a later chapter (never back to an earlier one)
            groups.append([e])
            last = max(best, last)
        else:
            groups[-1].append(e)
    return groups
