"""The README's "Use it from your agent" examples, run as a user would run them, against a
live server (uvicorn on loopback) with a key of a fresh tenant."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[3] / "README.md"


def examples(language: str) -> list[str]:
    blocks = re.findall(rf"```{language} agent-example\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, f"no {language} agent-example in the README"
    return blocks


@pytest.fixture
def env(served, auth, service_env, worker) -> dict[str, str]:  # a worker: the flushes wait until idle
    return {**os.environ, **service_env, "MEMQ_URL": served, "MEMQ_KEY": auth["Authorization"].removeprefix("Bearer ")}


def run_http_examples(env) -> str:
    outputs = []
    for block in examples("bash"):
        script = "\n".join(line for line in block.splitlines() if not line.startswith("export MEMQ_URL="))
        out = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script], env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        outputs.append(out.stdout)
    return "".join(outputs)


def test_the_http_examples(env):
    out = run_http_examples(env)
    assert '"status":"accepted"' in out and '"flushed":true' in out
    assert "CONVERSATION MANIFEST" in out and '"error"' not in out


def test_the_python_examples(env):
    run_http_examples(env)  # in the README's order, as a reader runs them: conv-42 exists by the MCP example
    outputs = []
    for block in examples("python"):
        out = subprocess.run([sys.executable, "-c", block], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        outputs.append(out.stdout)
    assert "## Open segment (not yet in an episode)" in outputs[0]  # the session context of the new conversation
    assert "['retrieve_memory', 'search_facts', 'recent_memory', 'manifest', 'session_context']" in outputs[1]
    assert "CONVERSATION MANIFEST" in outputs[1]
