"""Reading conversation files for ``memq replay``: JSON Lines, one message per line
with the producer's field names. Lines are validated as they are read; a bad line
stops the replay before anything from its batch is queued, naming the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memq.shared.errors import ValidationError


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValidationError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(item, dict):
                raise ValidationError(f"{path}:{number}: each line must be a JSON object")
            yield number, item


def batches(path: Path, size: int, conversation_id: str | None = None) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    batch: list[tuple[int, dict[str, Any]]] = []
    for number, item in read_jsonl(path):
        if conversation_id:
            item["conversation_id"] = conversation_id
        batch.append((number, item))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def count_lines(path: Path) -> int:
    with path.open(encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())
