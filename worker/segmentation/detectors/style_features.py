"""The conversation's style, for a boundary model that behaves differently per kind of
dialogue without being told the domain.

Chit-chat (short turns, loosely related) and document-grounded or assistant dialogues
(long turns, closely related) want different boundary rates from the same evidence. A
model that reads these few running statistics next to the boundary features (a tree
model, which can split on them) learns that difference from the labelled sets:

* the conversation's adjacent-message cosine so far: its mean and spread (the
  ``SimilarityStats`` the general features already keep, shrunk toward their prior);
* its message lengths so far, the new message included: mean and spread of
  log(1 + words) (a second running ``SimilarityStats``, kept in the event state as
  ``extras["lens"]``);
* how far into the conversation the message is (capped at ``POSITION_CAP``).

Pure functions: the same code builds training rows offline and scores messages live.
"""

from __future__ import annotations

import math

import numpy as np

from memq.worker.segmentation.detectors.general_features import SimilarityStats

POSITION_CAP = 20

STYLE_FEATURES: tuple[str, ...] = ("conv_sim_mean", "conv_sim_sd", "conv_len_mean", "conv_len_sd", "position")


def length_value(text: str) -> float:
    """What the length statistics fold in for one message: log(1 + words)."""
    return math.log1p(len(text.split()))


def style_features(sims: SimilarityStats, lengths: SimilarityStats) -> np.ndarray:
    """``sims`` = the conversation's adjacent cosines before the new message (as the
    general features take them); ``lengths`` = its message lengths with the new one."""
    sim_mean, sim_sd = sims.shrunk()
    return np.array(
        [sim_mean, sim_sd, lengths.mean, math.sqrt(lengths.var), min(lengths.count, POSITION_CAP) / POSITION_CAP],
        dtype=np.float32,
    )
