"""Excerpts of long messages (memq/memory/retrieval/excerpts.py): the sentences that share the
most words with the query, or the opening, within the limit, marked where text is cut; which
messages ask, and the lead of an answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memq.memory.retrieval.excerpts import GAP, asks, excerpt, lead, query_keys, sentences
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


# --- questions and the lead of their answers -------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "what db would you pick for this?",
        "what lock_timeout would you use",  # a question word, no mark
        "I'll measure on monday. what about the ledger part? do I need double-entry?",
        "Shall we start with the framework?",  # assistants ask too
        "Quick question: which db?",  # what introduces a question is part of it
        "Do you know any good cafes in Kreuzberg",
        "really?!",
        "Any plans for the weekend? 😊",
        "That's awesome! What type of guitar? Been playing long?",
    ],
)
def test_a_message_that_asks(text):
    assert asks(text)


@pytest.mark.parametrize(
    "text",
    [
        "PostgreSQL is the defensible default.",
        "",
        "How cool!",  # an exclamation
        "Will do.",  # an auxiliary without a subject
        "Can't wait to see you",
        # a statement with a question tacked on is a statement
        "Yeah, I'm really lucky to have them. They've been there through everything, I've known these friends "
        "for 4 years. I'm super thankful. Who supports you, Mel?",
        "and kafka? everyone uses kafka, it is what every design interview expects to hear",
    ],
)
def test_a_message_that_does_not_ask(text):
    assert not asks(text)


LEDGER = (
    "A relational database like PostgreSQL is the defensible default. You need transactions, unique "
    "constraints and strong consistency. Mention sharding by merchant id as the scale-out path."
)


def test_a_lead_is_the_first_sentences_that_fit():
    assert lead(LEDGER, 1000, count_tokens) == LEDGER  # whole when it fits
    first = "A relational database like PostgreSQL is the defensible default."
    assert lead(LEDGER, count_tokens(first) + 3, count_tokens) == f"{first} {GAP}"
    two = lead(LEDGER, 30, count_tokens)
    assert two.startswith(f"{first} You need transactions") and two.endswith(GAP) and count_tokens(two) <= 30


def test_a_first_sentence_longer_than_the_lead_is_cut_at_a_word():
    out = lead(LEDGER, 8, count_tokens)
    assert out.startswith("A relational database") and out.endswith(f" {GAP}") and count_tokens(out) <= 8
    assert lead(LEDGER, 1, count_tokens) == ""  # not even a word


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=2000), tokens=st.integers(1, 200))
def test_a_lead_never_exceeds_its_limit(text, tokens):
    out = lead(text, tokens, count_tokens)
    assert count_tokens(out) <= tokens
    assert out == " ".join(text.split()) or out == "" or out.endswith(GAP)
