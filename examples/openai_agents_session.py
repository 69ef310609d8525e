"""memq in the OpenAI Agents SDK, without an LLM: a session kept in memq and the memory tools,
called here as the SDK's runner calls them. With a model, pass them to an agent::

    agent = Agent(name="Assistant", tools=memory_tools(memq, conversation_id=conversation))
    result = await Runner.run(agent, "Which seat did I get?", session=MemqSession(conversation, memq))

Needs a running memq (``make api`` and a worker, ``memq worker``) and
``pip install 'memq[openai-agents]'``::

    MEMQ_URL=http://127.0.0.1:8765 MEMQ_KEY=... python examples/openai_agents_session.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any

from agents import FunctionTool, Tool, TResponseInputItem
from agents.tool_context import ToolContext

from memq.client import AsyncClient
from memq.integrations.openai_agents import MemqSession, memory_tools

TURN: list[TResponseInputItem] = [
    {"role": "user", "content": "Can you book the 9:40 train to Hamburg for Friday?"},
    {"type": "function_call", "call_id": "call_1", "name": "book_train", "arguments": '{"train": "ICE 1004"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "booked ICE 1004, coach 7, seat 54"},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Booked: ICE 1004, coach 7, seat 54.", "annotations": []}],
    },
]


async def call(tool: Tool, arguments: dict[str, Any]) -> Any:
    """A function tool invoked as the runner invokes it when the model calls it."""
    assert isinstance(tool, FunctionTool)
    raw = json.dumps(arguments)
    return await tool.on_invoke_tool(ToolContext(None, tool_name=tool.name, tool_call_id="c1", tool_arguments=raw), raw)


async def main() -> None:
    conversation = f"example-agents-{uuid.uuid4().hex[:8]}"
    async with AsyncClient() as memq:  # MEMQ_URL, MEMQ_KEY
        session = MemqSession(conversation, memq, user_id="example-user")
        await session.add_items(TURN)  # what the runner does after each turn
        print(f"## session {conversation}: get_items() at once (not yet an episode)")
        for item in await session.get_items():
            print(item)

        print("\n## waiting for a worker to store the conversation as an episode ...")
        if not (await memq.flush(conversation, wait=60)).idle:
            sys.exit("no episode after 60 s: is a worker running (memq worker)?")

        print("\n## tools")
        tools = {tool.name: tool for tool in memory_tools(memq, conversation_id=conversation)}
        print("retrieve_memory ->", await call(tools["retrieve_memory"], {"query": "which seat did I get?"}))
        print("search_facts ->", await call(tools["search_facts"], {"query": "train"}))
        print("manifest ->", await call(tools["manifest"], {}))

        await session.clear_session()
        print(f"\nforgot {conversation}: {len(await session.get_items())} items left")


if __name__ == "__main__":
    asyncio.run(main())
