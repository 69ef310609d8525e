"""How relevant each message that may be shown is, and the priority it competes for the
budget with (``relevance.py``): RRF of its ranks in the message legs, a share of a
neighbour's relevance, a participant the query names, the episode's density, and FSRS
retrievability and a named time applied as the module says."""

from __future__ import annotations

import pytest

from shared.retrieval.relevance import RelevanceParams, episode_density, message_relevance, priority

P = RelevanceParams(k=60, neighbour_bonus=0.0, speaker_weight=0.0, density_weight=0.0, density_top=3, episode_weight=0.0)


def params(**kw) -> RelevanceParams:
    return RelevanceParams(**{**P.__dict__, **kw})


def test_messages_are_scored_by_the_rrf_of_their_ranks_in_the_message_legs():
    keys = [("e1", 1), ("e1", 2), ("e1", 3), ("e1", 4)]
    ranks = {"message_vector": {("e1", 2): 1, ("e1", 3): 2}, "message_lexical": {("e1", 3): 1}}
    out = message_relevance(keys, ranks, P)
    assert {key: r.ranks for key, r in out.items()} == {
        ("e1", 1): {}, ("e1", 2): {"vector": 1}, ("e1", 3): {"vector": 2, "lexical": 1}, ("e1", 4): {},
    }
    assert out[("e1", 3)].score == pytest.approx(1 / 62 + 1 / 61)  # found by both legs beats first of one
    assert out[("e1", 2)].score == pytest.approx(1 / 61)
    assert out[("e1", 1)].score == 0.0 == out[("e1", 4)].score  # in no leg's top k


def test_a_message_next_to_a_relevant_one_shares_part_of_its_relevance():
    # the question (seq 5) holds the query's words; its answer (seq 6) is in no leg
    keys = [("e1", 4), ("e1", 5), ("e1", 6), ("e1", 7)]
    ranks = {"message_lexical": {("e1", 5): 1}, "message_vector": {("e1", 7): 3}}
    alone = message_relevance(keys, ranks, P)
    shared = message_relevance(keys, ranks, params(neighbour_bonus=0.5))
    assert shared[("e1", 6)].score == pytest.approx(max(0.5 * alone[("e1", 5)].score, 0.5 * alone[("e1", 7)].score))
    assert shared[("e1", 4)].score == pytest.approx(0.5 * alone[("e1", 5)].score)
    assert shared[("e1", 5)].score == alone[("e1", 5)].score  # its own relevance is already the larger
    assert shared[("e1", 6)].ranks == {} and shared[("e1", 6)].own == 0.0  # ranks and own stay the message's


def test_neighbours_are_the_next_seqs_of_the_same_episode_not_the_next_keys():
    # the messages that may be shown are a subset: seq 2 and seq 9 are listed together but are not neighbours
    keys = [("e1", 2), ("e1", 9), ("e2", 10)]
    out = message_relevance(keys, {"message_lexical": {("e1", 9): 1}}, params(neighbour_bonus=1.0))
    assert out[("e1", 2)].score == 0.0 and out[("e2", 10)].score == 0.0  # seq 10 of another episode neither
    assert out[("e1", 9)].score == pytest.approx(1 / 61)
    assert message_relevance([], {}, P) == {}


def test_a_message_by_a_participant_the_query_names_gains_a_share_of_a_first_rank():
    keys = [("e1", 1), ("e1", 2), ("e1", 3)]
    speakers = ["Caroline", "Melanie", "Caroline"]
    ranks = {"message_vector": {("e1", 2): 1}}
    out = message_relevance(keys, ranks, params(speaker_weight=0.3), speakers, {"Caroline"})
    assert out[("e1", 1)].score == pytest.approx(0.3 / 61) and out[("e1", 1)].speaker_match
    assert out[("e1", 2)].score == pytest.approx(1 / 61) and not out[("e1", 2)].speaker_match
    assert message_relevance(keys, ranks, params(speaker_weight=0.3), speakers, set())[("e1", 1)].score == 0.0


def test_an_episodes_density_is_the_sum_of_its_best_own_relevances():
    keys = [("e1", i) for i in range(1, 6)] + [("e2", 1)]
    ranks = {"message_vector": {("e1", 1): 1, ("e1", 2): 2, ("e1", 3): 3, ("e1", 4): 4, ("e2", 1): 5}}
    rel = message_relevance(keys, ranks, params(neighbour_bonus=1.0))
    density = episode_density(rel, top=3)
    assert density["e1"] == pytest.approx(1 / 61 + 1 / 62 + 1 / 63)  # the best three, not the fourth
    assert density["e2"] == pytest.approx(1 / 65)  # neighbours' shares not counted: own relevance only


def test_retrievability_scales_the_episodes_terms_and_a_named_time_everything():
    p = params(density_weight=0.2, episode_weight=0.1)
    base = priority(0.02, 0.05, 0.03, 1.0, 1.0, p)
    assert base == pytest.approx(0.02 + 0.2 * 0.05 + 0.1 * 0.03)
    faded = priority(0.02, 0.05, 0.03, 0.25, 1.0, p)
    assert faded == pytest.approx(0.02 + (0.2 * 0.05 + 0.1 * 0.03) * 0.25)  # its own relevance stays
    assert priority(0.02, 0.05, 0.03, 1.0, 1.5, p) == pytest.approx(1.5 * base)
