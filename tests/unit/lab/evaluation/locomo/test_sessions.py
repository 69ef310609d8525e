"""LoCoMo questions in LongMemEval's shape and the session-level figures of
``memq eval-locomo`` (``locomo/sessions.py``), on a tiny hand-made conversation, without
services."""

from __future__ import annotations

import json
import math
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from memq_lab.evaluation.locomo.data import LocomoConversation, load_locomo
from memq_lab.evaluation.locomo.report import print_sessions, targets, to_json
from memq_lab.evaluation.locomo.runner import EvalConfig, EvalRun
from memq_lab.evaluation.locomo.sessions import (
    PUBLISHED,
    ConversationSessions,
    episode_items,
    evidence_recall_at_items,
    question_measures,
    summary,
    target,
)
from memq_lab.evaluation.longmemeval.baselines import RANKERS, Haystack, Item, words
from memq_lab.evaluation.longmemeval.measures import QuestionResult, session_ranking
from memq_lab.evaluation.longmemeval.measures import ReturnedItem as MemqItem

CONVERSATION = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Tom."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "  "},  # no text: not a turn
            {"speaker": "Bo", "dia_id": "D1:3", "text": "Nice! What breed?"},
        ],
        "session_2_date_time": "9:00 am on 20 May, 2023",
        "session_2": [
            {"speaker": "Ann", "dia_id": "D2:1", "text": "We went hiking in the mountains.", "blip_caption": "a trail"},
            {"speaker": "Bo", "dia_id": "D2:2", "text": "Sounds fun."},
        ],
        "session_3_date_time": "6:00 pm on 2 June, 2023",
        "session_3": [
            {"speaker": "Bo", "dia_id": "D3:1", "text": "My dog chased the cat Tom."},
            {"speaker": "Ann", "dia_id": "D3:2", "text": "Tom hid under the bed."},
        ],
    },
    "qa": [
        {"question": "What is the cat called?", "answer": "Tom", "evidence": ["D1:1", "D3:2"], "category": 4},
        {"question": "Where did Ann go hiking?", "answer": "mountains", "evidence": ["D2:1"], "category": 2},
    ],
}
ASKED = datetime(2023, 6, 3, 18, 0, tzinfo=UTC)


@pytest.fixture
def conv(tmp_path: Path) -> LocomoConversation:
    path = tmp_path / "conv.json"
    path.write_text(json.dumps([CONVERSATION]))
    return load_locomo(path)[0]


def test_a_conversation_becomes_sessions_with_turn_keys_for_its_dia_ids(conv: LocomoConversation) -> None:
    adapted = ConversationSessions.of(conv)
    assert [s.id for s in adapted.sessions] == ["session_1", "session_2", "session_3"]
    assert adapted.sessions[0].date == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    # a turn's index is its place among the session's turns: D1:3 follows a turn with no text
    assert adapted.keys == {
        "D1:1": "session_1#0",
        "D1:3": "session_1#1",
        "D2:1": "session_2#0",
        "D2:2": "session_2#1",
        "D3:1": "session_3#0",
        "D3:2": "session_3#1",
    }
    hiking = adapted.sessions[1].turns[0]
    assert (hiking.role, hiking.content) == ("Ann", "We went hiking in the mountains. [shares a trail]")
    assert hiking.at == conv.turn("D2:1").at
    assert not any(t.has_answer for s in adapted.sessions for t in s.turns)


def test_a_question_marks_its_evidence_and_the_sessions_holding_it(conv: LocomoConversation) -> None:
    adapted = ConversationSessions.of(conv)
    q = adapted.question(conv.questions[0], ASKED)
    assert (q.id, q.type, q.question, q.answer, q.date) == (
        "conv-x-q0",
        "single-hop",
        "What is the cat called?",
        "Tom",
        ASKED,
    )
    assert q.answer_session_ids == ("session_1", "session_3")
    assert q.evidence_keys == {"session_1#0", "session_3#1"}
    assert not q.abstention
    other = adapted.question(conv.questions[1], ASKED)
    assert (other.type, other.answer_session_ids, other.evidence_keys) == (
        "temporal",
        ("session_2",),
        frozenset({"session_2#0"}),
    )
    assert not any(t.has_answer for s in adapted.sessions for t in s.turns)  # shared sessions left unmarked


def test_an_episode_is_an_item_of_the_turns_it_shows_and_of_their_session(conv: LocomoConversation) -> None:
    adapted = ConversationSessions.of(conv)
    dia_by_seq = {1: "D1:1", 2: "D1:3", 3: "D2:1", 4: "D2:2", 5: "D3:1", 6: "D3:2"}
    records: list[dict[str, Any]] = [
        {"messages": [{"seq": 5}, {"seq": 6}]},
        {"messages": [{"seq": 1}, {"seq": 99}]},  # a seq not stored: left out
        {"messages": []},
    ]
    assert episode_items(records, adapted, dia_by_seq) == [
        MemqItem("session_3", ("session_3#0", "session_3#1")),
        MemqItem("session_1", ("session_1#0",)),
        MemqItem("", ()),
    ]
    # across sessions: the one most shown turns come from, the earliest on a tie
    assert adapted.episode_item(["D2:2", "D3:1", "D3:2"]).session_id == "session_3"
    assert adapted.episode_item(["D2:2", "D3:1"]).session_id == "session_2"


def _turn(key: str) -> Item:
    return Item(key.split("#")[0], (key,), key, 1)


