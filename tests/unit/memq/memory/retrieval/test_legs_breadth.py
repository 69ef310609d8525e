"""Which ``hnsw.ef_search`` a statement of legs runs at, and the order two connections
take the legs in (``legs.run_legs``)."""

from __future__ import annotations

from memq.memory.retrieval import legs

ALL = ("episode_vector", "episode_lexical", "message_vector", "message_lexical")


def test_a_statement_searches_at_its_message_legs_breadth_else_at_its_episode_legs() -> None:
    assert legs._breadth(ALL, 400, 800) == 400  # one statement: one setting, the message leg's
    assert legs._breadth(("message_vector",), 400, 800) == 400
    assert legs._breadth(("episode_vector",), 400, 800) == 800
    assert legs._breadth(("episode_vector", "episode_lexical"), 400, 800) == 800
    assert legs._breadth(("message_lexical",), 400, 800) == 400  # no vector leg: no HNSW read


def test_two_connections_take_the_dearest_leg_first_and_any_other_leg_last() -> None:
    assert sorted(ALL, key=legs._dearness) == list(legs._DEAREST_FIRST)
    assert sorted(("other", *ALL), key=legs._dearness)[-1] == "other"
