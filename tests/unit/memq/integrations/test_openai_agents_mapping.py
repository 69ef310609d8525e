"""memq.integrations.openai_agents' mapping of the Agents SDK's items to memq messages and
back: which items are kept and how, their ids, the text of content parts."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agents")

from agents.memory import Session

from memq.client import Client
from memq.client.models import SaidOut
from memq.integrations.openai_agents import MemqSession, from_memq, to_memq

ITEMS: list[Any] = [
    {"role": "user", "content": "Which seat did I get?"},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "retrieve_memory",
        "arguments": '{"query":"seat"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "Seat 54"},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Seat 54, coach 7.", "annotations": []}],
    },
    {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
    {"role": "user", "content": [{"type": "input_image", "image_url": "https://example.com/x.png"}]},
    {"type": "message", "role": "assistant", "id": "__fake_id__", "content": [{"type": "refusal", "refusal": "No."}]},
]


def test_messages_calls_and_outputs_are_kept_the_rest_is_not():
    out = to_memq(ITEMS)
    assert [(m["role"], m["content"]) for m in out] == [
        ("user", "Which seat did I get?"),
        ("tool", 'retrieve_memory({"query":"seat"})'),
        ("tool", "Seat 54"),
        ("assistant", "Seat 54, coach 7."),
        ("system", "Be brief."),
        ("assistant", "No."),
    ]
    call, output = out[1], out[2]
    assert call["message_id"] == "call_1" and call["metadata"]["tool_calls"] == [
        {"name": "retrieve_memory", "arguments": '{"query":"seat"}'}
    ]
    assert output["message_id"] == "call_1:output" and output["metadata"] == {
        "call_id": "call_1",
        "tool_name": "retrieve_memory",
    }
    assert out[3]["message_id"] == "msg_1"


def test_ids_the_models_items_keep_theirs_the_others_get_new_ones():
    first, second = to_memq(ITEMS), to_memq(ITEMS)
    assert [m["message_id"] for m in first[1:4]] == [m["message_id"] for m in second[1:4]]
    assert first[0]["message_id"] != second[0]["message_id"]  # the user's input has no id of its own
    assert first[5]["message_id"] != "__fake_id__"  # the SDK's placeholder is no id


def test_memq_messages_back_as_input_items():
    at = "2026-03-02T09:00:00+00:00"
    assert [from_memq(SaidOut(role=r, speaker=None, content="x", timestamp=at)) for r in ("user", "assistant")] == [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "x"},
    ]
    with pytest.raises(ValueError):
        from_memq(SaidOut(role="tool", speaker=None, content="x", timestamp=at))


def test_the_session_is_the_sdks_session():
    with Client("http://memq.test", "k") as client:
        session = MemqSession("conv-1", client)
        assert isinstance(session, Session) and session.session_id == "conv-1"
