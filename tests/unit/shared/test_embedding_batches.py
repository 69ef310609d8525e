"""The local model's batches: every text once, longest first, within the size and padding bounds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memq.shared.embedding_batches import SPECIAL_TOKENS_CHARS, length_groups


def _padded(lengths, group):
    sizes = [lengths[i] + SPECIAL_TOKENS_CHARS for i in group]
    return max(sizes) * len(sizes), sum(sizes)


@given(st.lists(st.integers(0, 2000), max_size=80), st.integers(1, 40), st.floats(0, 3))
def test_every_text_once_within_the_bounds(lengths, max_batch, max_padding):
    groups = length_groups(lengths, max_batch, max_padding)
    flat = [i for g in groups for i in g]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)  # longest first, as the model sorts
    for group in groups:
        assert 1 <= len(group) <= max_batch
        padded, real = _padded(lengths, group)
        # a group of several texts stays within the padding bound (a single text never pads)
        assert len(group) == 1 or padded <= (1 + max_padding) * real + 1e-9


def test_similar_lengths_share_a_batch_and_a_short_one_does_not_join_long_ones():
    lengths = [400, 30, 390, 35, 410, 28]
    groups = length_groups(lengths, 8, 0.3)
    assert groups == [[4, 0, 2], [3, 1, 5]]
    assert length_groups(lengths, 2, 10.0) == [[4, 0], [2, 3], [1, 5]]  # the size bound alone
