"""Answers as real models give them, read by memq.shared.llm_answers: each repaired and
named, or refused (the caller then retries or falls back to its rules)."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, ValidationError

from memq.shared.llm_answers import ENUM_CASE, FENCE, PROSE, first_object, parse_answer


class Rating(BaseModel):
    memory: int
    rating: Literal["again", "hard", "good", "easy"]
    reason: str = ""


class Ratings(BaseModel):
    ratings: list[Rating]
    verdict: Literal["keep"] | None = None


CLEAN = {"ratings": [{"memory": 1, "rating": "good", "reason": "used"}]}

CORPUS = [
    (json.dumps(CLEAN), []),
    ("```json\n" + json.dumps(CLEAN) + "\n```", [FENCE]),
    ("```\n" + json.dumps(CLEAN) + "```", [FENCE]),
    ("Here is the JSON you asked for:\n" + json.dumps(CLEAN) + "\nLet me know if you need more.", [PROSE]),
    ("Sure! " + json.dumps(CLEAN).replace('"good"', '"Good"'), [PROSE, ENUM_CASE]),
    ('{"ratings": [{"memory": 1, "rating": " GOOD "}]}', [ENUM_CASE]),  # reason missing: its default
    ('{"ratings": [{"memory": 1, "rating": "good"}], "verdict": "KEEP"}', [ENUM_CASE]),  # an optional enum too
    ("I think {braces} in prose come first. " + json.dumps(CLEAN), [PROSE]),
]


@pytest.mark.parametrize(("answer", "repairs"), CORPUS)
def test_real_shapes_of_an_answer_are_read_and_named(answer, repairs):
    value, done = parse_answer(answer, Ratings)
    assert value.ratings[0].rating == "good" and value.ratings[0].memory == 1
    assert done == repairs


@pytest.mark.parametrize(
    "answer",
    [
        "I cannot help with that.",  # no JSON at all
        '{"ratings": [{"memory": 1, "rating": "great"}]}',  # not a value of the enum, whatever the case
        '{"ratings": [{"rating": "good"}]}',  # a required field missing
        '{"ratings": [{"memory": "one", "rating": "good"}]}',  # a wrong type
        '{"ratings": [{"memory": 1, "rating": "good"',  # cut short
    ],
)
def test_what_cannot_be_read_is_refused(answer):
    with pytest.raises((json.JSONDecodeError, ValidationError)):
        parse_answer(answer, Ratings)


def test_the_first_object_is_taken_not_an_array_or_a_later_one():
    assert first_object('[1, 2] then {"a": 1} and {"b": 2}') == {"a": 1}