def test_session_measures_and_evidence_at_the_top_k_items(conv: LocomoConversation) -> None:
    q = ConversationSessions.of(conv).question(conv.questions[0], ASKED)  # evidence session_1#0, session_3#1
    order = ["session_2#0", "session_3#0", "session_1#1", "session_2#1", "session_3#1", "session_1#0"]
    items = [_turn(k) for k in order]
    assert evidence_recall_at_items(items, q.evidence_keys, 5) == 0.5
    assert evidence_recall_at_items(items, q.evidence_keys, 6) == 1.0
    assert evidence_recall_at_items(items, (), 5) == 0.0
    m = question_measures(items, q)
    # sessions by first appearance: 2, 3, 1; relevant 3 and 1 at ranks 2 and 3
    ndcg = (1.0 + 1 / math.log2(3)) / 2.0  # ranks 1 and 2 both weigh 1 (LongMemEval's DCG)
    assert m == pytest.approx(
        {
            "session_recall_any@5": 1.0,
            "session_recall_any@10": 1.0,
            "session_recall_all@5": 1.0,
            "session_recall_all@10": 1.0,
            "session_ndcg@5": ndcg,
            "session_ndcg@10": ndcg,
            "evidence_recall@5_items": 0.5,
            "evidence_recall@10_items": 1.0,
        }
    )
    whole = question_measures([MemqItem("session_3", ("session_3#0", "session_3#1"))], q)
    assert whole["session_recall_any@5"] == 1.0 and whole["session_recall_all@10"] == 0.0
    assert whole["session_ndcg@10"] == 0.5 and whole["evidence_recall@5_items"] == 0.5


def _bag_of_words(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), 512), dtype=np.float32)
    for row, text in enumerate(texts):
        for w in words(text):
            out[row, zlib.crc32(w.encode()) % 512] += 1.0
    return out


def test_longmemeval_baselines_rank_the_adapted_sessions(conv: LocomoConversation) -> None:
    q = ConversationSessions.of(conv).question(conv.questions[1], ASKED)  # "Where did Ann go hiking?"
    haystack = Haystack(q)
    # a turn is embedded by its text; a whole session by its "Name: text" lines
    assert haystack.lines[2] == "We went hiking in the mountains. [shares a trail]"
    assert haystack.documents[2] == "Bo: My dog chased the cat Tom.\nAnn: Tom hid under the bed."
    # only session 2's text holds a query word ("hiking"; names are not in a turn's text):
    # it comes first, the others in haystack order
    bm25 = RANKERS["bm25_sessions"](haystack, _bag_of_words)
    assert session_ranking(bm25) == ["session_2", "session_1", "session_3"]
    turns = RANKERS["dense_turns_best"](haystack, _bag_of_words)
    assert [t.turns[0] for t in turns[:2]] == ["session_2#0", "session_1#0"]
    for ranked in (bm25, turns):
        m = question_measures(ranked, q)
        assert m["session_recall_any@5"] == m["session_ndcg@10"] == m["evidence_recall@5_items"] == 1.0


def _results(figures: dict[str, list[float]]) -> dict[str, list[QuestionResult]]:
    """Per system, one question per value of its ``session_recall_any@10``."""
    return {
        name: [
            QuestionResult(f"conv-x-q{i}", "single-hop" if i % 2 else "temporal", {"session_recall_any@10": v})
            for i, v in enumerate(values)
        ]
        for name, values in figures.items()
    }


def test_summary_and_the_target_over_the_best_baseline() -> None:
    results = _results(
        {"memq": [1, 1, 1, 1], "bm25_sessions": [1, 1, 1, 0], "hybrid_turns": [1, 1, 0, 0], "other": [1, 1, 1, 1]}
    )
    rows = summary(results)
    assert rows[0] == {
        "name": "memq",
        "questions": 4,
        "session_recall_any@10": 1.0,
        "per_category": {
            "single-hop": {"questions": 2, "session_recall_any@10": 1.0},
            "temporal": {"questions": 2, "session_recall_any@10": 1.0},
        },
    }
    assert target(rows) == {  # "other" is no baseline of the four
        "measure": "session_recall_any@10",
        "value": 1.0,
        "best_baseline": "bm25_sessions",
        "baseline": 0.75,
        "minus_best_baseline": 0.25,
        "target": 0.02,
        "met": True,
    }
    close = target(summary(_results({"memq": [1, 1, 1, 0], "dense_sessions": [1, 1, 1, 0]})))
    assert close is not None and close["minus_best_baseline"] == 0.0 and not close["met"]
    assert target(summary(_results({"memq": [1.0]}))) is None


def test_the_report_shows_the_session_figures_and_their_target() -> None:
    run = EvalRun(EvalConfig(Path("data")), [])
    run.sessions = _results({"memq": [1, 1, 0, 0], "bm25_sessions": [1, 1, 1, 0]})
    report = to_json(run)
    assert [r["name"] for r in report["sessions"]] == ["memq", "bm25_sessions"]
    assert report["sessions_published"]["whole sessions"] == PUBLISHED["whole sessions"]
    assert not targets(run)["session_recall_any@10"]["met"]
    full = dict.fromkeys(("session_recall_any@5", "session_recall_all@10", "session_ndcg@10"), 0.5)
    full.update({"evidence_recall@5_items": 0.25, "evidence_recall@10_items": 0.5})
    for rows in run.sessions.values():
        rows[:] = [QuestionResult(r.question_id, r.question_type, {**r.measures, **full}) for r in rows]
    console = Console(record=True, width=200)
    print_sessions(run, console)
    text = console.export_text()
    assert "0.603 whole sessions" in text and "0.889 keyword/name-boosted hybrid" in text
    assert "bm25_sessions" in text and "0.750" in text


def test_no_session_figures_no_table(capsys: pytest.CaptureFixture[str]) -> None:
    run = EvalRun(EvalConfig(Path("data")), [])
    print_sessions(run, Console())
    assert capsys.readouterr().out == ""
    assert "session_recall_any@10" not in targets(run)
