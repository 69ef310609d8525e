"""Chapters scored where their truth is known, and the chapter scorer fitted.

The public segmentation sets are labelled at a finer grain than chapters (a new topic every
four utterances of chit-chat), so chapters are scored on **streams stitched from whole
dialogues** (3 to 6, drawn at random): each join is a gold chapter start, the dialogues'
own boundaries are not. A stream is segmented into events by the workers' segmenter
(``segmenter_replay``), then chapters are drawn by the product's detector
(``memq.memory.chapters``) over those messages, as the manifest draws them, beside today's
default reading (every event an entry, each event boundary a chapter start).

And the shipped demo sample against its 11 ground-truth episodes (with its real times).

Fitting (``fit_model``) uses stitched streams of the training files only; what is reported
is drawn from other dialogues (``split``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memq.memory.chapters.detector import StreamMessage, chapter_starts
from memq.memory.chapters.features import NAMES, feature_rows
from memq.shared.mailbox.codec import QueuedMessage
from memq.shared.settings import Settings
from memq.worker.segmentation.detectors.base import Detector
from memq.worker.segmentation.detectors.tree_model import TreeModel
from memq_lab.evaluation.datasets import Dialogue
from memq_lab.evaluation.segmenter_replay import SPACING, T0, as_messages, segment_messages

DEMO_SAMPLE = Path(__file__).resolve().parents[3] / "producer" / "samples" / "demo_conversation.jsonl"
# producer/samples/README.md's table: the first message of each ground-truth episode after the first
DEMO_CHAPTER_STARTS = ("m0033", "m0070", "m0093", "m0120", "m0150", "m0174", "m0213", "m0236", "m0262", "m0298")
TREE_PARAMS = {"max_depth": 4, "max_iter": 200, "learning_rate": 0.05, "min_samples_leaf": 50}


@dataclass(frozen=True)
class Stream:
    """Messages in order with their embeddings, the gold chapter starts, and the event
    boundaries the segmenter drew."""

    name: str
    messages: tuple[QueuedMessage, ...]
    vectors: np.ndarray
    gold: frozenset[int]
    events: tuple[int, ...]

    def stream_messages(self) -> list[StreamMessage]:
        return [StreamMessage("c", m.role, m.content, m.timestamp, v) for m, v in zip(self.messages, self.vectors)]


def stitched(
    name: str,
    dialogues: Sequence[Dialogue],
    vectors: Sequence[np.ndarray],
    count: int,
    detector: Detector,
    settings: Settings,
    *,
    seed: int = 0,
) -> list[Stream]:
    """``count`` streams of 3 to 6 different dialogues, segmented into events."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(count):
        chosen = rng.choice(len(dialogues), size=min(int(rng.integers(3, 7)), len(dialogues)), replace=False)
        messages: list[QueuedMessage] = []
        joins: set[int] = set()
        for j in chosen:  # each dialogue opened by its user, as a conversation is
            if messages:
                joins.add(len(messages))
            for m in as_messages(dialogues[int(j)]):
                at = T0 + SPACING * len(messages)
                messages.append(
                    replace(
                        m,
                        seq=len(messages) + 1,
                        id=f"{name}-{s}:{len(messages)}",
                        timestamp=at,
                        sent_at=at,
                        received_at=at,
                    )
                )
        E = np.concatenate([vectors[int(j)] for j in chosen])
        events = segment_messages(messages, E, detector, settings, detector.lookahead)
        out.append(Stream(name, tuple(messages), E, frozenset(joins), tuple(sorted(events))))
    return out


