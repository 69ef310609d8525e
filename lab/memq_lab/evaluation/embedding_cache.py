"""Embeddings of evaluation utterances, cached on disk by model and text so repeated
``memq eval`` runs (and tuning) do not re-embed tens of thousands of sentences."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memq.shared.embeddings import Embedder


def cached_embeddings(embedder: Embedder, texts: Sequence[str], cache_dir: Path) -> np.ndarray:
    digest = hashlib.sha256()
    digest.update(embedder.name.encode())
    for t in texts:
        digest.update(b"\x00" + t.encode())
    path = cache_dir / f"{digest.hexdigest()[:24]}.npy"
    if path.exists():
        return np.load(path)
    vectors = embedder.embed(list(texts))
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors
