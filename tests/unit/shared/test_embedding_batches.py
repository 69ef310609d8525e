"""The local model's passes: every text once, longest first, within the word-piece budget."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memq.shared.embedding_batches import token_passes


@given(st.lists(st.integers(2, 256), max_size=80), st.integers(1, 2048))
def test_every_text_once_longest_first_within_the_budget(lengths, budget):
    passes = token_passes(lengths, budget)
    flat = [i for p in passes for i in p]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
    for chosen in passes:
        # a pass of several texts stays within the budget; a longer text goes alone
        assert len(chosen) == 1 or sum(lengths[i] for i in chosen) <= budget
    # and no pass could have taken the next one's first text
    for chosen, following in pairwise(passes):
        assert sum(lengths[i] for i in chosen) + lengths[following[0]] > budget


def test_short_texts_share_a_pass_and_a_long_one_fills_its_own():
    assert token_passes([10, 300, 12, 11, 250], 512) == [[1], [4, 2, 3, 0]]
    assert token_passes([10, 10, 10], 20) == [[0, 1], [2]]
    assert token_passes([], 512) == []


def test_a_budget_below_one_word_piece_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        token_passes([3], 0)
