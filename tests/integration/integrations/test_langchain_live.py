"""memq.integrations.langchain against a live API and a real worker, no LLM: the chat
message history (read back at once from the open segment, and after the episodes exist; a
repeat is a duplicate; clear forgets), the retriever, the memory tools, and a compiled
LangGraph StateGraph with the memory node, a deterministic echo node and the save node."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langgraph")

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from memq.integrations.langchain import (
    MEMORY_MESSAGE_PREFIX,
    MemqChatMessageHistory,
    MemqRetriever,
    memory_node,
    memory_tools,
    save_node,
)

pytestmark = pytest.mark.integration


def train_talk() -> list[BaseMessage]:
    return [
        HumanMessage("Can you book the 9:40 train to Hamburg for Friday?"),
        AIMessage("", tool_calls=[{"name": "book_train", "args": {"train": "ICE 1004"}, "id": "call-1"}]),
        ToolMessage("booked ICE 1004 coach 7 seat 54", tool_call_id="call-1", name="book_train"),
        AIMessage("Booked: ICE 1004, coach 7, seat 54, departing 9:40."),
    ]


def test_history_retriever_and_tools(memq, worker):
    chat = MemqChatMessageHistory(memq, "lc-trip", user_id="lena")
    assert chat.messages == []  # nothing yet: no such conversation
    talk = train_talk()
    chat.add_messages(talk)
    # at once, before any episode: from the open segment; the tool call and its result are not read back
    back = chat.messages
    assert [(type(m), m.content) for m in back] == [
        (HumanMessage, "Can you book the 9:40 train to Hamburg for Friday?"),
        (AIMessage, "Booked: ICE 1004, coach 7, seat 54, departing 9:40."),
    ]
    chat.add_messages(talk)  # the same messages again (their ids were fixed on the first call): nothing twice
    assert memq.status("lc-trip").accepted == 4

    assert memq.flush("lc-trip", wait=60).idle is True
    assert [m.content for m in chat.messages] == [m.content for m in back]  # now from the stored messages
    assert "book_train" in memq.episodes("lc-trip").episodes[0].tools_used

    documents = MemqRetriever(client=memq, conversation_id="lc-trip", record=False).invoke("which seat on the train?")
    assert documents and all(isinstance(d, Document) for d in documents)
    best = documents[0]
    assert "54" in best.page_content and best.metadata["conversation_id"] == "lc-trip"
    assert best.metadata["episode_id"] == best.id and best.metadata["score"] > 0 and best.metadata["start_at"]
    assert MemqRetriever(client=memq, user_id="lena", record=False).invoke("seat on the train")  # the user's scope

    tools = {t.name: t for t in memory_tools(memq, conversation_id="lc-trip")}
    assert set(tools) == {"retrieve_memory", "search_facts", "manifest"}
    assert "54" in tools["retrieve_memory"].invoke({"query": "which seat did I get?"})
    assert tools["search_facts"].invoke({"query": "seat"}).startswith("No facts match")  # no LLM: no facts
    assert "CONVERSATION MANIFEST" in tools["manifest"].invoke({})
    assert {t.name for t in memory_tools(memq, user_id="lena")} == {"retrieve_memory", "search_facts"}

    chat.clear()
    assert chat.messages == []


def echo(state: MessagesState) -> dict[str, Any]:
    """The deterministic model of the test: repeats the question and the memory it was given."""
    question = next(m for m in reversed(state["messages"]) if isinstance(m, HumanMessage))
    memory = [m for m in state["messages"] if isinstance(m, SystemMessage)]
    said = f"echo: {question.text}" + (f" | remembered: {memory[-1].text}" if memory else "")
    return {"messages": [AIMessage(said)]}


def test_a_langgraph_graph_with_the_memory_and_save_nodes(memq, worker):
    MemqChatMessageHistory(memq, "lg-trip").add_messages(train_talk())
    assert memq.flush("lg-trip", wait=60).idle is True

    graph = StateGraph(MessagesState)
    graph.add_node("memory", memory_node(memq))
    graph.add_node("model", echo)
    graph.add_node("save", save_node(memq))
    graph.add_edge(START, "memory")
    graph.add_edge("memory", "model")
    graph.add_edge("model", "save")
    graph.add_edge("save", END)
    app = graph.compile()
    config: Any = {"configurable": {"thread_id": "lg-trip"}}  # the thread is the memq conversation

    first = app.invoke({"messages": [HumanMessage("Which seat did I get on the train?")]}, config)["messages"]
    assert [type(m) for m in first] == [HumanMessage, SystemMessage, AIMessage]
    assert (first[1].id or "").startswith(MEMORY_MESSAGE_PREFIX) and "54" in first[1].text
    assert first[2].text.startswith("echo: Which seat") and "54" in first[2].text

    # the next turn: the earlier memory message is replaced, not stacked
    second = app.invoke({"messages": [*first, HumanMessage("And the coach?")]}, config)["messages"]
    memories = [m for m in second if isinstance(m, SystemMessage)]
    assert len(memories) == 1 and memories[0].id != first[1].id
    assert [type(m) for m in second] == [HumanMessage, AIMessage, HumanMessage, SystemMessage, AIMessage]

    # the save node wrote each turn once (the second run saved only its own turn), no memory message
    said = [m.content for m in MemqChatMessageHistory(memq, "lg-trip").messages]
    assert said[-4:] == [first[0].content, first[2].content, "And the coach?", second[-1].content]
    assert not any(str(text).startswith("What you remember") for text in said)
    assert memq.status("lg-trip").accepted == 4 + 4
