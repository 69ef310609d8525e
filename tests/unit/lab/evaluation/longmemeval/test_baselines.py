"""The baselines on a toy haystack, with deterministic toy embedders."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memq.shared.tokens import count_tokens
from memq_lab.evaluation.longmemeval.baselines import (
    EmbeddingStore,
    Haystack,
    bm25_sessions,
    dense_sessions,
    dense_turns_best,
    hybrid_turns,
    run_baselines,
    session_document,
    words,
)
from memq_lab.evaluation.longmemeval.data import Question, Session, Turn
from memq_lab.evaluation.longmemeval.measures import question_measures, session_ranking

DIM = 512


def bag_of_words(texts: list[str]) -> np.ndarray:
    """Each word hashed into one of DIM slots and counted (not normalised: the baselines are)."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for row, text in enumerate(texts):
        for w in words(text):
            out[row, zlib.crc32(w.encode()) % DIM] += 1.0
    return out


START = datetime(2023, 5, 1, 9, 0, tzinfo=UTC)


def _question(question: str, sessions: dict[str, list[tuple[str, str]]], answer: tuple[str, ...] = ()) -> Question:
    built = tuple(
        Session(
            sid,
            START + timedelta(days=n),
            tuple(
                Turn(sid, i, role, text, False, START + timedelta(days=n, seconds=30 * i))
                for i, (role, text) in enumerate(turns)
            ),
        )
        for n, (sid, turns) in enumerate(sessions.items())
    )
    return Question("q", "single-session-user", question, "", START + timedelta(days=30), built, answer)


HAYSTACK = {
    "garden": [("user", "My tomatoes are growing fast this spring"), ("assistant", "Water them every morning")],
    "pottery": [
        ("user", "Can you suggest a weekend hike?"),
        ("assistant", "Try the ridge trail"),
        ("user", "Also I signed up for a pottery class on Tuesday evenings"),
        ("assistant", "Sounds like a lovely hobby"),
    ],
    "tram": [("user", "When does the tram leave the station?"), ("assistant", "Every ten minutes")],
}
QUESTION = _question("Which evening is my pottery class?", HAYSTACK, answer=("pottery",))


def test_items_hold_their_session_turns_text_and_tokens():
    h = Haystack(QUESTION)
    pottery = h.session_items[1]
    assert pottery.session_id == "pottery"
    assert pottery.turns == ("pottery#0", "pottery#1", "pottery#2", "pottery#3")
    assert pottery.text.startswith("[02 May 2023 09:00]\nuser: Can you suggest")
    assert pottery.tokens == count_tokens(pottery.text)
    assert h.documents[1] == session_document(QUESTION.sessions[1])
    assert h.documents[1].splitlines()[1] == "assistant: Try the ridge trail"
    turn = h.turn_items[4]  # pottery's third turn, 60 s after the session's start
    assert (turn.session_id, turn.turns) == ("pottery", ("pottery#2",))
    assert turn.text == "[02 May 2023 09:01] user: Also I signed up for a pottery class on Tuesday evenings"
    assert turn.tokens == count_tokens(turn.text)


def test_bm25_sessions_ranks_the_session_with_the_words_first_then_the_rest_in_order():
    ranked = bm25_sessions(QUESTION)
    assert ranked[0].session_id == "pottery"
    # garden holds "my", tram no query word at all: it comes last, as BM25 scores it 0
    assert [i.session_id for i in ranked] == ["pottery", "garden", "tram"]


def test_dense_sessions_ranks_the_right_session_first():
    ranked = dense_sessions(QUESTION, bag_of_words)
    assert ranked[0].session_id == "pottery"
    assert sorted(i.session_id for i in ranked) == ["garden", "pottery", "tram"]


def test_dense_turns_best_ranks_the_evidence_turn_first_and_sessions_by_best_turn():
    ranked = dense_turns_best(QUESTION, bag_of_words)
    assert ranked[0].turns == ("pottery#2",)
    assert len(ranked) == 8 and all(len(i.turns) == 1 for i in ranked)
    assert session_ranking(ranked)[0] == "pottery"
    # the session order is each session's best turn's rank
    firsts: dict[str, int] = {}
    for rank, item in enumerate(ranked):
        firsts.setdefault(item.session_id, rank)
    assert session_ranking(ranked) == sorted(firsts, key=firsts.__getitem__)


