"""Embeddings as text: base64 of little-endian float32 (``<f4``), 4 bytes a dimension.

The one encoding of a vector wherever it is kept as a string: the worker's Redis state
(the event state's embeddings, the conversation's vectors hash, the inbox fronts) and the
portability file. The bytes are fixed: what was written by any earlier version reads back
the same (the event state wrote native float32, the same bytes on the little-endian
machines memq runs on).
"""

from __future__ import annotations

import base64
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt


@runtime_checkable
class _HasNumpy(Protocol):
    """pgvector's ``Vector`` (as psycopg reads a ``vector`` column): not array-like itself."""

    def to_numpy(self) -> npt.NDArray[np.float32]: ...


def encode_vector(vector: npt.ArrayLike | _HasNumpy) -> str:
    """A vector (a numpy array, a sequence of floats or pgvector's ``Vector``) as base64 of
    little-endian float32."""
    values = vector.to_numpy() if isinstance(vector, _HasNumpy) else vector
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str) -> npt.NDArray[np.float32]:
    """The vector ``encode_vector`` wrote: a writable float32 array of its own (not a view
    of the decoded bytes). Text that is not base64 raises ``binascii.Error`` (a ValueError)."""
    return np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4").astype(np.float32)
