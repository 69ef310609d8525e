"""How the local model's texts are cut into batches (pure).

A transformer runs a batch padded to its longest text, so a batch of a 10-word greeting
and a 200-word answer costs as much as two 200-word answers. Sorted by length and cut
with a fixed size (sentence-transformers' own way), one drain's 20-32 messages of mixed
lengths were padded to about 1.5 times their real length, against 1.0-1.2 for the same
texts embedded all at once (the bench's embedding ceiling): the worker did half as much
work again as the model needed. Here a batch also ends where padding each of its texts to
the longest would add more than ``max_padding`` of their own length: more, smaller
batches for far less padding (counted in word pieces on the bench's pipeline stream, in
drains of 20: 1.51x with batches of 8, 1.26x at 0.3 with 43% more batches).

Lengths are characters (what the caller has without tokenising; a word piece is ~4 of
them, plus a constant for the two special tokens every text gets).
"""

from __future__ import annotations

from collections.abc import Sequence

SPECIAL_TOKENS_CHARS = 8  # [CLS] and [SEP], counted as ~2 word pieces of ~4 characters


def length_groups(lengths: Sequence[int], max_batch: int, max_padding: float) -> list[list[int]]:
    """The indices of ``lengths`` in batches, longest first: a batch ends at ``max_batch``
    texts, or before a text that would make the padded batch (its count times its longest)
    exceed its texts' total length by more than ``max_padding`` (0.3: 30 %). Every index
    appears exactly once."""
    if max_batch < 1:
        raise ValueError("max_batch must be at least 1")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    current: list[int] = []
    total = 0
    for i in order:
        size = lengths[i] + SPECIAL_TOKENS_CHARS
        longest = lengths[current[0]] + SPECIAL_TOKENS_CHARS if current else size
        if current and (len(current) >= max_batch or (len(current) + 1) * longest > (1 + max_padding) * (total + size)):
            groups.append(current)
            current, total = [], 0
        current.append(i)
        total += size
    if current:
        groups.append(current)
    return groups
