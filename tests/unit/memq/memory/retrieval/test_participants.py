"""Participants a query names are taken out of the searched text and become a signal of
their own (``participants.py``)."""

from __future__ import annotations

from memq.memory.retrieval.participants import query_terms

NAMES = ["Caroline", "Melanie", "Anna Lee", "Anna", "May"]


def test_a_named_participant_is_taken_out_of_the_searched_text():
    t = query_terms("What did Caroline research?", NAMES)
    assert t.named == {"Caroline"} and t.search_text == "What did research?"


def test_possessives_and_several_names():
    t = query_terms("How does Melanie's family feel about Caroline?", NAMES)
    assert t.named == {"Melanie", "Caroline"} and t.search_text == "How does family feel about?"
    assert query_terms("Melanie’s kids", NAMES).search_text == "kids"


def test_the_longest_name_wins_and_matching_is_case_sensitive_and_whole_word():
    assert query_terms("Where did Anna Lee go?", NAMES).named == {"Anna Lee"}
    assert query_terms("what may happen to Annabel?", NAMES).named == frozenset()  # "may" is not "May"
    assert query_terms("Plans for May 2023", NAMES).named == {"May"}


def test_a_query_that_is_only_names_is_searched_as_it_is():
    t = query_terms("Caroline?", NAMES)
    assert t.named == {"Caroline"} and t.search_text == "Caroline?"


def test_no_participants_leaves_the_query_alone():
    assert query_terms("what did we decide?", []).search_text == "what did we decide?"
    assert query_terms("what did we decide?", ["", "  "]).named == frozenset()


def test_a_question_about_what_the_assistant_said_or_a_past_chat_is_told_apart_from_a_request():
    from memq.memory.retrieval.participants import asks_what_the_assistant_said

    about = [
        "What was the name of that Jamaican dish you recommended I try?",
        "You mentioned some great resources for guided imagery, can you list them again?",
        "remind me of the Mayo Clinic video you recommended",
        "the two sad songs you created for me",
        "In our previous conversation about language apps, which one was free?",
    ]
    requests = [
        "Can you recommend some recent publications?",
        "could you suggest a cocktail for Saturday",
        "What did I say about my sister's wedding?",
        "Any tips on rearranging my bedroom?",
    ]
    assert [asks_what_the_assistant_said(q) for q in about] == [True] * len(about)
    assert [asks_what_the_assistant_said(q) for q in requests] == [False] * len(requests)
