"""LoCoMo conversations as memq sees them: a stream of turns with real times, and the
questions with the turns that hold their evidence.

Each session's turns are stamped with the session's date plus ``turn_seconds`` per turn,
so the gaps between sessions are real time gaps. A turn with an image carries its
caption as text: ``[shares a photo of ...]``. Evidence ids are normalised ("D8:6; D9:17"
is two ids, "D:11:26" is "D11:26", "D30:05" is "D30:5"); ids naming no turn are dropped
and counted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    index: int  # position in the whole conversation
    speaker: str
    text: str  # as sent to memq, caption included
    at: datetime


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]  # dia ids of turns in this conversation


@dataclass
class LocomoConversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]
    dropped_evidence: int = 0
    sessions: dict[int, datetime] = field(default_factory=dict)

    @property
    def ends_at(self) -> datetime:
        return self.turns[-1].at

    def turn(self, dia_id: str) -> Turn:
        return self._by_id[dia_id]

    @property
    def _by_id(self) -> dict[str, Turn]:
        return {t.dia_id: t for t in self.turns}


def render_text(raw: dict[str, Any]) -> str:
    text = " ".join(str(raw.get("text") or "").split())
    caption = raw.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        shared = f"[shares {' '.join(caption.split())}]"
        text = f"{text} {shared}" if text else shared
    return text


def normalise_evidence(raw: Any) -> list[str]:
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        for part in re.split(r"[;,]", str(item)):
            m = re.fullmatch(r"\s*D\s*:?\s*(\d+)\s*:\s*(\d+)\s*", part)
            if m:
                out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return list(dict.fromkeys(out))


def parse_session_time(text: str) -> datetime:
    return datetime.strptime(" ".join(text.split()), _DATE_FORMAT).replace(tzinfo=UTC)


def _conversation(item: dict[str, Any], turn_seconds: float) -> LocomoConversation:
    conv = item["conversation"]
    sessions: dict[int, datetime] = {}
    turns: list[Turn] = []
    numbers = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
    for n in numbers:
        raw_turns = conv.get(f"session_{n}")
        stamp = conv.get(f"session_{n}_date_time")
        if not isinstance(raw_turns, list) or not raw_turns or not stamp:
            continue  # a date with no session content
        start = parse_session_time(stamp)
        sessions[n] = start
        for i, raw in enumerate(raw_turns):
            text = render_text(raw)
            if not text:
                continue
            dia = normalise_evidence(raw.get("dia_id"))
            turns.append(
                Turn(
                    dia[0] if dia else f"D{n}:{i + 1}",
                    n,
                    len(turns),
                    str(raw.get("speaker") or "?"),
                    text,
                    start + timedelta(seconds=turn_seconds * i),
                )
            )
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    dropped = 0
    for i, q in enumerate(item.get("qa", [])):
        evidence = normalise_evidence(q.get("evidence", []))
        kept = tuple(e for e in evidence if e in known)
        dropped += len(evidence) - len(kept)
        answer = q.get("answer", q.get("adversarial_answer", ""))
        questions.append(
            Question(
                f"{item['sample_id']}-q{i}", str(q.get("question", "")), str(answer), int(q.get("category", 0)), kept
            )
        )
    return LocomoConversation(
        item["sample_id"], (conv.get("speaker_a", "A"), conv.get("speaker_b", "B")), turns, questions, dropped, sessions
    )


def is_locomo(path: Path) -> bool:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(x, dict) and "conversation" in x and "qa" in x for x in data)
    )


def load_locomo(path: Path, turn_seconds: float = 30.0) -> list[LocomoConversation]:
    return [_conversation(item, turn_seconds) for item in json.loads(path.read_text())]


def find_files(data: Path) -> list[Path]:
    """Every LoCoMo-format JSON file in DATA/locomo (or DATA itself)."""
    folder = data / "locomo" if (data / "locomo").is_dir() else data
    return sorted(p for p in folder.glob("*.json") if is_locomo(p))
