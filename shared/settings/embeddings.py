"""Embeddings settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class EmbeddingSettings(BaseModel):
    """Embeddings."""

    embedding_model: str = Field(
        default="local/all-MiniLM-L6-v2",
        description="'local/all-MiniLM-L6-v2' (bundled, offline) or any litellm embedding model.",
    )
    embedding_dim: int = Field(
        default=384, ge=1, le=2000, description="Vector size of the embedding model (the schema's, set at migration)."
    )
    embedding_api_base: str | None = Field(default=None, description="API base of a remote embedding model.")
    embedding_api_key: str | None = Field(default=None, description="API key of a remote embedding model (a secret).")
    embedding_pass_tokens: int = Field(
        default=512,
        ge=1,
        description="Word pieces the local model runs through one forward pass: a call's texts, longest first, "
        "go in packed passes (no padding) of at most this many (a longer text in a pass of its own). Each pass "
        "reads the model's weights once, so few full passes beat many small ones until a pass' activations "
        "leave the CPU's caches; 512 was fastest for dialogue messages on 2 CPU cores (memq bench).",
    )
    embedding_threads: int = Field(
        default=0,
        ge=0,
        description="Threads of the local embedding model in each process. 0: in a worker, the CPUs available "
        "shared among its pool processes (at least 1 each, so that pool processes do not contend for cores); "
        "elsewhere up to 2.",
    )
    embedding_max_chars: int = Field(
        default=8000,
        ge=100,
        description="Text is cut to this many characters before embedding: all-MiniLM-L6-v2 reads 256 word "
        "pieces anyway, and a remote model refuses input beyond its context (a message may be 100,000 characters).",
    )
    embedding_precision: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto",
        description="The local model's arithmetic: auto is bfloat16 where the CPU multiplies it natively "
        "(AVX512-BF16, AMX; about 1.8x the throughput, vectors within a cosine of 0.996 of float32's), else float32.",
    )
