"""A scope's word counts remembered per process (memq/memory/retrieval/scope_words.py): a query
whose words were all seen in its scope costs no round trip; a new word, another scope or
an expired entry asks again; a scope too large to count is remembered as such."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest

from memq.memory.retrieval import scope_words
from memq.memory.retrieval.request import RetrievalRequest

NO_CONNECTION = cast(Any, None)  # the round trip is the test's
STEMS = {"pottery": ("potteri",), "lesson": ("lesson",), "time": ("time",), "what": ()}
COUNTS = {"potteri": 1, "lesson": 12, "time": 12}


def request(conversations: tuple[str, ...] | None = ("c1",)) -> RetrievalRequest:
    return RetrievalRequest("t", conversations, "q", 10, "high", 1000, None, datetime(2026, 1, 1, tzinfo=UTC))


@pytest.fixture
def asked(monkeypatch) -> list[list[str]]:
    calls: list[list[str]] = []
    monkeypatch.setattr(scope_words, "_lexemes", {})
    monkeypatch.setattr(scope_words, "_scopes", {})

    def word_counts(conn, req, words, most):
        calls.append(list(words))
        too_large = most < 13
        return [
            (w, STEMS[w], None if too_large and STEMS[w] else tuple(COUNTS[x] for x in STEMS[w])) for w in words
        ], 13

    monkeypatch.setattr("memq.memory.retrieval.legs.word_counts", word_counts)
    return calls


def test_words_seen_in_a_scope_cost_no_second_round_trip(asked):
    first = scope_words.word_counts(NO_CONNECTION, request(), ["what", "time", "pottery"], 5000, 60)
    again = scope_words.word_counts(NO_CONNECTION, request(), ["pottery", "what"], 5000, 60)
    assert first == ([("what", []), ("time", [12]), ("pottery", [1])], 13)
    assert again == ([("pottery", [1]), ("what", [])], 13)
    assert asked == [["what", "time", "pottery"]]


def test_a_new_word_another_scope_or_an_expired_entry_asks_again(asked):
    scope_words.word_counts(NO_CONNECTION, request(), ["time"], 5000, 60)
    scope_words.word_counts(NO_CONNECTION, request(), ["time", "lesson"], 5000, 60)  # a new word
    scope_words.word_counts(NO_CONNECTION, request(("c2",)), ["time"], 5000, 60)  # another scope
    scope_words.word_counts(NO_CONNECTION, request(("c3",)), ["time"], 5000, 0)  # kept for no time
    scope_words.word_counts(NO_CONNECTION, request(("c3",)), ["time"], 5000, 0)
    assert asked == [["time"], ["time", "lesson"], ["time"], ["time"], ["time"]]


def test_a_scope_too_large_to_count_is_remembered_as_such(asked):
    assert scope_words.word_counts(NO_CONNECTION, request(), ["time", "pottery"], 10, 60) is None
    assert scope_words.word_counts(NO_CONNECTION, request(), ["lesson"], 10, 60) is None
    assert asked == [["time", "pottery"]]
