"""Real dialogue text for the benchmarks: LoCoMo turns, TIAGE and SuperDialseg utterances
from the evaluation data when it is there, the shipped sample conversation always; real
questions (LoCoMo's and the demo's). Never random strings: tokenising, embedding and
lexical search cost what they cost on real text."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memq.cli.demo import QUESTIONS, SAMPLE


@dataclass(frozen=True)
class Utterance:
    role: str  # user / assistant
    text: str


@dataclass(frozen=True)
class Stream:
    """One conversation's messages in order, as a producer would send them."""

    name: str
    messages: tuple[tuple[str, str, datetime], ...]  # (role, content, timestamp)


def _sample_stream() -> Stream:
    from memq.producer.replay import read_jsonl

    rows = [item for _, item in read_jsonl(SAMPLE)]
    return Stream(
        "sample", tuple((r["role"], r["content"], datetime.fromisoformat(r["timestamp"])) for r in rows if r["content"])
    )


@functools.cache
def streams(data_dir: Path | None) -> tuple[Stream, ...]:
    """Whole conversations: the sample, then every LoCoMo conversation (speaker A as the user)."""
    found = [_sample_stream()]
    if data_dir is not None:
        from memq_lab.evaluation.locomo.data import find_files, load_locomo

        for path in find_files(data_dir) if data_dir.is_dir() else []:
            for conv in load_locomo(path):
                first = conv.speakers[0]
                found.append(
                    Stream(
                        conv.sample_id,
                        tuple(("user" if t.speaker == first else "assistant", t.text, t.at) for t in conv.turns),
                    )
                )
    return tuple(found)


@functools.cache
def utterances(data_dir: Path | None) -> tuple[Utterance, ...]:
    """Every distinct utterance of the streams and of the segmentation sets (TIAGE,
    SuperDialseg), in a fixed order."""
    seen: dict[str, Utterance] = {}
    for stream in streams(data_dir):
        for role, text, _ in stream.messages:
            seen.setdefault(text, Utterance(role, text))
    segmentation = data_dir / "segmentation" if data_dir is not None else None
    if segmentation is not None and segmentation.is_dir():
        from memq_lab.evaluation.datasets import load_directory

        for dialogues in load_directory(segmentation).values():
            for dialogue in dialogues:
                for i, (_, text) in enumerate(dialogue.utterances):
                    if text.strip():
                        seen.setdefault(text, Utterance("user" if i % 2 == 0 else "assistant", text))
    return tuple(seen.values())


@functools.cache
def questions(data_dir: Path | None) -> tuple[str, ...]:
    """Real questions: LoCoMo's (categories 1-4) and the demo's."""
    found = list(QUESTIONS)
    if data_dir is not None and data_dir.is_dir():
        from memq_lab.evaluation.locomo.data import find_files, load_locomo

        for path in find_files(data_dir):
            for conv in load_locomo(path):
                found += [q.question for q in conv.questions if q.category in (1, 2, 3, 4)]
    return tuple(dict.fromkeys(found))
