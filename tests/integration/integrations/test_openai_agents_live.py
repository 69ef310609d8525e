"""memq.integrations.openai_agents against a live API and a real worker, no LLM: the session
(what was added is read back at once; the model's items are stored once however often they
are added; clear forgets), the memory tools invoked as the SDK invokes them, and both in the
SDK's own Runner with a scripted model in place of an LLM."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, ModelResponse, RunConfig, Runner, Usage
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import TResponseInputItem, TResponseStreamEvent
from agents.memory import Session
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from agents.tool import FunctionTool, Tool
from agents.tool_context import ToolContext
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from openai.types.responses.response_prompt_param import ResponsePromptParam

from memq.client import AsyncClient, Retries
from memq.integrations.openai_agents import MemqSession, memory_tools

pytestmark = pytest.mark.integration

ITEMS: list[Any] = [
    {"role": "user", "content": "Can you book the 9:40 train to Hamburg for Friday?"},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "book_train", "arguments": '{"at":"9:40"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "booked ICE 1004 coach 7 seat 54"},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Booked: ICE 1004, coach 7, seat 54.", "annotations": []}],
    },
]
SAID = [
    {"role": "user", "content": "Can you book the 9:40 train to Hamburg for Friday?"},
    {"role": "assistant", "content": "Booked: ICE 1004, coach 7, seat 54."},
]


async def invoke(tool: Tool, arguments: dict[str, Any]) -> str:
    """Call a function tool as the SDK's runner does."""
    assert isinstance(tool, FunctionTool)
    raw = json.dumps(arguments)
    context = ToolContext(context=None, tool_name=tool.name, tool_call_id="call-test", tool_arguments=raw)
    return str(await tool.on_invoke_tool(context, raw))


def test_the_session_and_the_tools(memq, worker):
    session = MemqSession("oa-trip", memq, user_id="lena")
    assert isinstance(session, Session)

    async def scenario() -> None:
        assert await session.get_items() == []
        await session.add_items(ITEMS)
        assert await session.get_items() == SAID  # at once, before any episode: the open segment
        assert await session.get_items(limit=1) == SAID[-1:]
        await session.add_items(ITEMS)  # again: the model's items are duplicates, the user's input is not
        assert memq.status("oa-trip").accepted == 4 + 1
        with pytest.raises(NotImplementedError):
            await session.pop_item()

    asyncio.run(scenario())
    assert memq.flush("oa-trip", wait=60).idle is True
    assert "book_train" in memq.episodes("oa-trip").episodes[0].tools_used

    async def tools() -> None:
        # now from the stored messages; the user's input is there twice (added twice without an id)
        assert await session.get_items() == [*SAID, SAID[0]]
        found = {t.name: t for t in memory_tools(memq, conversation_id="oa-trip")}
        assert set(found) == {"retrieve_memory", "search_facts", "manifest"}
        assert "54" in await invoke(found["retrieve_memory"], {"query": "which seat did I get?"})
        assert (await invoke(found["search_facts"], {"query": "seat"})).startswith("No facts match")
        assert "CONVERSATION MANIFEST" in await invoke(found["manifest"], {})
        by_user = {t.name: t for t in memory_tools(memq, user_id="lena")}
        assert "54" in await invoke(by_user["retrieve_memory"], {"query": "seat on the train"})
        await session.clear_session()
        assert await session.get_items() == []

    asyncio.run(tools())


class Scripted(Model):
    """A model without an LLM: first it calls retrieve_memory with the question, then it
    answers with what the tool returned. It records the input it was given."""

    def __init__(self) -> None:
        self.inputs: list[list[TResponseInputItem]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append(items)  # type: ignore[arg-type]
        turn = len(self.inputs)
        last: Any = items[-1]
        if last.get("type") != "function_call_output":
            question = str(last["content"])
            call = ResponseFunctionToolCall(
                type="function_call",
                id=f"fc_{turn}",
                call_id=f"call_{turn}",
                name="retrieve_memory",
                arguments=json.dumps({"query": question}),
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text=f"From memory: {last['output'][:400]}", annotations=[])
        answer = ResponseOutputMessage(
            type="message", id=f"msg_{turn}", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[answer], usage=Usage(), response_id=None)

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError


def test_the_sdks_runner_with_the_session_and_the_tools(memq, memq_url, memq_key, worker):
    MemqSession("oa-run", memq).client.add_messages(
        "oa-run", [{"role": m["role"], "content": m["content"]} for m in SAID]
    )
    assert memq.flush("oa-run", wait=60).idle is True
    model = Scripted()

    async def run() -> str:
        async with AsyncClient(memq_url, memq_key, retries=Retries(attempts=3, backoff=0.05)) as client:
            session = MemqSession("oa-run", client)
            agent = Agent(name="assistant", model=model, tools=memory_tools(client, conversation_id="oa-run"))
            result = await Runner.run(
                agent, "Which seat did I get?", session=session, run_config=RunConfig(tracing_disabled=True)
            )
            return str(result.final_output)

    answer = asyncio.run(run())
    assert answer.startswith("From memory:") and "54" in answer
    first: Any = model.inputs[0]
    assert first[: len(SAID)] == SAID  # the session's history came first
    assert first[-1]["content"] == "Which seat did I get?"
    # the runner saved the turn through the session: the question and the answer read back (the tool call
    # and its output stored as tool messages, not read back)
    said = [m.content for m in memq.context("oa-run", summaries=0).open_segment]
    assert said[0] == "Which seat did I get?" and said[-1] == answer
    assert [m.role for m in memq.context("oa-run", summaries=0).open_segment] == ["user", "tool", "tool", "assistant"]
