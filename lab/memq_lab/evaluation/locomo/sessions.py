"""The field's session-level measures on LoCoMo: each LoCoMo question put in LongMemEval's
shape (``longmemeval.data.Question``), so that LongMemEval's four session baselines
(``longmemeval.baselines.RANKERS``) and its measures (``longmemeval.measures``) run on the
replayed LoCoMo conversations unchanged, next to memq's ranked episodes.

The adapter (``ConversationSessions``): a LoCoMo conversation's session N is the
LongMemEval session ``session_N`` (its start its date), and a turn is a
``longmemeval.data.Turn`` whose index is its position among the session's turns (the
turns ``locomo.data`` keeps), so that its key is ``session_N#i``; ``keys`` maps each dia
id to that key. A turn's ``content`` is the text memq was sent (caption included), which
is what memq embeds a message by (``indexed_text``) and what ``Haystack`` embeds a turn
by; its ``role`` is the speaker's name, so that a whole session reads as ``Name: text``
lines (``session_document``), as the LoCoMo session units show them. A question's
evidence turns are marked ``has_answer`` and its ``answer_session_ids`` are the sessions
they are in.

For each system, per question: the session ranking's ``recall_any`` / ``recall_all`` /
NDCG at 5 and 10 (``measures.ranking_measures``), and evidence recall at the top k
returned items (``evidence_recall@{k}_items``): the share of the evidence turns held by
the first k items (a whole session or a single turn for a baseline; for memq an episode,
holding the messages it shows, its session the one most of them come from).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from memq_lab.evaluation.locomo.data import CATEGORIES, LocomoConversation
from memq_lab.evaluation.locomo.data import Question as LocomoQuestion
from memq_lab.evaluation.longmemeval.baselines import BASELINES
from memq_lab.evaluation.longmemeval.data import Question, Session, Turn
from memq_lab.evaluation.longmemeval.measures import (
    KS,
    QuestionResult,
    Returned,
    ReturnedItem,
    aggregate,
    evidence_recall_at_items,
    items_measure,
    ranking_measures,
    session_ranking,
)
from memq_lab.evaluation.longmemeval.runner import MEMQ

SYSTEMS = (MEMQ, *BASELINES)
# the table's columns, in order (``ranking_measures`` also gives recall_all@5 and ndcg@5: in the JSON)
SHOWN = (
    "session_recall_any@5",
    "session_recall_any@10",
    "session_recall_all@10",
    "session_ndcg@10",
    *(f"evidence_recall@{k}_items" for k in KS),
)
# LoCoMo's published no-LLM session recall@10, on all ten conversations (ours: the two of the dev file)
PUBLISHED = {"whole sessions": 0.603, "keyword/name-boosted hybrid": 0.889}
TARGET_MEASURE = "session_recall_any@10"
TARGET_MARGIN = 0.02  # memq at least this far above the best of the four baselines


def session_id(number: int) -> str:
    """LoCoMo's session N as a LongMemEval session id."""
    return f"session_{number}"


