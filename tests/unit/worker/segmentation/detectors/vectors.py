"""Hand-made unit vectors and messages for detector tests (no model needed)."""

from datetime import UTC, datetime, timedelta

import numpy as np

from memq.shared.mailbox.codec import QueuedMessage

DIM = 8
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def axis(i: int, j: int | None = None, mix: float = 0.0) -> np.ndarray:
    """Unit vector along axis i, optionally tilted towards axis j by ``mix``."""
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    if j is not None:
        v[j] = mix
    return v / np.linalg.norm(v)


def message(seq: int, text: str = "a message of ordinary length about something", role: str = "user") -> QueuedMessage:
    ts = T0 + timedelta(seconds=30 * seq)
    return QueuedMessage(seq, f"m{seq}", role, text, ts, ts, ts)