class Lookup:
    """Vectors given by hand: the question along x; turns at chosen angles."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = vectors
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


def test_hybrid_turns_fuses_both_rankings_by_rrf():
    q = _question(
        "tram", {"a": [("user", "hello there")], "b": [("user", "good morning")], "c": [("user", "the tram")]}
    )
    # a turn is embedded by its content alone, as memq embeds a message
    embed = Lookup({"tram": [1, 0], "hello there": [1, 0], "good morning": [0.8, 0.6], "the tram": [0, 1]})
    # cosine: a#0 (1), b#0 (0.8), c#0 (0); BM25: c#0 alone holds "tram"
    assert [i.turns[0] for i in dense_turns_best(q, embed)] == ["a#0", "b#0", "c#0"]
    # RRF, k = 60: c#0 = 1/63 + 1/61 = 0.0323; a#0 = 1/61 = 0.0164; b#0 = 1/62 = 0.0161
    fused = hybrid_turns(q, embed)
    assert [i.turns[0] for i in fused] == ["c#0", "a#0", "b#0"]
    assert session_ranking(fused) == ["c", "a", "b"]
    # with a large k the legs' ranks matter less than being in both: the same here
    assert [i.turns[0] for i in hybrid_turns(q, embed, k=1000)] == ["c#0", "a#0", "b#0"]


def test_hybrid_turns_ties_keep_the_cosine_order():
    # no turn holds a query word: the fused ranking is the cosine ranking
    q = _question("zebra", {"a": [("user", "one")], "b": [("user", "two")]})
    embed = Lookup({"zebra": [1, 0], "one": [0, 1], "two": [1, 0]})
    assert [i.turns[0] for i in hybrid_turns(q, embed)] == ["b#0", "a#0"]


def test_hybrid_turns_ranks_the_evidence_turn_first_on_the_toy_haystack():
    ranked = hybrid_turns(QUESTION, bag_of_words)
    assert ranked[0].turns == ("pottery#2",)
    assert len(ranked) == 8  # every turn: the cosine leg ranks them all


def test_every_baseline_scores_through_the_same_measures():
    store = EmbeddingStore(bag_of_words)
    rankings = run_baselines(QUESTION, store.embed)
    assert list(rankings) == ["bm25_sessions", "dense_sessions", "dense_turns_best", "hybrid_turns"]
    for name, items in rankings.items():
        values = question_measures(items, QUESTION)
        assert values["session_recall_any@5"] == 1.0, name
        assert values["session_ndcg@10"] == 1.0, name
        assert ("turn_ndcg@10" in values) == (name in {"dense_turns_best", "hybrid_turns"}), name
    # the question once, each session document once, each turn line once
    assert store.embedded == 1 + 3 + 8


def test_embedding_store_embeds_each_text_once_and_keeps_it_on_disk(tmp_path: Path):
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return bag_of_words(texts) * 3.0  # not unit length: the store normalises

    store = EmbeddingStore(embed, tmp_path, model="local/all-MiniLM-L6-v2", batch_size=2)
    first = store.embed(["pottery class", "tram station", "pottery class", "ridge trail"])
    assert calls == [["pottery class", "tram station"], ["ridge trail"]]  # distinct unseen texts, in batches
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0)
    assert np.array_equal(first[0], first[2])
    again = store.embed(["ridge trail", "tram station"])
    assert len(calls) == 2 and np.array_equal(again[0], first[3])
    assert store.embed([]).shape[0] == 0
    # a second store on the same folder embeds nothing it has seen
    assert list((tmp_path / "local_all-MiniLM-L6-v2").glob("*.npz"))
    (tmp_path / "local_all-MiniLM-L6-v2" / "cut.partial.npz").write_bytes(b"not a file")
    later = EmbeddingStore(embed, tmp_path, model="local/all-MiniLM-L6-v2")
    assert np.allclose(later.embed(["tram station", "pottery class"]), first[[1, 0]])
    assert later.embedded == 0 and len(calls) == 2
    # another model has a folder of its own
    assert EmbeddingStore(embed, tmp_path, model="other").vectors == {}


@pytest.mark.parametrize("baseline", [dense_sessions, dense_turns_best, hybrid_turns])
def test_empty_haystack(baseline):
    q = _question("anything", {})
    assert baseline(q, bag_of_words) == []
    assert bm25_sessions(q) == []
