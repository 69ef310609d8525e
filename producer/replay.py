"""Reading conversation files for ``memq replay``: JSON Lines, one message per line
with the producer's field names. Lines are validated as they are read; a bad line
stops the replay before anything from its batch is queued, naming the line.

A line without a ``message_id`` gets one derived from what it is (its conversation, role,
timestamp and content, and how many identical lines came before it in the file), so
replaying a file again, whole or after fixing a bad line, stores nothing twice."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memq.shared.errors import ValidationError

NOT_JSON_LINES = "memq replay reads JSON Lines: UTF-8 text, one JSON object (a message) per line"


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """The file's lines, numbered, each decoded on its own (so a bad byte names its line)."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8")  # a BOM is no content
            except UnicodeDecodeError:
                raise ValidationError(f"{path}:{number}: not UTF-8 text; {NOT_JSON_LINES}") from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{path}:{number}: not valid JSON ({exc.msg}); {NOT_JSON_LINES}") from None
        if not isinstance(item, dict):
            raise ValidationError(f"{path}:{number}: each line must be a JSON object; {NOT_JSON_LINES}")
        yield number, item


def derived_id(item: dict[str, Any], occurrence: int) -> str:
    """A message id from what the message is and how many identical ones came before it."""
    parts = [item.get(k) for k in ("conversation_id", "role", "timestamp", "content")]
    digest = hashlib.sha256(json.dumps([*parts, occurrence], ensure_ascii=False, default=str).encode()).hexdigest()
    return f"r-{digest[:32]}"


def batches(path: Path, size: int, conversation_id: str | None = None) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    batch: list[tuple[int, dict[str, Any]]] = []
    seen: Counter[str] = Counter()
    for number, item in read_jsonl(path):
        if conversation_id:
            item["conversation_id"] = conversation_id
        if item.get("message_id") is None:
            key = json.dumps([item.get(k) for k in ("conversation_id", "role", "timestamp", "content")], default=str)
            item["message_id"] = derived_id(item, seen[key])
            seen[key] += 1
        batch.append((number, item))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def count_lines(path: Path) -> int:
    return sum(1 for _, line in _lines(path) if line.strip())
