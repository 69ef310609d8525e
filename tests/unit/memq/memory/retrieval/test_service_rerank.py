"""How fused episodes are re-ranked by FSRS retrievability at the moment of the question
and by a time the query names (``service.rerank``)."""

from __future__ import annotations

import itertools
import zlib
from datetime import UTC, datetime, timedelta

import pytest

from memq.memory.retrieval.model import EpisodeHit
from memq.memory.retrieval.request import TimeRange
from memq.memory.retrieval.retrievability import card_state, retrievability
from memq.memory.retrieval.service import rerank
from memq.memory.retrieval.time_expressions import NamedTime
from memq.shared.settings import Settings
from memq.worker.episodes.fsrs_card import initial_memory

NOW = datetime(2023, 5, 24, 15, 30, tzinfo=UTC)


@pytest.fixture(scope="module")
def cfg() -> Settings:
    return Settings(
        desired_retention=0.9,
        retrievability_weight=1.0,
        retrievability_influence=1.0,  # seed 001's rrf x retrievability; the default's bounded decay below
        flashbulb_surprise=0.85,
        flashbulb_floor=0.5,
        time_boost=1.5,
        surprise_stability_boost=0.5,
    )


def candidate(id_: str, ended_days_ago: float, surprise: float = 0.1, *, cfg: Settings) -> EpisodeHit:
    """An episode as stored: its FSRS card formed when it ended, never reviewed since."""
    end = NOW - timedelta(days=ended_days_ago)
    card = initial_memory(
        zlib.crc32(id_.encode()),
        end,
        surprise,
        boost=cfg.surprise_stability_boost,
        desired_retention=cfg.desired_retention,
    ).card
    stability, last_review = card_state(card)
    return EpisodeHit(
        id=id_,
        conversation_id="c",
        title=id_,
        summary="",
        start_at=end - timedelta(minutes=30),
        end_at=end,
        surprise=surprise,
        message_count=4,
        first_seq=1,
        last_seq=4,
        summary_source="extractive",
        stability=stability,
        last_review=last_review,
    )


# --- re-ranking by retrievability --------------------------------------------------


def test_an_old_never_reviewed_memory_drops_below_a_fresh_equal_one(cfg):
    old, fresh = candidate("old", 730, cfg=cfg), candidate("fresh", 0.1, cfg=cfg)
    hits = rerank([old, fresh], {"old": 0.03, "fresh": 0.03}, cfg, NOW, None)
    assert [h.id for h in hits] == ["fresh", "old"] and [h.rank for h in hits] == [1, 2]
    assert hits[0].retrievability == pytest.approx(1.0)
    assert (
        hits[1].retrievability == pytest.approx(retrievability(old.stability, old.last_review, NOW))
        and hits[1].retrievability < 0.5
    )
    assert hits[1].final == pytest.approx(0.03 * hits[1].retrievability)


def test_retrievability_outweighs_a_slightly_better_fusion_score(cfg):
    old, fresh = candidate("old", 365, cfg=cfg), candidate("fresh", 0.1, cfg=cfg)
    hits = rerank([old, fresh], {"old": 2 / 61, "fresh": 2 / 63}, cfg, NOW, None)
    assert [h.id for h in hits] == ["fresh", "old"]
    off = cfg.model_copy(update={"retrievability_weight": 0.0})  # FSRS switched off: fusion decides
    assert [h.id for h in rerank([old, fresh], {"old": 2 / 61, "fresh": 2 / 63}, off, NOW, None)] == ["old", "fresh"]


def test_bounded_decay_reorders_equals_but_never_buries_a_clearly_better_old_memory(cfg):
    bounded = cfg.model_copy(update={"retrievability_influence": 0.1})
    old, fresh = candidate("old", 730, cfg=cfg), candidate("fresh", 0.1, cfg=cfg)
    equal = rerank([old, fresh], {"old": 0.03, "fresh": 0.03}, bounded, NOW, None)
    assert [h.id for h in equal] == ["fresh", "old"]  # where relevance ties, the fresher memory leads
    r = equal[1].retrievability
    assert equal[1].final == pytest.approx(0.03 * (0.9 + 0.1 * r))
    far = rerank([old, fresh], {"old": 0.03, "fresh": 0.03 * 0.85}, bounded, NOW, None)
    assert [h.id for h in far] == ["old", "fresh"]  # 15 % better: decay (at most 10 %) cannot bury it
    seed = rerank([old, fresh], {"old": 0.03, "fresh": 0.03 * 0.85}, cfg, NOW, None)
    assert [h.id for h in seed] == ["fresh", "old"]  # where seed 001's decay did
    assert Settings().retrievability_influence == 0.1


