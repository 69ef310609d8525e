"""Tests for memq_lab.evaluation.datasets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memq_lab import eval_data
from memq_lab.evaluation.datasets import (
    Dialogue,
    detect_format,
    load_boundary_jsonl,
    load_directory,
    load_tiage,
)

# The public data sets are never in the repository: MEMQ_EVAL_DATA names their folder.
EVAL_DATA = eval_data.from_env()


def _write_tiage(path: Path, data: dict[str, list[list[str]]]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _write_jsonl(path: Path, records: list[dict[str, object]], blank_lines: bool = False) -> Path:
    sep = "\n\n" if blank_lines else "\n"
    path.write_text(sep.join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _dialogue(*lines: str) -> str:
    return "[NEWLINE]".join(lines)


# ------------------------------------------------------------------ TIAGE


def test_load_tiage(tmp_path: Path) -> None:
    path = _write_tiage(
        tmp_path / "t.json",
        {
            "7": [["hi", "-1"], ["hello", "0"], ["cats?", "1"], ["yes", "0"], ["dogs?", "1"]],
            "8": [["only", "-1"], ["two", "0"]],
        },
    )
    dialogues = load_tiage(path)
    assert [d.dialogue_id for d in dialogues] == ["7", "8"]
    first = dialogues[0]
    assert first.source == "t.json"
    assert first.utterances == [
        ("A", "hi"),
        ("B", "hello"),
        ("A", "cats?"),
        ("B", "yes"),
        ("A", "dogs?"),
    ]
    assert first.boundaries == frozenset({2, 4})
    assert first.num_segments == 3
    assert len(first) == 5
    assert dialogues[1].boundaries == frozenset()


def test_load_tiage_never_marks_index_zero(tmp_path: Path) -> None:
    path = _write_tiage(tmp_path / "t.json", {"1": [["x", "1"], ["y", "1"]]})
    assert load_tiage(path)[0].boundaries == frozenset({1})


def test_load_tiage_rejects_unknown_label(tmp_path: Path) -> None:
    path = _write_tiage(tmp_path / "t.json", {"1": [["x", "-1"], ["y", "2"]]})
    with pytest.raises(ValueError, match="unknown label"):
        load_tiage(path)


def test_load_tiage_rejects_other_json(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"a": 1}), encoding="utf-8")
    with pytest.raises(ValueError):
        load_tiage(path)


# ------------------------------------------------------------------ boundary JSONL


def test_load_boundary_jsonl(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "s.jsonl",
        [
            {
                "id": "d0",
                "dialogue": _dialogue(
                    "user: I need help: with taxes.",
                    "agent: Sure.",
                    "[BOUNDARY]",
                    "user: And my car?",
                    "agent: Ok.",
                    "[BOUNDARY]",
                    "user: Thanks",
                ),
            },
            {"id": 5, "dialogue": _dialogue("user: one", "agent: two")},
        ],
        blank_lines=True,
    )
    dialogues = load_boundary_jsonl(path)
    assert [d.dialogue_id for d in dialogues] == ["d0", "5"]
    first = dialogues[0]
    assert first.source == "s.jsonl"
    # Only the first ": " separates the speaker.
    assert first.utterances[0] == ("user", "I need help: with taxes.")
    assert [s for s, _ in first.utterances] == ["user", "agent", "user", "agent", "user"]
    assert first.boundaries == frozenset({2, 4})
    assert dialogues[1].boundaries == frozenset()


def test_load_boundary_jsonl_edge_markers(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "s.jsonl",
        [
            {
                "id": "edge",
                "dialogue": _dialogue(
                    "[BOUNDARY]",
                    "",
                    "user: a",
                    "   ",
                    "agent: b",
                    "[BOUNDARY]",
                    "[BOUNDARY]",
                    "",
                    "user: c",
                    "[BOUNDARY]",
                ),
            }
        ],
    )
    (dialogue,) = load_boundary_jsonl(path)
    assert dialogue.utterances == [("user", "a"), ("agent", "b"), ("user", "c")]
    assert dialogue.boundaries == frozenset({2})


def test_load_boundary_jsonl_rejects_malformed_line(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "s.jsonl", [{"id": 1, "dialogue": "no speaker here"}])
    with pytest.raises(ValueError, match="speaker"):
        load_boundary_jsonl(path)


def test_dialogue_validates_boundaries() -> None:
    with pytest.raises(ValueError):
        Dialogue("f", "d", [("A", "x"), ("B", "y")], frozenset({0}))
    with pytest.raises(ValueError):
        Dialogue("f", "d", [("A", "x"), ("B", "y")], frozenset({2}))


# ------------------------------------------------------------------ detection


def test_detect_format(tmp_path: Path) -> None:
    tiage = _write_tiage(tmp_path / "anything.txt", {"1": [["x", "-1"], ["y", "1"]]})
    jsonl = _write_jsonl(tmp_path / "data.json", [{"id": 1, "dialogue": "user: x"}])
    single_line_jsonl = tmp_path / "one"
    single_line_jsonl.write_text(json.dumps({"id": 1, "dialogue": "user: x"}), encoding="utf-8")
    assert detect_format(tiage) == "tiage"
    assert detect_format(jsonl) == "boundary_jsonl"
    assert detect_format(single_line_jsonl) == "boundary_jsonl"


@pytest.mark.parametrize(
    "content",
    [
        "MIT License\n\nPermission is hereby granted...\n",
        "",
        json.dumps({"a": 1}),
        json.dumps({}),
        json.dumps([1, 2, 3]),
        json.dumps({"1": [["x", "-1", "extra"]]}),
        json.dumps({"1": [["x", 1]]}),
        json.dumps({"id": 1, "dialogue": ["not", "a", "string"]}),
        json.dumps({"id": 1, "dialogue": "user: x"}) + "\n{broken",
        json.dumps({"id": 1, "dialogue": "user: x"}) + "\n" + json.dumps({"id": 2}),
        "[" * 100_000,
    ],
)
def test_detect_format_rejects_other_content(tmp_path: Path, content: str) -> None:
    path = tmp_path / "f.json"
    path.write_text(content, encoding="utf-8")
    assert detect_format(path) is None


def test_detect_format_handles_binary_missing_and_directories(tmp_path: Path) -> None:
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00\x81garbage")
    assert detect_format(binary) is None
    assert detect_format(tmp_path / "missing.json") is None
    assert detect_format(tmp_path) is None


# ------------------------------------------------------------------ directories


def test_load_directory(tmp_path: Path) -> None:
    _write_tiage(tmp_path / "b_tiage.json", {"1": [["x", "-1"], ["y", "1"]]})
    _write_jsonl(tmp_path / "a_seg.jsonl", [{"id": 1, "dialogue": "user: x[NEWLINE]agent: y"}])
    (tmp_path / "LICENSE").write_text("MIT License\n", encoding="utf-8")
    (tmp_path / "other.json").write_text(json.dumps({"x": 1}), encoding="utf-8")
    nested = tmp_path / "nested"
    nested.mkdir()
    _write_tiage(nested / "c.json", {"1": [["x", "-1"]]})

    result = load_directory(tmp_path)
    assert list(result) == ["a_seg.jsonl", "b_tiage.json"]
    assert result["b_tiage.json"][0].boundaries == frozenset({1})
    assert result["a_seg.jsonl"][0].utterances == [("user", "x"), ("agent", "y")]


def test_load_directory_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_directory(tmp_path / "nope")
    (tmp_path / "LICENSE").write_text("MIT License\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no recognised"):
        load_directory(tmp_path)
    with pytest.raises(NotADirectoryError):
        load_directory(tmp_path / "LICENSE")


# ------------------------------------------------------------------ real data


def test_real_segmentation_files() -> None:
    if EVAL_DATA is None:
        pytest.skip("MEMQ_EVAL_DATA is not set (the public evaluation data sets)")
    if not (EVAL_DATA / "segmentation").is_dir():
        pytest.skip(f"no segmentation/ in MEMQ_EVAL_DATA ({EVAL_DATA})")
    data = load_directory(EVAL_DATA / "segmentation")
    counts = {name: len(dialogues) for name, dialogues in data.items()}
    assert counts == {
        "superdialseg_validation.jsonl": 1322,
        "tiage_dev.json": 100,
        "tiage_train.json": 300,
    }
    for dialogues in data.values():
        assert all(len(d) > 1 for d in dialogues)
        assert all(0 not in d.boundaries for d in dialogues)
    # README: ~4 segments per TIAGE dialogue.
    tiage = data["tiage_train.json"] + data["tiage_dev.json"]
    mean_segments = sum(d.num_segments for d in tiage) / len(tiage)
    assert 3.0 < mean_segments < 5.0
