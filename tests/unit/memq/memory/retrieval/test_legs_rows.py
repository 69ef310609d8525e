"""What the rows of the retrieval statement say (``legs.read_rows``): legs' rankings,
each message's ranks, the found episodes' rows, the messages that may be shown and the
fact legs' rows, whatever order the rows arrive in."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from memq.memory.retrieval.legs import read_rows

T = datetime(2023, 5, 7, 13, 0, tzinfo=UTC)
LEGS = ("episode_vector", "episode_lexical", "message_vector", "message_lexical")
N = (None,) * 9


def leg(name, episode, rank, seq=None, conv=None):
    return (name, episode, seq, rank, conv, *N)


def episode(eid, first, last):
    return (
        "episode",
        eid,
        first,
        last,
        "c1",
        f"Title {eid}",
        f"Summary {eid}",
        "extractive",
        T,
        T + timedelta(minutes=5),
        0.2,
        last - first + 1,
        3.5,
        T,
    )


def message(eid, seq):
    return ("message", eid, seq, None, None, "user", "Ana", f"said {seq}", T + timedelta(minutes=seq), *(None,) * 5)


ROWS = [
    leg("episode_vector", "e2", 1),
    leg("episode_vector", "e1", 2),
    leg("message_vector", "e1", 1, seq=4, conv="c1"),
    leg("message_vector", "e2", 2, seq=9, conv="c1"),
    leg("message_vector", "e1", 3, seq=3, conv="c1"),
    leg("message_lexical", "e1", 1, seq=3, conv="c1"),
    episode("e1", 1, 5),
    episode("e2", 8, 10),
    message("e1", 4),
    message("e1", 3),
    message("e1", 5),
    message("e2", 9),
    ("fact_vector", "f1", None, 1, None, *N),
    ("fact_lexical", "f1", None, 2, None, *N),
]


def test_rows_are_read_whatever_their_order():
    first = read_rows(ROWS, LEGS)
    shuffled = ROWS[:]
    random.Random(7).shuffle(shuffled)
    again = read_rows(shuffled, LEGS)
    for result in (first, again):
        assert result.episodes == {
            "episode_vector": ["e2", "e1"],
            "episode_lexical": [],
            "message_vector": ["e1", "e2"],
            "message_lexical": ["e1"],
        }
        assert result.messages == {"e1": {4: {"vector": 1}, 3: {"vector": 3, "lexical": 1}}, "e2": {9: {"vector": 2}}}
        assert [m[0] for m in result.shown["e1"]] == [3, 4, 5]  # in seq order
        assert result.shown["e2"] == [(9, "user", "Ana", "said 9", T + timedelta(minutes=9))]
        assert sorted(result.facts) == [("fact_lexical", "f1", 2), ("fact_vector", "f1", 1)]
        hit = result.hits["e2"]
        assert (hit.id, hit.conversation_id, hit.title, hit.first_seq, hit.last_seq, hit.message_count) == (
            "e2",
            "c1",
            "Title e2",
            8,
            10,
            3,
        )
        assert (hit.summary_source, hit.stability, hit.last_review, hit.end_at) == (
            "extractive",
            3.5,
            T,
            T + timedelta(minutes=5),
        )


def test_the_legs_alone_give_rankings_only():
    legs_only = [row[:5] for row in ROWS if row[0] in LEGS]
    result = read_rows(legs_only, LEGS)
    assert result.episodes["episode_vector"] == ["e2", "e1"] and result.messages["e1"][3] == {"vector": 3, "lexical": 1}
    assert (result.hits, result.shown, result.facts) == ({}, {}, [])
