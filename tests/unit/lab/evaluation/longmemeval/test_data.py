"""LongMemEval files read into questions, sessions and turns, on a tiny hand-written file."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memq_lab import eval_data
from memq_lab.evaluation.longmemeval.data import TURN_SECONDS, find_file, load, parse_date, turn_key

# The public data sets are never in the repository: MEMQ_EVAL_DATA names their folder.
REAL_DATA = eval_data.from_env()


def _turn(role: str, content: str, has_answer: bool | None = None) -> dict[str, object]:
    turn: dict[str, object] = {"role": role, "content": content}
    if has_answer is not None:
        turn["has_answer"] = has_answer
    return turn


ITEMS: list[dict[str, Any]] = [
    {
        "question_id": "q-move",
        "question_type": "single-session-user",
        "question": "Where did I move?",
        "answer": "the suburbs",
        "question_date": "2023/06/13 (Tue) 15:15",
        # listed out of time order; "late" and "tie-b" as listed, "tie-a" before "tie-b" at the same minute
        "haystack_session_ids": ["late", "tie-a", "early", "tie-b"],
        "haystack_dates": [
            "2023/05/30 (Tue) 09:00",
            "2023/05/20 (Sat) 18:05",
            "2023/04/01 (Sat) 07:30",
            "2023/05/20 (Sat) 18:05",
        ],
        "haystack_sessions": [
            [_turn("user", "Hi"), _turn("assistant", "Hello")],
            [_turn("user", "I moved to the suburbs", True), _turn("assistant", "Nice", False), _turn("user", "Yes")],
            [_turn("user", "Pottery?", False), _turn("assistant", "Sure", False)],
            [_turn("user", "Tram times"), _turn("assistant", "Every 10 minutes", True)],
        ],
        "answer_session_ids": ["tie-a", "tie-b"],
    },
    {
        "question_id": "q-count_abs",
        "question_type": "multi-session",
        "question": "How many guitars do I own?",
        "answer": 3,
        "question_date": "2023/07/01 (Sat) 00:00",
        "haystack_session_ids": ["only"],
        "haystack_dates": ["2023/06/30 (Fri) 23:59"],
        "haystack_sessions": [[_turn("user", "I play drums", False)]],
        "answer_session_ids": ["only"],
    },
]


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "longmemeval_s_dev.json"
    path.write_text(json.dumps(ITEMS))
    return path


def test_dates_are_parsed_as_utc():
    assert parse_date("2023/06/13 (Tue) 15:15") == datetime(2023, 6, 13, 15, 15, tzinfo=UTC)
    assert parse_date(" 2023/06/13  (Tue) 15:15 ").tzinfo is UTC


def test_question_fields_and_session_order(data_file: Path):
    q, abs_q = load(data_file)
    assert (q.id, q.type, q.question, q.answer) == ("q-move", "single-session-user", "Where did I move?", "the suburbs")
    assert q.date == datetime(2023, 6, 13, 15, 15, tzinfo=UTC)
    # by date; "tie-a" and "tie-b" start at the same minute and keep the file's order
    assert [s.id for s in q.sessions] == ["early", "tie-a", "tie-b", "late"]
    assert [s.date for s in q.sessions] == sorted(s.date for s in q.sessions)
    assert q.answer_session_ids == ("tie-a", "tie-b")
    assert abs_q.answer == "3"  # a number in the file


def test_turns_are_stamped_from_their_session_with_an_offset(data_file: Path):
    q = load(data_file)[0]
    tie_a = q.sessions[1]
    start = datetime(2023, 5, 20, 18, 5, tzinfo=UTC)
    assert [t.at for t in tie_a.turns] == [start + timedelta(seconds=TURN_SECONDS * i) for i in range(3)]
    assert [t.index for t in tie_a.turns] == [0, 1, 2]
    assert all(t.session_id == "tie-a" for t in tie_a.turns)
    assert [t.role for t in tie_a.turns] == ["user", "assistant", "user"]
    assert tie_a.turns[0].content == "I moved to the suburbs"
    assert TURN_SECONDS == 30.0
    # another offset when asked for
    other = load(data_file, turn_seconds=5)[0].sessions[1]
    assert other.turns[2].at == start + timedelta(seconds=10)
    # all turns, session by session in date order
    assert [t.key for t in q.turns][:3] == ["early#0", "early#1", "tie-a#0"]


def test_evidence_turns_and_abstention(data_file: Path):
    q, abs_q = load(data_file)
    # has_answer true on tie-a's turn 0 and tie-b's turn 1 (of either role); false or missing is no evidence
    assert q.evidence_turns == (("tie-a", 0), ("tie-b", 1))
    assert q.evidence_keys == frozenset({"tie-a#0", "tie-b#1"})
    assert turn_key("tie-a", 0) == "tie-a#0"
    assert not q.abstention
    assert abs_q.abstention
    assert abs_q.evidence_turns == ()


def test_limit_and_types(data_file: Path):
    assert [q.id for q in load(data_file, limit=1)] == ["q-move"]
    assert [q.id for q in load(data_file, types={"multi-session"})] == ["q-count_abs"]
    assert load(data_file, types={"multi-session"}, limit=0) == []
    with pytest.raises(ValueError, match="unknown question types"):
        load(data_file, types={"multi-sessions"})


def test_mismatched_haystack_lists_are_an_error(tmp_path: Path):
    item = {**ITEMS[1], "haystack_dates": []}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([item]))
    with pytest.raises(ValueError, match="q-count_abs"):
        load(path)


def test_find_file(tmp_path: Path):
    # a file is taken as it is
    given = tmp_path / "mine.json"
    given.write_text("[]")
    assert find_file(given) == given
    # DATA/longmemeval/longmemeval_s_dev.json first, then any longmemeval_s*.json
    folder = tmp_path / "data" / "longmemeval"
    folder.mkdir(parents=True)
    (folder / "longmemeval_s_cleaned.json").write_text("[]")
    assert find_file(tmp_path / "data") == folder / "longmemeval_s_cleaned.json"
    (folder / "longmemeval_s_dev.json").write_text("[]")
    assert find_file(tmp_path / "data") == folder / "longmemeval_s_dev.json"
    # the longmemeval folder itself, and the public file as downloaded (no suffix)
    assert find_file(folder) == folder / "longmemeval_s_dev.json"
    public = tmp_path / "public"
    public.mkdir()
    (public / "longmemeval_s").write_text("[]")
    assert find_file(public) == public / "longmemeval_s"


def test_find_file_says_where_to_get_the_data(tmp_path: Path):
    with pytest.raises(FileNotFoundError) as caught:
        find_file(tmp_path)
    message = str(caught.value)
    assert "https://github.com/xiaowu0162/LongMemEval" in message and "longmemeval_s" in message
    with pytest.raises(FileNotFoundError):
        find_file(tmp_path / "missing")


@pytest.mark.skipif(REAL_DATA is None, reason="MEMQ_EVAL_DATA is not set (the public evaluation data sets)")
def test_load_real_file_smoke():
    assert REAL_DATA is not None
    if not (REAL_DATA / "longmemeval").is_dir():
        pytest.skip(f"no longmemeval/ in MEMQ_EVAL_DATA ({REAL_DATA})")
    questions = load(find_file(REAL_DATA), limit=2)
    assert len(questions) == 2
    for q in questions:
        assert q.sessions and q.date.tzinfo is UTC
        assert [s.date for s in q.sessions] == sorted(s.date for s in q.sessions)
        assert set(q.answer_session_ids) <= {s.id for s in q.sessions}
        assert q.abstention or q.evidence_turns