def demo_stream(embed: Callable[[list[str]], np.ndarray], detector: Detector, settings: Settings) -> Stream:
    """The shipped sample with its own times, its gold starts from its README."""
    records = [json.loads(line) for line in DEMO_SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    messages = []
    for i, r in enumerate(records):
        at = datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")).astimezone(UTC)
        messages.append(
            QueuedMessage(i + 1, r["message_id"], r["role"], r["content"], at, at, at, r.get("metadata") or {})
        )
    E = embed([m.content for m in messages])
    events = segment_messages(messages, E, detector, settings, detector.lookahead)
    index = {m.id: i for i, m in enumerate(messages)}
    return Stream(
        "demo sample", tuple(messages), E, frozenset(index[m] for m in DEMO_CHAPTER_STARTS), tuple(sorted(events))
    )


def read(stream: Stream, model: TreeModel, settings: Settings) -> set[int]:
    """Where the manifest's chapters start in the stream."""
    return set(
        chapter_starts(
            stream.stream_messages(),
            model,
            gap=timedelta(minutes=settings.chapter_gap_minutes),
            min_messages=settings.chapter_min_messages,
        )
    )


@dataclass(frozen=True)
class Row:
    name: str
    reading: str
    precision: float
    recall: float
    f1: float
    entries: float  # chapters (or events) per stream
    gold: float  # gold chapters per stream
    streams: int


def _row(name: str, reading: str, streams: Sequence[Stream], hyps: Sequence[set[int]]) -> Row:
    tp = sum(len(h & s.gold) for s, h in zip(streams, hyps))
    predicted = sum(len(h) for h in hyps)
    gold = sum(len(s.gold) for s in streams)
    p = tp / predicted if predicted else 1.0
    r = tp / gold if gold else 1.0
    return Row(
        name,
        reading,
        p,
        r,
        2 * p * r / (p + r) if p + r else 0.0,
        float(np.mean([len(h) + 1 for h in hyps])),
        float(np.mean([len(s.gold) + 1 for s in streams])),
        len(streams),
    )


def score(name: str, streams: Sequence[Stream], model: TreeModel, settings: Settings) -> list[Row]:
    """Micro-averaged boundary precision / recall / F1 at the gold starts (exact positions)."""
    return [
        _row(name, "chapters", streams, [read(s, model, settings) for s in streams]),
        _row(name, "events (today's default)", streams, [set(s.events) for s in streams]),
    ]


# --- fitting --------------------------------------------------------------------------------


def training_rows(streams: Sequence[Stream]) -> tuple[np.ndarray, np.ndarray]:
    X: list[np.ndarray] = []
    y: list[float] = []
    for s in streams:
        X.append(feature_rows([m.content for m in s.messages], [m.role for m in s.messages], s.vectors))
        y.extend(1.0 if i in s.gold else 0.0 for i in range(1, len(s.messages)))
    return np.vstack(X), np.array(y)


def fit_model(domains: Sequence[Sequence[Stream]], settings: Settings) -> TreeModel:
    """Trees on every training domain's rows (each domain weighing the same), the threshold
    the one with the best mean per-domain chapter F1 on those same streams."""
    from memq_lab.evaluation.training import fit_trees

    parts = [training_rows(d) for d in domains]
    X = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    weight = np.concatenate([np.full(len(p[1]), len(y) / (len(domains) * len(p[1]))) for p in parts])
    trees, baseline = fit_trees(X, y, weight, params=TREE_PARAMS)
    base = TreeModel(trees, baseline, 0.5, 0.5, 0, {"feature_names": list(NAMES)}, "chapter")
    best = (-1.0, 0.5)
    for threshold in np.arange(0.2, 0.81, 0.05):
        model = TreeModel(trees, baseline, float(threshold), float(threshold), 0, base.info, "chapter")
        f1 = float(np.mean([score("fit", d, model, settings)[0].f1 for d in domains]))
        if f1 > best[0]:
            best = (f1, float(threshold))
    streams = {d[0].name: len(d) for d in domains if d}
    info = {**base.info, "params": TREE_PARAMS, "streams": streams, "fit_f1": round(best[0], 4)}
    return TreeModel(trees, baseline, round(best[1], 2), round(best[1], 2), 0, info, "chapter")


__all__ = ["DEMO_CHAPTER_STARTS", "Row", "Stream", "demo_stream", "fit_model", "read", "score", "stitched"]
