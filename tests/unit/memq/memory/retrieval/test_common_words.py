"""The query words left out of the lexical legs: those most of the searched messages hold
(memq/memory/retrieval/common_words.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memq.memory.retrieval.common_words import MIN_COMMON, informative_text


def test_a_word_most_messages_hold_is_left_out_and_the_rest_keep_their_order():
    counted = [("How", []), ("many", [300]), ("doctor's", [12]), ("appointments", [9]), ("in", []), ("March?", [40])]
    assert informative_text(counted, 1000, 0.15) == "How doctor's appointments in March?"


def test_nothing_common_or_only_common_words_leave_the_query_as_it_is():
    assert informative_text([("pottery", [3]), ("class", [20])], 1000, 0.15) is None
    assert informative_text([("what", []), ("time", [600]), ("go", [700])], 1000, 0.15) is None


def test_a_word_is_common_only_when_every_one_of_its_lexemes_is():
    # "self-conscious" stems to three lexemes; one of them rare: kept
    counted = [("self-conscious", [500, 2, 500]), ("like", [500]), ("crowds", [4])]
    assert informative_text(counted, 1000, 0.15) == "self-conscious crowds"


def test_in_a_small_scope_a_few_messages_are_never_common():
    counted = [("lisbon", [MIN_COMMON]), ("tram", [1])]
    assert informative_text(counted, 10, 0.15) is None  # 5 of 10 messages: under MIN_COMMON
    assert informative_text([("lisbon", [MIN_COMMON + 1]), ("tram", [1])], 10, 0.15) == "tram"


def test_a_share_of_zero_or_an_empty_scope_changes_nothing():
    counted = [("time", [900]), ("tram", [1])]
    assert informative_text(counted, 1000, 0.0) is None
    assert informative_text(counted, 0, 0.15) is None


@given(
    st.lists(
        st.tuples(st.from_regex(r"[a-z']{1,8}", fullmatch=True), st.lists(st.integers(0, 2000), max_size=3)),
        max_size=12,
    ),
    st.integers(0, 2000),
    st.floats(0, 1),
)
def test_what_is_searched_is_the_query_or_a_subsequence_of_it_holding_a_word_that_is_not_common(counted, total, share):
    out = informative_text(counted, total, share)
    if out is None:
        return
    kept = out.split(" ")
    rest = iter(w for w, _ in counted)
    assert all(any(k == w for w in rest) for k in kept)  # a subsequence: in the query's order
    limit = max(share * total, MIN_COMMON)
    assert any(counts and not all(c > limit for c in counts) for w, counts in counted if w in kept)
