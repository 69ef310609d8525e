"""BM25 over lexemes, checked against the formula by hand."""

import math

import pytest

from memq_lab.evaluation.locomo.bm25 import Bm25Index


def test_rare_terms_weigh_more_and_ranking_follows_scores():
    docs = {0: {"pottery": 1, "class": 1}, 1: {"class": 2}, 2: {"tram": 1}, 3: {"class": 1, "tram": 1}}
    index = Bm25Index(docs, k1=1.2, b=0.75)
    assert index.idf("pottery") > index.idf("class")  # in one document against three
    assert index.idf("pottery") == pytest.approx(math.log(1 + (4 - 1 + 0.5) / (1 + 0.5)))
    avg = 7 / 4
    expected = index.idf("pottery") * 1 * 2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * 2 / avg))
    expected += index.idf("class") * 1 * 2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * 2 / avg))
    assert index.score(0, ["pottery", "class"]) == pytest.approx(expected)
    assert index.rank(["pottery", "class"])[0] == 0
    assert index.rank(["nothing"]) == [] and 2 not in index.rank(["class"])
