"""The producer's command line on real Redis: send, replay with a bad line, status."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from drains import publish_drains_with

from memq.cli import main


class TenantRunner(CliRunner):
    """Runs memq commands scoped to the test's tenant (the process settings stay untouched:
    the in-process worker shares them)."""

    def __init__(self, tenant: str):
        super().__init__()
        self.tenant = tenant

    def invoke(self, cli, args, **kw):  # type: ignore[override]  # every call here passes args
        return super().invoke(cli, [*args, "--tenant", self.tenant], **kw)


@pytest.fixture
def cli_env(producer):
    return TenantRunner(producer.settings.tenant)


def test_send_then_status(cli_env):
    out = cli_env.invoke(main, ["send", "cli-conv", "user", "hello from the command line", "--message-id", "c-1"])
    assert out.exit_code == 0 and out.output.startswith("accepted message_id=c-1")
    again = cli_env.invoke(main, ["send", "cli-conv", "user", "hello from the command line", "--message-id", "c-1"])
    assert again.output.startswith("duplicate")
    status = cli_env.invoke(main, ["status", "cli-conv"])
    assert "messages_accepted=1" in status.output


def test_send_refuses_bad_input_with_exit_2(cli_env):
    out = cli_env.invoke(main, ["send", "cli-conv", "robot", "hi"])
    assert out.exit_code == 2 and "role: 'robot' is not one of user, assistant, system, tool" in out.output


def test_replay_reports_the_bad_line_and_keeps_earlier_batches(cli_env, tmp_path, producer):
    lines = [json.dumps({"conversation_id": "file-conv", "role": "user", "content": f"line {i}"}) for i in range(1, 5)]
    lines.insert(3, json.dumps({"conversation_id": "file-conv", "role": "user", "content": ""}))
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = cli_env.invoke(main, ["replay", str(path), "--batch-size", "2"])
    assert out.exit_code == 2
    assert f"{path}:4: message #1: content: is empty" in out.output
    assert producer.status("file-conv").accepted == 2  # the first batch (lines 1-2) was queued
    assert "Lines 1-2 were queued" in out.output and "lines 3-4 (this line's batch) and the rest were not" in out.output


def test_a_fixed_file_without_ids_replayed_again_stores_nothing_twice(cli_env, tmp_path, producer):
    """105 lines without message ids, two of them identical; line 103 refused after 100 were
    queued. Fixed and replayed whole: 105 messages, each once."""
    lines = [
        {
            "conversation_id": "rerun",
            "role": "user",
            "content": f"line {i}",
            "timestamp": f"2026-03-01T09:{i // 60:02d}:{i % 60:02d}Z",
        }
        for i in range(105)
    ]
    lines[50] = dict(lines[49])  # the same line twice: two messages, told apart by their place
    lines[102]["role"] = "robot"
    path = tmp_path / "rerun.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = cli_env.invoke(main, ["replay", str(path)])
    assert out.exit_code == 2 and f"{path}:103:" in out.output and "Lines 1-100 were queued" in out.output
    assert producer.status("rerun").accepted == 100

    lines[102]["role"] = "user"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    again = cli_env.invoke(main, ["replay", str(path)])
    assert again.exit_code == 0 and "accepted=5" in again.output and "duplicate=100" in again.output, again.output
    assert producer.status("rerun").accepted == 105


def test_a_file_that_is_not_json_lines_is_named_as_such(cli_env, tmp_path):
    binary = tmp_path / "photo.jsonl"
    binary.write_bytes(b"\xff\xd8\xff\xe0 not text")
    out = cli_env.invoke(main, ["replay", str(binary)])
    assert out.exit_code == 2 and "not UTF-8 text; memq replay reads JSON Lines" in out.output
    assert "Traceback" not in out.output


def test_replay_of_a_good_file(cli_env, tmp_path, producer):
    path = tmp_path / "ok.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"conversation_id": "ok-conv", "role": "user", "content": f"line {i}", "message_id": f"x{i}"})
            for i in range(7)
        )
    )
    out = cli_env.invoke(main, ["replay", str(path), "--batch-size", "3"])
    assert out.exit_code == 0 and "accepted=7" in out.output and "conversations=1" in out.output
    out = cli_env.invoke(main, ["replay", str(path)])
    assert "duplicate=7" in out.output


def test_status_without_a_conversation_shows_the_whole_mailbox(cli_env, producer):
    publish_drains_with(producer, lambda t, c: None)
    producer.add_message("overview-conv", "user", "a message for the overview")
    out = CliRunner().invoke(main, ["status"])
    assert out.exit_code == 0, out.output
    fields = dict(part.split("=") for part in out.output.split()[:6])
    assert int(fields["active_conversations"]) >= 1 and int(fields["drains_queued"]) >= 1