@pytest.mark.parametrize("influence", [0.1, 1.0])
def test_decay_never_decides_which_memories_the_limit_keeps(cfg, influence):
    """The limit keeps the most relevant episodes (rrf x time boost); decay orders only
    those: an old, never-reviewed memory that matches a little better than a fresh one is
    kept over it at limit 1, though with both kept the fresh one leads."""
    decaying = cfg.model_copy(update={"retrievability_influence": influence})
    fused = {"old": 0.03, "fresh": 0.03 * 0.97, "other": 0.01}

    def ranked(limit):
        hits = [candidate("old", 730, cfg=cfg), candidate("fresh", 0.1, cfg=cfg), candidate("other", 0.1, cfg=cfg)]
        return [h.id for h in rerank(hits, fused, decaying, NOW, None, limit)]

    assert ranked(None)[0] == "fresh" and len(ranked(None)) == 3
    assert ranked(2) == ["fresh", "old"]  # the least relevant left out, whatever its freshness
    assert ranked(1) == ["old"]
    off = decaying.model_copy(update={"retrievability_weight": 0.0})
    both = [candidate("old", 730, cfg=cfg), candidate("fresh", 0.1, cfg=cfg)]
    assert [h.id for h in rerank(both, fused, off, NOW, None, 1)] == ["old"]


def test_a_time_the_query_names_decides_what_the_limit_keeps(cfg):
    """A time the query names is relevance: its boost counts in what is kept."""
    inside, outside = candidate("inside", 10, cfg=cfg), candidate("outside", 0.1, cfg=cfg)
    window = TimeRange(NOW - timedelta(days=12), NOW - timedelta(days=9))
    named = NamedTime("ten days ago", window)
    hits = rerank([inside, outside], {"inside": 0.02, "outside": 0.025}, cfg, NOW, named, 1)
    assert [h.id for h in hits] == ["inside"] and hits[0].time_boost == 1.5


def test_retrievability_decreases_with_time_since_the_memory_formed(cfg):
    ages = [0.1, 2, 7, 30, 365, 730]
    hits = rerank([candidate(f"a{a}", a, cfg=cfg) for a in ages], {f"a{a}": 0.01 for a in ages}, cfg, NOW, None)
    assert [h.id for h in hits] == [f"a{a}" for a in ages]
    values = [h.retrievability for h in hits]
    assert all(a > b for a, b in itertools.pairwise(values[1:])) and values[0] == pytest.approx(1.0)


def test_a_flashbulb_memory_never_falls_below_the_floor(cfg):
    flashbulb = candidate("flash", 730, surprise=0.9, cfg=cfg)
    ordinary = candidate("plain", 730, surprise=0.84, cfg=cfg)
    raw = retrievability(flashbulb.stability, flashbulb.last_review, NOW)
    assert raw < cfg.flashbulb_floor  # the floor matters here
    hits = {h.id: h for h in rerank([flashbulb, ordinary], {"flash": 0.02, "plain": 0.02}, cfg, NOW, None)}
    assert hits["flash"].retrievability == cfg.flashbulb_floor and hits["flash"].rank == 1
    assert hits["plain"].retrievability == pytest.approx(retrievability(ordinary.stability, ordinary.last_review, NOW))
    assert hits["plain"].retrievability < cfg.flashbulb_floor  # just below the flashbulb threshold: no floor


def test_a_time_the_query_names_boosts_the_episodes_in_it(cfg):
    inside, outside = candidate("inside", 8, cfg=cfg), candidate("outside", 1, cfg=cfg)
    window = TimeRange(NOW - timedelta(days=10), NOW - timedelta(days=5))
    named = NamedTime("last week", window)
    fused = {"inside": 0.030, "outside": 0.031}
    without = rerank([inside, outside], fused, cfg, NOW, None)
    assert [h.id for h in without] == ["outside", "inside"] and {h.time_boost for h in without} == {1.0}
    boosted = {h.id: h for h in rerank([inside, outside], fused, cfg, NOW, named)}
    assert (boosted["inside"].time_boost, boosted["outside"].time_boost) == (1.5, 1.0)
    assert boosted["inside"].rank == 1
    assert boosted["inside"].final == pytest.approx(0.030 * boosted["inside"].retrievability * 1.5)


def test_ranks_are_numbered_from_one_in_final_order(cfg):
    cands = [candidate(f"e{i}", i, cfg=cfg) for i in range(5)]
    hits = rerank(cands, {f"e{i}": 0.01 * (5 - i) for i in range(5)}, cfg, NOW, None)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert all(a.final >= b.final for a, b in itertools.pairwise(hits))


def test_decay_orders_the_episodes_but_not_their_messages_place_in_the_budget(cfg):
    from memq.memory.retrieval.service import attach_messages

    old, fresh = candidate("old", 120, cfg=cfg), candidate("fresh", 1, cfg=cfg)
    hits = rerank([old, fresh], {"old": 0.03, "fresh": 0.03}, cfg, NOW, None)
    assert [h.id for h in hits] == ["fresh", "old"] and old.final < fresh.final  # seed 001's order of equals
    row = (1, "user", "Ann", "the same words", NOW)
    attach_messages({"old": [row], "fresh": [row]}, hits, {h.id: {1: {"vector": 1}} for h in hits}, frozenset(), cfg)
    assert fresh.messages[0].relevance > 0
    assert old.messages[0].relevance == pytest.approx(fresh.messages[0].relevance)
