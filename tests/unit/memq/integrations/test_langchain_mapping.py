"""memq.integrations.langchain's mapping of LangChain messages to memq's and back: roles,
names, tool calls, ids (given, digested, or made once and written back)."""

from __future__ import annotations

import json

import httpx
import pytest

pytest.importorskip("langchain_core")

from langchain_core.messages import (
    AIMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from memq.client import Client
from memq.client.models import SaidOut
from memq.integrations.langchain import MemqChatMessageHistory, from_memq, to_memq


def test_roles_names_and_given_ids():
    assert to_memq(HumanMessage("Hi", id="m1", name="Lena")) == {
        "role": "user",
        "content": "Hi",
        "message_id": "m1",
        "metadata": {"name": "Lena"},
    }
    assert to_memq(AIMessage("Hello", id="m2")) == {"role": "assistant", "content": "Hello", "message_id": "m2"}
    assert to_memq(SystemMessage("Be brief", id="m3"))["role"] == "system"  # type: ignore[index]
    assert to_memq(ChatMessage(content="Yo", role="human", id="m4"))["role"] == "user"  # type: ignore[index]
    with pytest.raises(ValueError, match="memq stores"):
        to_memq(ChatMessage(content="?", role="critic", id="m5"))
    with pytest.raises(ValueError, match="memq stores"):
        to_memq(RemoveMessage(id="m6"))


def test_tool_calls_and_results_are_tool_messages_with_their_tools():
    call = AIMessage("", id="a1", tool_calls=[{"name": "search", "args": {"q": "seat"}, "id": "call-1"}])
    assert to_memq(call) == {
        "role": "tool",
        "content": 'search({"q": "seat"})',
        "message_id": "a1",
        "metadata": {"tool_calls": [{"name": "search", "arguments": '{"q": "seat"}', "id": "call-1"}]},
    }
    said = AIMessage("Let me look.", id="a2", tool_calls=[{"name": "search", "args": {}, "id": "call-2"}])
    assert to_memq(said)["role"] == "assistant"  # type: ignore[index]  # it said something: an assistant message
    result = to_memq(ToolMessage("Seat 54", tool_call_id="call-1", name="search", id="t1"))
    assert result == {
        "role": "tool",
        "content": "Seat 54",
        "message_id": "t1",
        "metadata": {"tool_call_id": "call-1", "tool_name": "search"},
    }
    assert to_memq(ToolMessage("", tool_call_id="call-3", id="t2"))["content"] == "(no output)"  # type: ignore[index]
    assert to_memq(FunctionMessage(content="42", name="calc", id="f1"))["metadata"] == {"tool_name": "calc"}  # type: ignore[index]
    assert to_memq(AIMessage("", id="a3")) is None  # nothing to store


def test_a_message_without_an_id_gets_one_once_and_keeps_it():
    message = HumanMessage("Book the 9:40")
    first = to_memq(message)
    assert first is not None and message.id and first["message_id"] == message.id
    assert to_memq(message) == first  # sent again: the same id, a duplicate in memq
    long = AIMessage("x", id="é" * 10)
    assert to_memq(long)["message_id"].startswith("sha256:")  # type: ignore[index]


def test_memq_messages_back_as_langchain_messages():
    at = "2026-03-02T09:00:00+00:00"
    back = [
        from_memq(SaidOut(role="user", speaker="Lena", content="Hi", timestamp=at)),
        from_memq(SaidOut(role="assistant", speaker=None, content="Hello", timestamp=at)),
        from_memq(SaidOut(role="system", speaker=None, content="Be brief", timestamp=at)),
    ]
    assert [(type(m), m.content, m.name) for m in back] == [
        (HumanMessage, "Hi", "Lena"),
        (AIMessage, "Hello", None),
        (SystemMessage, "Be brief", None),
    ]
    with pytest.raises(ValueError):
        from_memq(SaidOut(role="tool", speaker=None, content="x", timestamp=at))


def test_the_history_reads_the_session_context_and_an_unknown_conversation_is_empty():
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "GET":
            error = {"type": "not_found", "message": "no such conversation", "field": "conversation_id"}
            return httpx.Response(404, json={"error": error})
        body = json.loads(request.content)
        results = [
            {"index": i, "status": "accepted", "message_id": m["message_id"]} for i, m in enumerate(body["messages"])
        ]
        return httpx.Response(200, json={"conversation_id": "c-1", "results": results})

    with Client("http://memq.test", "k", transport=httpx.MockTransport(answer), retries=0) as client:
        chat = MemqChatMessageHistory(client, "c-1", user_id="u-1")
        assert chat.messages == []
        chat.add_messages([HumanMessage("Hi", id="h1"), AIMessage("", id="a1")])
        chat.add_messages([AIMessage("")])  # nothing to store: no request
    context, added = seen
    assert context.url.path == "/v1/conversations/c-1/context"
    assert dict(context.url.params) == {"summaries": "0", "continuity": "100", "max_tokens": "16000", "format": "json"}
    assert json.loads(added.content) == {
        "messages": [{"role": "user", "content": "Hi", "message_id": "h1"}],
        "user_id": "u-1",
    }
