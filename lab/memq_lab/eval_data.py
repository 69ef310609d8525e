"""Where the lab finds the public evaluation data sets. They are never in the repository:
a command takes their folder as its data argument (``memq bench --data``), or reads it
from ``MEMQ_EVAL_DATA``; without either, the evaluation commands say which sets they need
and where to get them (``missing``), and ``memq bench`` runs on the shipped sample.

The folder's layout: ``segmentation/`` (TIAGE JSON, SuperDialseg-style JSONL), ``locomo/``
(LoCoMo JSON), ``longmemeval/`` (a LongMemEval_S JSON file).
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "MEMQ_EVAL_DATA"

# (sub-folder, what it holds and where to get it, the command that reads it)
SETS = (
    (
        "segmentation/",
        "TIAGE (github.com/HuiyuanXie/tiage) and SuperDialseg (github.com/Coldog2333/SuperDialseg): "
        "dialogues with gold topic boundaries",
        "memq eval",
    ),
    (
        "locomo/",
        "LoCoMo (github.com/snap-research/locomo, data/locomo10.json): long conversations with "
        "questions and their evidence turns",
        "memq eval-locomo",
    ),
    (
        "longmemeval/",
        "LongMemEval_S (huggingface.co/datasets/xiaowu0162/longmemeval, the file longmemeval_s): "
        "one user's sessions per question",
        "memq eval-longmemeval",
    ),
)


def from_env() -> Path | None:
    """The folder ``MEMQ_EVAL_DATA`` names (None when it is unset or empty)."""
    value = os.environ.get(ENV, "").strip()
    return Path(value) if value else None


def listing() -> str:
    """The data folder's sub-folders, each with its set, where to get it and its reader."""
    return "\n".join(f"  {folder:<15}{what} (for {reader})" for folder, what, reader in SETS)


def missing(command: str, argument: str = "DATA") -> str:
    """What to tell the user of ``command`` when no data folder was given (as ``argument``
    or in ``MEMQ_EVAL_DATA``): the public sets, where to get them, how to point memq at them."""
    return (
        f"`{command}` needs public evaluation data, which is not in the repository: pass its folder "
        f"as {argument}, or set {ENV}=<folder> (make eval / make bench pass {ENV} on). The folder holds:\n"
        f"{listing()}\ndocs/evaluation.md describes each set's format."
    )
