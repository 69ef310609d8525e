"""``memq import`` of a file that is no memq export says so, naming the file, before it
opens anything (no services needed) and without a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from memq.cli import main


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"\xff\xd8\xff\xe0 a photo", "not UTF-8"),
        (b'{"conversation_id": "c", "role": "user", "content": "hi"}\n', "type"),
        (b"hello\n", "not valid JSON"),
    ],
)
def test_a_file_that_is_no_export_is_named_as_such(tmp_path, content, why):
    path = tmp_path / "not-an-export.jsonl"
    path.write_bytes(content)
    out = CliRunner().invoke(main, ["import", str(path)])
    assert out.exit_code == 2, out.output
    assert f"{path} is not a memq export" in out.output and why in out.output
    assert "Traceback" not in out.output
