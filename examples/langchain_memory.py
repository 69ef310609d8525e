"""memq in LangChain and LangGraph, without an LLM: a chat message history kept in memq, the
retriever, the memory tools, and a LangGraph graph whose memory node puts what memq remembers
in front of the model (here a deterministic echo node stands in for the model).

Needs a running memq (``make api`` and a worker, ``memq worker``) and
``pip install 'memq[langchain]'``::

    MEMQ_URL=http://127.0.0.1:8765 MEMQ_KEY=... python examples/langchain_memory.py
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from memq.client import Client
from memq.integrations.langchain import (
    MemqChatMessageHistory,
    MemqRetriever,
    memory_node,
    memory_tools,
    save_node,
)


def echo(state: MessagesState) -> dict[str, Any]:
    """Stands in for the model node: answers with the question and the memory it was given."""
    question = next(m for m in reversed(state["messages"]) if isinstance(m, HumanMessage))
    memory = [m.text for m in state["messages"] if isinstance(m, SystemMessage)]
    return {"messages": [AIMessage(f"(echo) {question.text} | memory given: {len(memory[-1]) if memory else 0} chars")]}


def main() -> None:
    conversation = f"example-langchain-{uuid.uuid4().hex[:8]}"
    with Client() as memq:  # MEMQ_URL, MEMQ_KEY
        history = MemqChatMessageHistory(memq, conversation, user_id="example-user")
        history.add_messages(
            [
                HumanMessage("Can you book the 9:40 train to Hamburg for Friday?"),
                AIMessage("", tool_calls=[{"name": "book_train", "args": {"train": "ICE 1004"}, "id": "call-1"}]),
                ToolMessage("booked ICE 1004, coach 7, seat 54", tool_call_id="call-1", name="book_train"),
                AIMessage("Booked: ICE 1004, coach 7, seat 54, departing 9:40."),
            ]
        )
        print(f"## history of {conversation}, read back at once (not yet an episode)")
        for message in history.messages:
            print(f"{message.type}: {message.text}")

        print("\n## waiting for a worker to store the conversation as an episode ...")
        if not memq.flush(conversation, wait=60).idle:
            sys.exit("no episode after 60 s: is a worker running (memq worker)?")

        print("\n## retriever: which seat did I get?")
        for document in MemqRetriever(client=memq, conversation_id=conversation).invoke("which seat did I get?"):
            print(f"[{document.metadata['title']}] score {document.metadata['score']:.3f}")
            print(document.page_content)

        print("\n## tools")
        tools = {tool.name: tool for tool in memory_tools(memq, conversation_id=conversation)}
        print("retrieve_memory ->", tools["retrieve_memory"].invoke({"query": "train seat"}))
        print("search_facts ->", tools["search_facts"].invoke({"query": "train"}))
        print("manifest ->", tools["manifest"].invoke({}))

        print("\n## a LangGraph graph: memory -> model (echo) -> save")
        graph = StateGraph(MessagesState)
        graph.add_node("memory", memory_node(memq))
        graph.add_node("model", echo)
        graph.add_node("save", save_node(memq))
        graph.add_edge(START, "memory")
        graph.add_edge("memory", "model")
        graph.add_edge("model", "save")
        graph.add_edge("save", END)
        state = graph.compile().invoke(
            {"messages": [HumanMessage("Which coach am I in?")]},
            {"configurable": {"thread_id": conversation}},  # the thread is the memq conversation
        )
        for message in state["messages"]:
            print(f"{message.type}: {message.text[:300]}")

        print("\n## the history now ends with the saved turn")
        for message in history.messages[-2:]:
            print(f"{message.type}: {message.text}")

        history.clear()
        print(f"\nforgot {conversation}: {len(history.messages)} messages left")


if __name__ == "__main__":
    main()
