"""Rating without an LLM: closeness of the memory to what was said afterwards, and the
memory's distinctive words the conversation took up (the query's own words do not count)."""

import numpy as np
import pytest

from memq.worker.review.usage import UsageParams, usage_rating, words

P = UsageParams()


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("cos, rating", [(0.9, 4), (0.7, 3), (0.5, 2), (0.1, 1)])
def test_closeness_levels(cos, rating):
    memory = np.array([unit(1, 0)])
    segment = np.array([unit(cos, np.sqrt(1 - cos * cos))])
    assert usage_rating(memory, segment, "", "", [], P).rating == rating


def test_uptake_counts_distinctive_words_not_in_the_query():
    memory_text = "We booked the Lisbon apartment near Alfama with the blue tiles"
    said = "Great, so the apartment in Alfama: what about the tiles? Lisbon is sunny."
    rated = usage_rating(np.zeros((0, 2)), np.zeros((0, 2)), memory_text, said, ["where is the Lisbon apartment?"], P)
    assert rated.taken_up == ["alfama", "tiles"] and rated.rating == 3  # "lisbon" and "apartment" were asked for
    assert usage_rating(np.zeros((0, 2)), np.zeros((0, 2)), memory_text, "ok thanks", ["lisbon"], P).rating == 1


def test_common_words_are_not_distinctive():
    assert words("Would you really think about that thing?") == set()
    assert words("Caroline researched adoption agencies") == {"caroline", "researched", "adoption", "agencies"}
