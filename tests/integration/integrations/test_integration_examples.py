"""examples/langchain_memory.py and examples/openai_agents_session.py run as a user runs them
(MEMQ_URL and MEMQ_KEY set, no LLM) against a live API with a worker, and show what they say."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def run(example: str, url: str, key: str) -> str:
    env = {**os.environ, "MEMQ_URL": url, "MEMQ_KEY": key, "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / example)], env=env, capture_output=True, text=True, timeout=180
    )
    print(out.stdout)  # shown when a test fails
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_the_langchain_example(memq_url, memq_key, worker):
    pytest.importorskip("langgraph")
    out = run("langchain_memory.py", memq_url, memq_key)
    history, rest = out.split("## waiting for a worker", 1)
    assert "human: Can you book the 9:40 train" in history and "ai: Booked: ICE 1004" in history
    assert "book_train" not in history  # tool activity is stored, not read back
    retriever, rest = rest.split("## tools", 1)
    assert "score" in retriever and "seat 54" in retriever
    tools, graph = rest.split("## a LangGraph graph", 1)
    assert "retrieve_memory ->" in tools and "54" in tools and "CONVERSATION MANIFEST" in tools
    assert "system: What you remember from earlier conversation" in graph
    assert "ai: (echo) Which coach am I in?" in graph
    assert out.rstrip().endswith("0 messages left")


def test_the_openai_agents_example(memq_url, memq_key, worker):
    pytest.importorskip("agents")
    out = run("openai_agents_session.py", memq_url, memq_key)
    session, tools = out.split("## waiting for a worker", 1)
    assert "{'role': 'user', 'content': 'Can you book the 9:40 train to Hamburg for Friday?'}" in session
    assert "{'role': 'assistant', 'content': 'Booked: ICE 1004, coach 7, seat 54.'}" in session
    assert "function_call" not in session
    assert "retrieve_memory ->" in tools and "54" in tools and "CONVERSATION MANIFEST" in tools
    assert out.rstrip().endswith("0 items left")