@dataclass(frozen=True)
class ConversationSessions:
    """One LoCoMo conversation as LongMemEval sessions (no turn marked yet), with each dia
    id's turn key and session id; built once and shared by the conversation's questions."""

    conversation: str
    sessions: tuple[Session, ...]
    keys: Mapping[str, str]  # dia id -> turn key
    session_of: Mapping[str, str]  # dia id -> session id

    @classmethod
    def of(cls, conv: LocomoConversation) -> ConversationSessions:
        by_number: dict[int, list[Turn]] = {}
        keys: dict[str, str] = {}
        session_of: dict[str, str] = {}
        for t in conv.turns:
            turns = by_number.setdefault(t.session, [])
            turn = Turn(session_id(t.session), len(turns), t.speaker, t.text, False, t.at)
            turns.append(turn)
            keys[t.dia_id] = turn.key
            session_of[t.dia_id] = turn.session_id
        sessions = tuple(
            Session(session_id(n), conv.sessions.get(n, turns[0].at), tuple(turns))
            for n, turns in sorted(by_number.items())
        )
        return cls(conv.sample_id, sessions, keys, session_of)

    def question(self, q: LocomoQuestion, asked_at: datetime) -> Question:
        """``q`` in LongMemEval's shape: its evidence turns marked ``has_answer``, the
        sessions holding them as ``answer_session_ids`` (in session order), its category's
        name as its type, asked at ``asked_at``."""
        evidence = {self.keys[e] for e in q.evidence}
        sessions = tuple(
            replace(s, turns=tuple(replace(t, has_answer=True) if t.key in evidence else t for t in s.turns))
            for s in self.sessions
        )
        answer = tuple(s.id for s in sessions if any(t.has_answer for t in s.turns))
        category = CATEGORIES.get(q.category, str(q.category))
        return Question(q.id, category, q.question, q.answer, asked_at, sessions, answer)

    def episode_item(self, dia_ids: Sequence[str]) -> ReturnedItem:
        """A returned episode showing the turns ``dia_ids`` (in its order) as an item: those
        turns' keys, and the session most of them come from (the earliest on a tie; no
        turn known: no session, ``""``)."""
        known = [d for d in dia_ids if d in self.keys]
        counts = Counter(self.session_of[d] for d in known)
        session = max(counts, key=lambda s: counts[s]) if counts else ""  # max keeps the first of a tie
        return ReturnedItem(session, tuple(self.keys[d] for d in known))


def episode_items(
    records: Sequence[Mapping[str, Any]], sessions: ConversationSessions, dia_by_seq: Mapping[int, str]
) -> list[ReturnedItem]:
    """memq's returned episodes (``RetrievalResult.records``, best first) as items: each
    holding the messages it shows, by their dia ids (``dia_by_seq``: a stored message's
    ``seq`` in the conversation -> its dia id)."""
    return [
        sessions.episode_item([dia_by_seq[m["seq"]] for m in r["messages"] if m["seq"] in dia_by_seq]) for r in records
    ]


def question_measures(items: Sequence[Returned], question: Question) -> dict[str, float]:
    """One system's figures for one question from its ranked items: the session ranking's
    measures at ``KS`` and evidence recall at the top k items."""
    out = ranking_measures(session_ranking(items), question.answer_session_ids, "session")
    for k in KS:
        out[items_measure(k)] = evidence_recall_at_items(items, question.evidence_keys, k)
    return out


def summary(results: Mapping[str, Sequence[QuestionResult]]) -> list[dict[str, Any]]:
    """One object per system, in ``results``' order: its ``name``, the number of questions
    and the mean of each figure, overall and per LoCoMo category (``measures.aggregate``)."""
    out: list[dict[str, Any]] = []
    for name, rows in results.items():
        agg = aggregate(rows)
        out.append(
            {
                "name": name,
                "questions": agg.questions,
                **{m: round(v, 4) for m, v in agg.overall.items()},
                "per_category": {
                    c: {"questions": agg.type_counts[c], **{m: round(v, 4) for m, v in figures.items()}}
                    for c, figures in agg.per_type.items()
                },
            }
        )
    return out


def target(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """memq's ``TARGET_MEASURE`` at least ``TARGET_MARGIN`` above the best baseline's
    (``rows``: ``summary``'s objects); None without memq or any baseline."""
    by_name = {r["name"]: r for r in rows if TARGET_MEASURE in r}
    baselines = [n for n in BASELINES if n in by_name]
    if MEMQ not in by_name or not baselines:
        return None
    best = max(baselines, key=lambda n: by_name[n][TARGET_MEASURE])  # the first of a tie
    value, base = by_name[MEMQ][TARGET_MEASURE], by_name[best][TARGET_MEASURE]
    gain = value - base
    return {
        "measure": TARGET_MEASURE,
        "value": value,
        "best_baseline": best,
        "baseline": base,
        "minus_best_baseline": round(gain, 4),
        "target": TARGET_MARGIN,
        "met": gain >= TARGET_MARGIN - 1e-9,
    }
