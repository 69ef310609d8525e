"""Reading files for ``memq replay``: ids derived from what a line is, stable across runs."""

from __future__ import annotations

import json

import pytest

from memq.producer.replay import batches, derived_id
from memq.shared.errors import ValidationError


def write(tmp_path, items):
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in items) + "\n")
    return path


def ids(path, size=2, conversation_id=None):
    return [item["message_id"] for batch in batches(path, size, conversation_id) for _, item in batch]


def test_ids_are_derived_from_the_line_and_stable_across_reads(tmp_path):
    line = {"conversation_id": "c", "role": "user", "content": "hi", "timestamp": "2026-03-01T09:00:00Z"}
    path = write(tmp_path, [line, {**line, "content": "there"}, line, {**line, "message_id": "kept"}])
    first = ids(path)
    assert first == ids(path, size=3)  # the batch size does not matter
    assert first[0] != first[2]  # an identical line later is another message
    assert first[3] == "kept" and all(i.startswith("r-") for i in first[:3])
    assert first[0] == derived_id(line, 0)


def test_the_conversation_override_is_part_of_the_id(tmp_path):
    path = write(tmp_path, [{"conversation_id": "c", "role": "user", "content": "hi"}])
    assert ids(path) != ids(path, conversation_id="other")


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"role": "user"}\n\xff\xfe')
    with pytest.raises(ValidationError, match=r"x.jsonl:2: not UTF-8 text"):
        ids(path)
