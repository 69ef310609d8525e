"""Sittings (contiguous episodes with no pause between them) and the density counted
over them (``sittings.py``, ``service.attach_messages``)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memq.memory.retrieval.model import EpisodeHit
from memq.memory.retrieval.service import attach_messages
from memq.memory.retrieval.sittings import sittings
from memq.shared.settings import Settings

T0 = datetime(2023, 5, 1, 9, 0, tzinfo=UTC)
GAP = timedelta(minutes=15)


def episode(id_: str, first: int, last: int, *, conversation: str = "c", start_minute: float | None = None):
    """Messages ``first..last``, one a minute from ``start_minute`` (default: the seq)."""
    start = T0 + timedelta(minutes=first if start_minute is None else start_minute)
    end = start + timedelta(minutes=last - first)
    return EpisodeHit(id_, conversation, f"episode {id_}", "", start, end, 0.1, last - first + 1, first, last, "x")


def test_contiguous_episodes_without_a_pause_are_one_sitting():
    a, b, c = episode("a", 1, 10), episode("b", 11, 20), episode("c", 21, 30)
    assert sittings([c, a, b], GAP) == {"a": "a", "b": "a", "c": "a"}  # given in any order (rank order)


def test_a_pause_a_missing_episode_or_another_conversation_starts_another_sitting():
    a = episode("a", 1, 10)
    later = episode("later", 11, 20, start_minute=10 + 16)  # 16 minutes after a ended
    gap = episode("gap", 31, 40)  # the episode of 21..30 is not among the hits
    other = episode("other", 11, 20, conversation="d")
    assert sittings([a, later, gap, other], GAP) == {"a": "a", "later": "later", "gap": "gap", "other": "other"}
    assert sittings([a, episode("b", 11, 20, start_minute=10 + 15)], GAP)["b"] == "a"  # at the gap: still one


def test_episodes_whose_times_run_backwards_are_joined_only_within_the_gap():
    """Messages imported with times out of their order: the next episode by seq began
    before the one it follows; a participant's clock a little behind is still one sitting."""
    a = episode("a", 1, 10, start_minute=3 * 24 * 60)
    days_before = episode("b", 11, 20)
    assert sittings([a, days_before], GAP) == {"a": "a", "b": "b"}
    skewed = episode("b", 11, 20, start_minute=3 * 24 * 60 + 9 - 2)  # 2 minutes before a's end
    assert sittings([a, skewed], GAP) == {"a": "a", "b": "a"}


@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 30)), min_size=1, max_size=12))
def test_sittings_partition_the_hits_into_runs_of_contiguous_episodes(shape):
    hits, seq, minute = [], 1, 0.0
    for i, (size, pause) in enumerate(shape):
        hits.append(episode(f"e{i}", seq, seq + size - 1, start_minute=minute))
        seq, minute = seq + size, minute + size - 1 + pause
    of = sittings(hits[::-1], GAP)
    assert set(of) == {h.id for h in hits}
    for before, after in itertools.pairwise(hits):
        joined = after.start_at - before.end_at <= GAP
        assert (of[after.id] == of[before.id]) is joined
    assert all(of[of[h.id]] == of[h.id] for h in hits)  # a sitting is named by one of its own


def _rows(first: int, last: int) -> list[tuple]:
    return [(s, "user", None, f"message {s}", T0 + timedelta(minutes=s)) for s in range(first, last + 1)]


@pytest.mark.parametrize("scope", ["sitting", "episode"])
def test_cutting_a_stretch_of_talk_in_two_does_not_change_what_its_messages_compete_with(scope):
    cfg = Settings(_env_file=None, episode_density_scope=scope)
    ranks = {3: {"vector": 1}, 4: {"lexical": 2}, 14: {"vector": 3}, 16: {"vector": 5}}
    whole = episode("whole", 1, 20)
    whole.rrf = 0.03
    attach_messages({"whole": _rows(1, 20)}, [whole], {"whole": ranks}, frozenset(), cfg)
    left, right = episode("left", 1, 10), episode("right", 11, 20)
    left.rrf = right.rrf = 0.03
    attach_messages(
        {"left": _rows(1, 10), "right": _rows(11, 20)},
        [left, right],
        {"left": {s: r for s, r in ranks.items() if s <= 10}, "right": {s: r for s, r in ranks.items() if s > 10}},
        frozenset(),
        cfg,
    )
    cut = {m.seq: m.relevance for h in (left, right) for m in h.messages}
    uncut = {m.seq: m.relevance for m in whole.messages}
    if scope == "sitting":
        assert cut == pytest.approx(uncut)
    else:  # each half's density counts its own matches only: the half with the weaker ones falls behind
        assert cut[14] < uncut[14] and cut[16] < uncut[16]
