"""Loaders for dialogue topic-segmentation data sets with gold boundaries.

Every loader returns :class:`Dialogue` objects that share one convention:

* ``utterances`` is the ordered list of ``(speaker, text)`` pairs;
* ``boundaries`` is the set of utterance indices ``i`` (``0 < i < n``) at which a
  new topic starts, i.e. utterance ``i`` is the first one of a new segment.
  Index 0 is never a boundary (the first segment starts there implicitly), so a
  dialogue with ``b`` boundaries has ``b + 1`` segments.

Two on-disk formats are supported:

* **TIAGE** (:func:`load_tiage`): one JSON object
  ``{dialogue_id: [[utterance, label], ...]}`` with labels ``"-1"`` (first
  utterance), ``"0"`` (same topic as the previous utterance) and ``"1"`` (a new
  topic starts here). Speakers are not stored; they alternate ``"A"``/``"B"``
  starting with ``"A"``.
* **Boundary JSONL** (:func:`load_boundary_jsonl`, SuperDialseg style): one JSON
  object ``{"id": ..., "dialogue": ...}`` per line, where ``dialogue`` is lines
  joined by the literal string ``[NEWLINE]``. Each line is ``speaker: text``
  (usually ``user``/``agent``) or the marker ``[BOUNDARY]``, which stands between
  the last utterance of one topic and the first utterance of the next.

:func:`detect_format` recognises either format by content (never by file name) and
:func:`load_directory` loads every recognised file of a directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "BOUNDARY_MARKER",
    "LINE_SEPARATOR",
    "Dialogue",
    "FormatName",
    "detect_format",
    "load_boundary_jsonl",
    "load_directory",
    "load_tiage",
]

FormatName = Literal["tiage", "boundary_jsonl"]

#: Literal string that joins the lines of a boundary-JSONL ``dialogue`` field.
LINE_SEPARATOR = "[NEWLINE]"
#: Line that marks a topic change in a boundary-JSONL ``dialogue`` field.
BOUNDARY_MARKER = "[BOUNDARY]"

_TIAGE_FIRST, _TIAGE_SAME, _TIAGE_NEW = "-1", "0", "1"
_TIAGE_SPEAKERS = ("A", "B")
_SPEAKER_SEPARATOR = ": "


@dataclass(frozen=True)
class Dialogue:
    """One dialogue with its gold topic segmentation.

    Attributes:
        source: Name of the file the dialogue was loaded from (no directory part).
        dialogue_id: Identifier of the dialogue inside that file.
        utterances: Ordered ``(speaker, text)`` pairs.
        boundaries: Indices ``i`` with ``0 < i < len(utterances)`` such that a new
            topic starts at utterance ``i``.
    """

    source: str
    dialogue_id: str
    utterances: list[tuple[str, str]]
    boundaries: frozenset[int]

    def __post_init__(self) -> None:
        n = len(self.utterances)
        invalid = sorted(i for i in self.boundaries if not 0 < i < n)
        if invalid:
            raise ValueError(
                f"{self.source}:{self.dialogue_id}: boundary indices {invalid} are "
                f"outside 1..{n - 1} (dialogue has {n} utterances)"
            )

    def __len__(self) -> int:
        """Number of utterances."""
        return len(self.utterances)

    @property
    def num_segments(self) -> int:
        """Number of gold topic segments (``len(boundaries) + 1``)."""
        return len(self.boundaries) + 1


# --------------------------------------------------------------------------- TIAGE


def _is_tiage_object(data: Any) -> bool:
    """True if ``data`` is a non-empty dict whose values are lists of [str, str]."""
    if not isinstance(data, dict) or not data:
        return False
    return all(
        isinstance(turns, list)
        and all(
            isinstance(turn, list) and len(turn) == 2 and isinstance(turn[0], str) and isinstance(turn[1], str)
            for turn in turns
        )
        for turns in data.values()
    )


def load_tiage(path: str | os.PathLike[str]) -> list[Dialogue]:
    """Load a TIAGE-style JSON file.

    The file holds ``{dialogue_id: [[utterance, label], ...]}``. Label ``"1"`` at
    position ``i > 0`` makes ``i`` a boundary; ``"0"`` and ``"-1"`` do not (a
    ``"1"`` on the first utterance is ignored, since index 0 is never a
    boundary). Speakers alternate ``"A"``, ``"B"``, ``"A"``, ... Dialogues are
    returned in file order.

    Raises:
        ValueError: if the file is not valid TIAGE JSON or holds an unknown label.
    """
    path = Path(path)
    with path.open(encoding="utf-8") as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON: {exc}") from exc
    if not _is_tiage_object(data):
        raise ValueError(f"{path}: expected a JSON object {{dialogue_id: [[utterance, label], ...]}}")

    dialogues: list[Dialogue] = []
    for dialogue_id, turns in data.items():
        utterances: list[tuple[str, str]] = []
        boundaries: set[int] = set()
        for i, (text, label) in enumerate(turns):
            label = label.strip()
            if label not in (_TIAGE_FIRST, _TIAGE_SAME, _TIAGE_NEW):
                raise ValueError(
                    f"{path}: dialogue {dialogue_id!r}, utterance {i}: "
                    f"unknown label {label!r} (expected '-1', '0' or '1')"
                )
            utterances.append((_TIAGE_SPEAKERS[i % 2], text))
            if label == _TIAGE_NEW and i > 0:
                boundaries.add(i)
        dialogues.append(
            Dialogue(
                source=path.name,
                dialogue_id=str(dialogue_id),
                utterances=utterances,
                boundaries=frozenset(boundaries),
            )
        )
    return dialogues


# ------------------------------------------------------------------ boundary JSONL


def _parse_boundary_dialogue(dialogue: str, where: str) -> tuple[list[tuple[str, str]], frozenset[int]]:
    """Split a ``[NEWLINE]``-joined dialogue into utterances and boundary indices.

    Empty (whitespace-only) lines are ignored. A ``[BOUNDARY]`` line makes the
    next utterance a boundary, unless no utterance precedes it (leading markers)
    or none follows it (trailing markers); repeated markers count once.
    """
    utterances: list[tuple[str, str]] = []
    boundaries: set[int] = set()
    pending_boundary = False
    for line in dialogue.split(LINE_SEPARATOR):
        line = line.strip()
        if not line:
            continue
        if line == BOUNDARY_MARKER:
            pending_boundary = bool(utterances)
            continue
        speaker, sep, text = line.partition(_SPEAKER_SEPARATOR)
        if not sep:
            raise ValueError(f"{where}: line {line[:60]!r} is neither {BOUNDARY_MARKER} nor 'speaker: text'")
        if pending_boundary:
            boundaries.add(len(utterances))
            pending_boundary = False
        utterances.append((speaker.strip(), text.strip()))
    return utterances, frozenset(boundaries)


def _iter_jsonl_objects(text: str) -> list[tuple[int, Any]]:
    """Parse every non-blank line of ``text`` as JSON; return (line number, value)."""
    objects = []
    # Split on "\n" only: str.splitlines() would also split on characters such as
    # U+2028 that JSON allows unescaped inside strings.
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            objects.append((lineno, json.loads(line)))
    return objects


def load_boundary_jsonl(path: str | os.PathLike[str]) -> list[Dialogue]:
    """Load a SuperDialseg-style JSONL file (see the module docstring).

    Blank lines of the file are skipped. The ``id`` field becomes
    ``dialogue_id`` (converted to ``str``; the 1-based line number is used when
    ``id`` is missing). Dialogues are returned in file order.

    Raises:
        ValueError: on invalid JSON, a record without a string ``dialogue`` field,
            or a dialogue line that is neither ``[BOUNDARY]`` nor ``speaker: text``.
    """
    path = Path(path)
    dialogues: list[Dialogue] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not valid JSON: {exc}") from exc
            if not isinstance(record, dict) or not isinstance(record.get("dialogue"), str):
                raise ValueError(f"{where}: expected an object with a string 'dialogue'")
            utterances, boundaries = _parse_boundary_dialogue(record["dialogue"], where)
            dialogues.append(
                Dialogue(
                    source=path.name,
                    dialogue_id=str(record.get("id", lineno)),
                    utterances=utterances,
                    boundaries=boundaries,
                )
            )
    return dialogues


# ------------------------------------------------------------ detection/directories

_LOADERS: dict[FormatName, Callable[[str | os.PathLike[str]], list[Dialogue]]] = {
    "tiage": load_tiage,
    "boundary_jsonl": load_boundary_jsonl,
}


def detect_format(path: str | os.PathLike[str]) -> FormatName | None:
    """Guess a file's format from its content; never raises for unreadable input.

    Returns:
        ``"tiage"`` if the whole file is a non-empty JSON object whose values are
        lists of ``[str, str]`` pairs; ``"boundary_jsonl"`` if every non-blank
        line is a JSON object with a string ``"dialogue"`` field (and there is at
        least one); ``None`` for anything else (licence texts, other JSON,
        binary or unreadable files, directories).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None

    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    else:
        if _is_tiage_object(whole):
            return "tiage"

    try:
        objects = _iter_jsonl_objects(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    if objects and all(isinstance(obj, dict) and isinstance(obj.get("dialogue"), str) for _, obj in objects):
        return "boundary_jsonl"
    return None


def load_directory(path: str | os.PathLike[str]) -> dict[str, list[Dialogue]]:
    """Load every recognised data file directly inside ``path`` (no recursion).

    Returns:
        ``{file name: dialogues}``, with keys in sorted order. Files that
        :func:`detect_format` does not recognise (e.g. ``LICENSE_*``) are skipped.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        NotADirectoryError: if ``path`` exists but is not a directory.
        ValueError: if the directory contains no recognised data file.
    """
    directory = Path(path)
    if not directory.exists():
        raise FileNotFoundError(
            f"segmentation data directory {str(directory)!r} does not exist; pass the "
            f"directory that holds the TIAGE / SuperDialseg files"
        )
    if not directory.is_dir():
        raise NotADirectoryError(f"{str(directory)!r} is not a directory")

    result: dict[str, list[Dialogue]] = {}
    for file in sorted(directory.iterdir(), key=lambda p: p.name):
        if not file.is_file():
            continue
        fmt = detect_format(file)
        if fmt is not None:
            result[file.name] = _LOADERS[fmt](file)
    if not result:
        raise ValueError(
            f"no recognised segmentation data file in {str(directory)!r}: expected "
            f"TIAGE JSON ({{id: [[utterance, label], ...]}}) or JSONL records with a "
            f"'dialogue' string"
        )
    return result
