"""How relevant each message that may be shown is, and the priority it competes for the
budget with (``relevance.py``): RRF of its ranks in the message legs, a share of a
neighbour's relevance, a participant the query names, the episode's density, and a named
time applied as the module says (FSRS decay is not: it orders episodes: ``test_service_rerank.py``)."""

from __future__ import annotations

import pytest

from memq.memory.retrieval.relevance import RelevanceParams, episode_relevance, priorities

P = RelevanceParams(
    k=60, neighbour_bonus=0.0, speaker_weight=0.0, density_weight=0.0, density_top=3, episode_weight=0.0
)


def params(**kw) -> RelevanceParams:
    return RelevanceParams(**{**P.__dict__, **kw})


def by_seq(seqs, out):
    return {
        seq: (score, ranks, match) for seq, score, ranks, match in zip(seqs, out.scores, out.ranks, out.speaker_match)
    }


def test_messages_are_scored_by_the_rrf_of_their_ranks_in_the_message_legs():
    seqs = [1, 2, 3, 4]
    ranks = {2: {"vector": 1}, 3: {"vector": 2, "lexical": 1}}
    out = episode_relevance(seqs, ranks, P)
    assert out.ranks == [{}, {"vector": 1}, {"vector": 2, "lexical": 1}, {}]
    assert out.scores[2] == pytest.approx(1 / 62 + 1 / 61)  # found by both legs beats first of one
    assert out.scores[1] == pytest.approx(1 / 61)
    assert out.scores[0] == 0.0 == out.scores[3]  # in no leg's top k


def test_a_message_next_to_a_relevant_one_shares_part_of_its_relevance():
    # the question (seq 5) holds the query's words; its answer (seq 6) is in no leg
    seqs = [4, 5, 6, 7]
    ranks = {5: {"lexical": 1}, 7: {"vector": 3}}
    alone = by_seq(seqs, episode_relevance(seqs, ranks, P))
    shared = by_seq(seqs, episode_relevance(seqs, ranks, params(neighbour_bonus=0.5)))
    assert shared[6][0] == pytest.approx(max(0.5 * alone[5][0], 0.5 * alone[7][0]))
    assert shared[4][0] == pytest.approx(0.5 * alone[5][0])
    assert shared[5][0] == alone[5][0]  # its own relevance is already the larger
    assert shared[6][1] == {}  # ranks stay the message's own


def test_neighbours_are_the_next_seqs_not_the_next_messages_listed():
    # the messages that may be shown are a subset: seq 2 and seq 9 are listed together but are not neighbours
    out = episode_relevance([2, 9, 10], {9: {"lexical": 1}}, params(neighbour_bonus=1.0))
    assert out.scores == [0.0, pytest.approx(1 / 61), pytest.approx(1 / 61)]
    empty = episode_relevance([], {}, P)
    assert (empty.scores, empty.ranks, empty.speaker_match, empty.density) == ([], [], [], 0)


def test_a_message_by_a_participant_the_query_names_gains_a_share_of_a_first_rank():
    seqs = [1, 2, 3]
    speakers = ["Caroline", "Melanie", "Caroline"]
    ranks = {2: {"vector": 1}}
    out = episode_relevance(seqs, ranks, params(speaker_weight=0.3), speakers, {"Caroline"})
    assert out.scores[0] == pytest.approx(0.3 / 61) and out.speaker_match == [True, False, True]
    assert out.scores[1] == pytest.approx(1 / 61)
    assert episode_relevance(seqs, ranks, params(speaker_weight=0.3), speakers, set()).scores[0] == 0.0


def test_an_episodes_density_is_the_sum_of_its_best_own_relevances():
    e1 = episode_relevance([1, 2, 3, 4, 5], {i: {"vector": i} for i in (1, 2, 3, 4)}, params(neighbour_bonus=1.0))
    assert e1.density == pytest.approx(1 / 61 + 1 / 62 + 1 / 63)  # the best three, not the fourth
    e2 = episode_relevance([1, 2], {1: {"vector": 5}}, params(neighbour_bonus=1.0))
    assert e2.density == pytest.approx(1 / 65)  # neighbours' shares not counted: own relevance only
    assert e2.scores == [pytest.approx(1 / 65), pytest.approx(1 / 65)]


def test_the_episodes_terms_are_added_and_a_named_time_scales_everything():
    p = params(density_weight=0.2, episode_weight=0.1)
    base = priorities([0.02, 0.0], 0.05, 0.03, 1.0, p)
    assert base == [pytest.approx(0.02 + 0.2 * 0.05 + 0.1 * 0.03), pytest.approx(0.2 * 0.05 + 0.1 * 0.03)]
    assert priorities([0.02], 0.05, 0.03, 1.5, p) == [pytest.approx(1.5 * base[0])]


def test_a_neighbour_shares_the_legs_relevance_but_not_the_speakers_name():
    # "What does Caroline do to destress?": Caroline's answer (seq 2) is found; Melanie's
    # replies around it (seqs 1, 3) share its rank, not Caroline's name
    seqs = [1, 2, 3, 4]
    speakers = ["Melanie", "Caroline", "Melanie", "Caroline"]
    ranks = {2: {"vector": 1}}
    p = params(speaker_weight=0.3, neighbour_bonus=0.9)
    out = episode_relevance(seqs, ranks, p, speakers, {"Caroline"})
    name = 0.3 / 61
    assert out.scores[0] == pytest.approx(0.9 / 61) == out.scores[2]  # no share of the name
    assert out.scores[1] == pytest.approx(1 / 61 + name)
    # Caroline's next message, found by no leg, has her name on its own and leads Melanie's replies
    assert out.scores[3] == pytest.approx(name) and out.scores[3] < out.scores[2]
    # a message of the named speaker next to a found one has both: the share and the name
    both = episode_relevance([1, 2], {1: {"lexical": 1}}, p, ["Melanie", "Caroline"], {"Caroline"})
    assert both.scores[1] == pytest.approx(0.9 / 61 + name)
    assert both.density == pytest.approx(1 / 61 + name)  # own relevances: the rank and the name, no share
