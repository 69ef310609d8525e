"""The framework-free part of memq.integrations: message ids, the history read back from a
session context, the text of the memory tools, documents of retrieved episodes; and the
thin install: importing memq.integrations loads no framework."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from memq.client.models import ContextOut, FactSearchOut, MemoryOut
from memq.integrations._common import document_parts, facts_text, history, message_id

FRAMEWORKS = ("langchain_core", "langgraph", "agents", "openai")


def said(role: str, content: str) -> dict:
    return {"role": role, "speaker": None, "content": content, "timestamp": "2026-03-02T09:00:00+00:00"}


def context(continuity: list[dict], open_segment: list[dict]) -> ContextOut:
    return ContextOut.model_validate(
        {
            "conversation_id": "c",
            "timezone": "UTC",
            "total_episodes": 1,
            "summaries": [],
            "facts": [],
            "chapters": [],
            "continuity": continuity,
            "gap_seconds": None,
            "open_segment": open_segment,
            "left_out": {},
            "tokens": 10,
            "text": "",
        }
    )


def test_a_given_id_is_kept_when_memq_takes_it_else_digested_the_same_way_each_time():
    assert message_id("msg_abc-1") == "msg_abc-1"
    assert message_id(None) is None and message_id("") is None and message_id(7) is None
    long = "x" * 201
    assert message_id(long) == message_id(long) != long and len(message_id(long) or "") <= 200
    assert (message_id("naïve") or "").startswith("sha256:")
    assert (message_id("a\nb") or "").startswith("sha256:")  # not printable


def test_the_history_is_the_stored_tail_then_the_open_segment_without_tool_messages():
    read = context(
        [said("user", "one"), said("tool", "search(x)"), said("assistant", "two")],
        [said("system", "three"), said("user", "four")],
    )
    assert [(m.role, m.content) for m in history(read)] == [
        ("user", "one"),
        ("assistant", "two"),
        ("system", "three"),
        ("user", "four"),
    ]


def test_facts_read_as_lines_and_an_empty_search_says_so():
    fact: dict[str, Any] = {
        "id": "f1",
        "conversation_id": "c",
        "category": "preference",
        "content": "Likes  window seats",
        "valid_at": "2026-03-02T09:00:00+00:00",
        "invalid_at": None,
        "created_at": "2026-03-02T09:00:00+00:00",
        "expired_at": None,
        "superseded_by": None,
        "source_episode_ids": [],
        "reinforcements": 0,
        "last_reinforced_at": None,
        "active": True,
        "scores": {"rrf": 0.5},
    }
    found = FactSearchOut.model_validate({"query": "seat", "facts": [fact]})
    assert facts_text(found) == "- Likes window seats (preference, since 2026-03-02)"
    assert facts_text(FactSearchOut(query="seat", facts=[])) == "No facts match “seat”."


def test_a_retrieved_episode_as_a_document():
    memory = MemoryOut.model_validate(
        {
            "id": "e1",
            "conversation_id": "c",
            "rank": 1,
            "title": "Train to Hamburg",
            "summary": "Booked the 9:40.",
            "summary_source": "extractive",
            "start_at": "2026-03-02T09:00:00+00:00",
            "end_at": "2026-03-02T09:05:00+00:00",
            "surprise": 0.1,
            "message_count": 2,
            "scores": {
                "lexical_rank": 1,
                "vector_rank": 2,
                "message_lexical_rank": None,
                "message_vector_rank": None,
                "rrf": 0.03,
                "retrievability": 1.0,
                "time_boost": 1.0,
                "final": 0.42,
            },
            "summary_shown": True,
            "messages": [
                {
                    "seq": 1,
                    "role": "assistant",
                    "speaker": None,
                    "content": "Seat 54.",
                    "timestamp": "2026-03-02T09:01:00+00:00",
                    "relevance": 0.9,
                    "vector_rank": 1,
                    "lexical_rank": 1,
                    "speaker_named": False,
                }
            ],
        }
    )
    text, metadata = document_parts(memory)
    assert text == "Train to Hamburg\nBooked the 9:40.\nassistant: Seat 54."
    assert metadata["episode_id"] == "e1" and metadata["score"] == 0.42 and metadata["scores"]["lexical_rank"] == 1
    assert metadata["start_at"].startswith("2026-03-02") and metadata["title"] == "Train to Hamburg"


def test_importing_memq_integrations_or_the_client_loads_no_framework():
    code = "import sys, memq.integrations, memq.client; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = {name.split(".")[0] for name in out.stdout.split()}
    assert not loaded & set(FRAMEWORKS), sorted(loaded & set(FRAMEWORKS))
