"""LongMemEval_S questions as memq sees them: each question's haystack is one user's chat
history, a list of sessions with real start times, and the turns that hold its evidence.

The dataset lists a haystack's sessions in no particular time order (and two sessions may
start at the same minute), so sessions are sorted by date, ties kept in list order, to be
replayed as one stream. Each turn is stamped with its session's start plus
``TURN_SECONDS`` per turn index, so that the gaps between sessions are real time gaps.
The dataset's times carry no zone: they are read as UTC. A turn is named for turn-level
measures by ``turn_key(session_id, index)``, its index being its position in its session.

Abstention questions (ids ending in ``_abs``) name evidence that does not exist; the
retrieval measures leave them out (``Question.abstention``).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
TURN_SECONDS = 30.0  # a turn's offset from its session's start, per turn index
DEV_FILE = "longmemeval_s_dev.json"
SOURCE = "https://github.com/xiaowu0162/LongMemEval"
_DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


def turn_key(session_id: str, index: int) -> str:
    """A turn's id for turn-level measures: its session's id and its index in the session."""
    return f"{session_id}#{index}"


@dataclass(frozen=True)
class Turn:
    session_id: str
    index: int  # position in its session
    role: str  # user | assistant
    content: str
    has_answer: bool
    at: datetime

    @property
    def key(self) -> str:
        return turn_key(self.session_id, self.index)


@dataclass(frozen=True)
class Session:
    id: str
    date: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    id: str
    type: str
    question: str
    answer: str
    date: datetime
    sessions: tuple[Session, ...]  # by date, ties in the dataset's order
    answer_session_ids: tuple[str, ...]

    @property
    def abstention(self) -> bool:
        return self.id.endswith("_abs")

    @property
    def evidence_turns(self) -> tuple[tuple[str, int], ...]:
        """``(session_id, index)`` of every turn marked ``has_answer``, in haystack order."""
        return tuple((t.session_id, t.index) for s in self.sessions for t in s.turns if t.has_answer)

    @property
    def evidence_keys(self) -> frozenset[str]:
        """``evidence_turns`` as ``turn_key`` ids."""
        return frozenset(turn_key(s, i) for s, i in self.evidence_turns)

    @property
    def turns(self) -> tuple[Turn, ...]:
        """Every turn of the haystack, session by session in date order."""
        return tuple(t for s in self.sessions for t in s.turns)


def parse_date(text: str) -> datetime:
    """``"2023/06/13 (Tue) 15:15"`` as a UTC datetime."""
    return datetime.strptime(" ".join(text.split()), _DATE_FORMAT).replace(tzinfo=UTC)


def _session(session_id: str, date: str, raw_turns: list[dict[str, Any]], turn_seconds: float) -> Session:
    start = parse_date(date)
    turns = tuple(
        Turn(
            session_id,
            i,
            str(raw.get("role", "")),
            str(raw.get("content", "")),
            bool(raw.get("has_answer", False)),
            start + timedelta(seconds=turn_seconds * i),
        )
        for i, raw in enumerate(raw_turns)
    )
    return Session(session_id, start, turns)


def _question(item: dict[str, Any], turn_seconds: float) -> Question:
    ids, dates, raw = item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"]
    if not len(ids) == len(dates) == len(raw):
        raise ValueError(
            f"question {item['question_id']}: {len(ids)} session ids, {len(dates)} dates, {len(raw)} sessions"
        )
    sessions = [_session(str(s), d, turns, turn_seconds) for s, d, turns in zip(ids, dates, raw)]
    sessions.sort(key=lambda s: s.date)  # stable: ties keep the dataset's order
    return Question(
        str(item["question_id"]),
        str(item["question_type"]),
        str(item["question"]),
        str(item["answer"]),  # a few answers are numbers
        parse_date(item["question_date"]),
        tuple(sessions),
        tuple(str(s) for s in item.get("answer_session_ids", [])),
    )


def load(
    path: Path, limit: int | None = None, types: Collection[str] | None = None, turn_seconds: float = TURN_SECONDS
) -> list[Question]:
    """The questions of a LongMemEval file in file order: only those of ``types`` when given,
    then the first ``limit`` of them."""
    items = json.loads(Path(path).read_text())
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a JSON list of LongMemEval questions")
    if types is not None:
        unknown = set(types) - set(QUESTION_TYPES)
        if unknown:
            raise ValueError(f"unknown question types {sorted(unknown)}; known: {', '.join(QUESTION_TYPES)}")
        items = [x for x in items if x.get("question_type") in types]
    if limit is not None:
        items = items[:limit]
    return [_question(x, turn_seconds) for x in items]


def find_file(data: Path) -> Path:
    """The LongMemEval file: ``data`` itself when it is a file, else
    ``data/longmemeval/longmemeval_s_dev.json``, else a ``longmemeval_s*.json`` file (or the
    public ``longmemeval_s``) in ``data/longmemeval`` or ``data``."""
    data = Path(data)
    if data.is_file():
        return data
    folders = [f for f in (data / "longmemeval", data) if f.is_dir()]
    for folder in folders:
        if (folder / DEV_FILE).is_file():
            return folder / DEV_FILE
    for folder in folders:
        found = sorted(p for p in folder.glob("longmemeval_s*.json") if p.is_file())
        if (folder / "longmemeval_s").is_file():
            found.append(folder / "longmemeval_s")
        if found:
            return found[0]
    raise FileNotFoundError(
        f"no LongMemEval data at {data}: expected a JSON file, or a folder holding "
        f"longmemeval/{DEV_FILE} or a longmemeval_s*.json file. LongMemEval_S is public (MIT): "
        f"get the file longmemeval_s from {SOURCE} (see its README for the download) and pass "
        "its path or its folder."
    )
