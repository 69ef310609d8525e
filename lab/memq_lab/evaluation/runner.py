"""``memq eval``: score every detector profile on every labelled file side by side
with trivial baselines computed in the same run."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memq.shared.settings import Settings
from memq_lab.evaluation.datasets import Dialogue, load_directory
from memq_lab.evaluation.embedding_cache import cached_embeddings
from memq_lab.evaluation.metrics import aggregate, all_boundaries, every_k, no_boundaries, score_dialogue
from memq_lab.evaluation.segmenter_replay import segment_dialogue

if TYPE_CHECKING:
    from memq.shared.embeddings import Embedder
    from memq.worker.segmentation.detectors.base import Detector


@dataclass(frozen=True)
class Row:
    file: str
    method: str
    pk: float
    windowdiff: float
    precision: float
    recall: float
    f1: float
    boundaries: float  # predicted boundaries per dialogue
    gold: float  # gold boundaries per dialogue
    dialogues: int
    seconds: float


def _row(file: str, method: str, dialogues: list[Dialogue], hyps: list[set[int]], seconds: float) -> Row:
    scores = [score_dialogue(len(d), set(d.boundaries), h) for d, h in zip(dialogues, hyps)]
    agg = aggregate(scores)
    return Row(
        file,
        method,
        agg["pk"],
        agg["windowdiff"],
        agg["precision"],
        agg["recall"],
        agg["f1"],
        float(np.mean([len(h) for h in hyps])),
        float(np.mean([len(d.boundaries) for d in dialogues])),
        len(dialogues),
        seconds,
    )


def dialogue_embeddings(dialogues: list[Dialogue], embedder, cache_dir: Path) -> list[np.ndarray]:
    texts = [t for d in dialogues for _, t in d.utterances]
    flat = cached_embeddings(embedder, texts, cache_dir)
    out, start = [], 0
    for d in dialogues:
        out.append(flat[start : start + len(d)])
        start += len(d)
    return out


def evaluate(
    data_dir: Path,
    settings: Settings,
    profiles: Iterable[str],
    *,
    embedder_factory: Callable[[], Embedder],
    build: Callable[[str], Detector],
    progress: Callable[[str], None] = lambda _: None,
    files: Iterable[str] | None = None,
) -> list[Row]:
    sets = load_directory(data_dir / "segmentation" if (data_dir / "segmentation").is_dir() else data_dir)
    if files:
        wanted = set(files)
        sets = {k: v for k, v in sets.items() if k in wanted}
    rows: list[Row] = []
    embedder = None
    cache = settings.data_path / "cache" / "eval-embeddings"
    for name, dialogues in sets.items():
        for method, fn in (
            ("baseline: no boundaries", no_boundaries),
            ("baseline: every 4th", lambda n: every_k(n, 4)),
            ("baseline: every boundary", all_boundaries),
        ):
            rows.append(_row(name, method, dialogues, [fn(len(d)) for d in dialogues], 0.0))
        vectors = None
        for profile in profiles:
            detector = build(profile)
            if detector.needs_embeddings and vectors is None:
                progress(f"embedding {name} ({sum(len(d) for d in dialogues)} utterances, cached after the first run)")
                embedder = embedder or embedder_factory()
                vectors = dialogue_embeddings(dialogues, embedder, cache)
            progress(f"{name}: {profile}")
            started = time.monotonic()
            w = detector.lookahead if detector.needs_embeddings else 0
            hyps = [
                segment_dialogue(
                    d, vectors[i] if detector.needs_embeddings and vectors is not None else None, detector, settings, w
                )
                for i, d in enumerate(dialogues)
            ]
            label = profile + (f" (look-ahead {w})" if w else "")
            rows.append(_row(name, label, dialogues, hyps, time.monotonic() - started))
    return rows
