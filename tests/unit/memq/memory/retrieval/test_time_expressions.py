"""Times a query names become windows relative to the moment of the question, so "what
did we decide last week" can favour last week's episodes."""

from __future__ import annotations

import ast
import inspect
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memq.memory.retrieval import time_expressions
from memq.memory.retrieval.request import TimeRange
from memq.memory.retrieval.time_expressions import _TRIGGERS, NamedTime, _scan, find_time

NOW = datetime(2023, 5, 24, 15, 30, tzinfo=UTC)  # a Wednesday


def named(query: str, now: datetime) -> NamedTime:
    found = find_time(query, now)
    assert found is not None, query
    return found


def day(month: int, d: int, year: int = 2023) -> datetime:
    return datetime(year, month, d, tzinfo=UTC)


@pytest.mark.parametrize(
    "query, phrase, window",
    [
        ("what did we say yesterday?", "yesterday", TimeRange(day(5, 23), day(5, 24))),
        ("the plans from last week", "last week", TimeRange(day(5, 15), day(5, 22))),  # weeks start on Monday
        ("what happened in May 2023", "in may 2023", TimeRange(day(5, 1), day(6, 1))),
        ("the call on May 7, 2023", "may 7, 2023", TimeRange(day(5, 7), day(5, 8))),
        ("what was said 3 days ago", "3 days ago", TimeRange(day(5, 20), day(5, 23))),  # a day either side
        ("the dinner last Friday", "last friday", TimeRange(day(5, 19), day(5, 20))),
        ("two weeks ago", "two weeks ago", TimeRange(day(5, 6), day(5, 15))),
        ("the 7th of May", "7th of may", TimeRange(day(5, 7), day(5, 8))),
        ("notes from 2023-05-07", "2023-05-07", TimeRange(day(5, 7), day(5, 8))),
        ("the trip in 2022", "in 2022", TimeRange(day(1, 1, 2022), day(1, 1))),
        ("what we did last summer", "last summer", TimeRange(day(6, 1, 2022), day(9, 1, 2022))),
        ("this month's budget", "this month", TimeRange(day(5, 1), day(6, 1))),
        ("the past 2 days", "past 2 days", TimeRange(day(5, 22), day(5, 25))),
    ],
)
def test_named_times_become_windows(query, phrase, window):
    named = find_time(query, NOW)
    assert named is not None, query
    assert named.phrase.endswith(phrase) and named.window == window


def test_a_day_without_a_year_is_the_latest_one_not_after_now():
    assert named("on December 25", NOW).window == TimeRange(day(12, 25, 2022), day(12, 26, 2022))
    assert named("on May 7", NOW).window == TimeRange(day(5, 7), day(5, 8))


def test_last_weekday_on_that_weekday_is_a_week_back():
    assert named("last Wednesday", NOW).window == TimeRange(day(5, 17), day(5, 18))


def test_the_earliest_phrase_wins():
    assert named("yesterday, not last week", NOW).phrase == "yesterday"
    assert named("last week, not yesterday", NOW).phrase == "last week"


@pytest.mark.parametrize(
    "query",
    [
        "what did we decide about the garden?",
        "I may have told you about the garden",
        "you may want to check the recipe",
        "May I ask what the recipe was?",
        "we march on with the project",
        "",
    ],
)
def test_no_time_named_gives_none(query):
    assert find_time(query, NOW) is None


def test_may_is_a_month_after_in_or_with_a_year():
    assert named("what we planted in may", NOW).window == TimeRange(day(5, 1), day(6, 1))
    assert named("may 2022 holidays", NOW).window == TimeRange(day(5, 1, 2022), day(6, 1, 2022))


def test_now_in_another_timezone_is_read_in_utc():
    from datetime import timedelta, timezone

    late_evening_west = datetime(2023, 5, 23, 22, 0, tzinfo=timezone(timedelta(hours=-8)))  # 24 May 06:00 UTC
    assert named("yesterday", late_evening_west).window == TimeRange(day(5, 23), day(5, 24))


def _phrase_words() -> set[str]:
    """The words in the module's string literals (its phrases' patterns and vocabularies), docstrings left out."""
    tree = ast.parse(inspect.getsource(time_expressions))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        w
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        for w in re.findall(r"[a-z]+", re.sub(r"\\[a-z]", " ", node.value))
    }


# The words of find_time's phrases that are no trigger: a query made only of these is
# skipped without a scan, so the scan must find nothing in any of them.
_PLAIN = sorted(w for w in _phrase_words() if not _TRIGGERS.search(w))


def test_no_three_plain_words_name_a_time():
    assert {"last", "past", "ago", "few", "couple", "the"} <= set(_PLAIN) and "week" not in _PLAIN
    for a in _PLAIN:
        for b in _PLAIN:
            assert _scan(f"{a} {b}", NOW) is None, (a, b)
            for c in _PLAIN:
                assert _scan(f"{a} {b} {c}", NOW) is None, (a, b, c)


@given(st.lists(st.sampled_from([*_PLAIN, ",", "-", "."]), min_size=4, max_size=8))
@settings(max_examples=1000, deadline=None)
def test_no_longer_query_of_plain_words_names_a_time(words):
    assert _scan(" ".join(words), NOW) is None
    assert find_time(" ".join(words), NOW) is None
