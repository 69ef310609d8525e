"""Excerpts of long messages (memq/memory/retrieval/excerpts.py): the sentences that share the
most words with the query, or the opening, within the limit, marked where text is cut."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memq.memory.retrieval.excerpts import GAP, excerpt, query_keys, sentences
from memq.shared.tokens import count_tokens

ANSWER = (
    "Great question! I'm happy to help. "
    "The Fuji X-T4 is the camera I recommend for travel photography. "
    "It weighs 607 grams with the battery. "
    "Its weather sealing handles rain. "
    "For lenses, start with the 18-55mm kit lens."
)


def test_a_message_that_fits_is_returned_whole_with_its_whitespace_folded():
    assert excerpt("  one\n  two  ", query_keys("one"), 40, count_tokens) == "one two"


def test_the_sentence_sharing_most_query_words_leads_and_its_neighbours_follow_while_they_fit():
    out = excerpt(ANSWER, query_keys("which camera did you recommend for travel?"), 30, count_tokens)
    assert out.startswith(f"{GAP} The Fuji X-T4 is the camera I recommend for travel photography.")
    assert out.endswith(GAP) and count_tokens(out) <= 30
    assert "It weighs 607 grams" in out  # the next sentence came first


def test_words_match_by_their_stem_and_function_words_do_not_count():
    keys = query_keys("What did I say about the weathers and recommendations?")
    assert keys == {"weath", "recom"}
    assert "weather sealing" in excerpt(ANSWER, query_keys("weathers"), 15, count_tokens)


def test_with_no_query_word_the_opening_is_shown():
    out = excerpt(ANSWER, query_keys("zebra"), 15, count_tokens)
    assert out.startswith("Great question!") and out.endswith(GAP)


def test_a_best_sentence_longer_than_the_limit_is_cut_at_a_word():
    long = "intro. " + " ".join(["camera"] + ["word"] * 200) + ". outro."
    out = excerpt(long, query_keys("camera"), 20, count_tokens)
    assert out.startswith(f"{GAP} camera word") and out.endswith(GAP) and count_tokens(out) <= 20


def test_sentences_split_at_ends_lines_and_list_items():
    text = "Here are tips: * Use the app. * Order ahead!\n1. Check offers 2. Pay by card"
    assert sentences(text) == [
        "Here are tips:",
        "* Use the app.",
        "* Order ahead!",
        "1. Check offers",
        "2. Pay by card",
    ]


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=2000), query=st.text(max_size=100), tokens=st.integers(10, 200))
def test_an_excerpt_never_exceeds_its_limit(text, query, tokens):
    out = excerpt(text, query_keys(query), tokens, count_tokens)
    assert count_tokens(out) <= tokens
