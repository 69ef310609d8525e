"""What every benchmark family gets: the scale, the settings of the running services, the
data folder, where to write, and a console for progress."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from memq.shared.embeddings import Embedder
    from memq.shared.settings import Settings


@dataclass(frozen=True)
class Scale:
    """How much work each family does. ``quick`` is a smoke run (under a minute of
    measuring), ``default`` what ``make bench`` runs (at most ~15 minutes here), ``large``
    the full run (at most ~60 minutes)."""

    name: str
    ingest_messages: int  # per library batch size
    http_messages: int  # per concurrency level
    http_clients: tuple[int, ...]
    pipeline_messages: int
    pipeline_conversations: int
    pipeline_repeats: int  # timed runs of the stream per worker shape, on one warm worker; the best is kept
    corpus_sizes: tuple[int, ...]  # stored messages, bulk loaded
    queries: int  # per corpus size and scope
    utterance_pool: int  # real utterances embedded for the corpus (0: every one the data has)


SCALES = {
    "quick": Scale("quick", 300, 200, (8,), 120, 6, 2, (2_000,), 10, 1_000),
    "default": Scale("default", 5_000, 2_000, (8, 32), 1_500, 30, 2, (10_000, 100_000), 100, 0),
    "large": Scale("large", 20_000, 5_000, (8, 32), 4_000, 60, 2, (10_000, 100_000, 1_000_000), 200, 0),
}


@dataclass
class BenchContext:
    scale: Scale
    settings: Settings  # services up, migrated
    data_dir: Path | None  # the evaluation data (LoCoMo, TIAGE, SuperDialseg); None: the shipped sample only
    out_dir: Path  # .memq/bench
    console: Console = field(default_factory=lambda: Console(stderr=True))
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    # what one family measured that another reports too (e.g. the pipeline's worker memory
    # for ``resources``), so that a run starts each kind of process once
    shared: dict[str, Any] = field(default_factory=dict)

    def tenant(self, name: str) -> str:
        """A tenant of this run (``bench-<run>-<name>``), removed by the family that made it."""
        return f"bench-{self.run_id}-{name}"[:64]

    @functools.cached_property
    def embedder(self) -> Embedder:
        from memq.shared.embeddings import get_embedder

        return get_embedder(self.settings)
