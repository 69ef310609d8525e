"""memq for the OpenAI Agents SDK (``pip install 'memq[openai-agents]'``), over the HTTP API
(:class:`memq.client.Client` or :class:`memq.client.AsyncClient`):

* :class:`MemqSession`: a session (the SDK's ``Session`` protocol) kept in a memq conversation;
* :func:`memory_tools`: ``retrieve_memory``, ``search_facts`` and ``manifest`` as function tools.

::

    from agents import Agent, Runner
    from memq.client import Client
    from memq.integrations.openai_agents import MemqSession, memory_tools

    memq = Client()  # MEMQ_URL, MEMQ_KEY
    agent = Agent(name="Assistant", tools=memory_tools(memq, conversation_id="conv-42"))
    result = await Runner.run(agent, "Which seat did I get?", session=MemqSession("conv-42", memq))
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agents import Tool, function_tool
from agents.models.fake_id import FAKE_RESPONSES_ID

from memq.client import AsyncClient, Client, NotFound
from memq.client.models import ContextOut, FactSearchOut, ManifestOut, RetrieveOut, SaidOut
from memq.integrations._common import (
    FACTS_DESCRIPTION,
    HISTORY_MAX_TOKENS,
    HISTORY_MESSAGES,
    MANIFEST_DESCRIPTION,
    RETRIEVE_DESCRIPTION,
    facts_text,
    history,
    manifest_text,
    memory_text,
    message_id,
    tool_call_text,
)

if TYPE_CHECKING:
    from agents import TResponseInputItem
    from agents.memory import SessionSettings

__all__ = ["MemqSession", "from_memq", "memory_tools", "to_memq"]

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_CALLS = ("function_call", "custom_tool_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


async def _ask(client: Client | AsyncClient, method: str, /, *args: Any, **kwargs: Any) -> Any:
    """``client.method(...)``: awaited on an ``AsyncClient``, in a thread on a ``Client``."""
    call = getattr(client, method)
    if isinstance(client, AsyncClient):
        return await call(*args, **kwargs)
    return await asyncio.to_thread(call, *args, **kwargs)


# --- items both ways --------------------------------------------------------------------------


def _text(content: Any) -> str:
    """The text of a message's or an output's content: a string, or the text (and refusal) parts."""
    if isinstance(content, str):
        return content.strip()
    parts = [p.get("text") or p.get("refusal") for p in content or () if isinstance(p, Mapping)]
    return "\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())


def _own_id(value: Any) -> str | None:
    return None if value == FAKE_RESPONSES_ID else message_id(value)


def to_memq(items: Sequence[TResponseInputItem]) -> list[dict[str, Any]]:
    """The SDK's items as memq messages, in order.

    * a message (user, assistant, system; developer as system): its text parts (an image or a
      file alone is not stored);
    * a function or custom tool call: a ``tool`` message ``name(arguments)`` with
      ``metadata.tool_calls`` (the episode records the tool) and ``call_id``;
    * its output: a ``tool`` message with the output's text, ``metadata.tool_name`` and ``call_id``;
    * anything else (reasoning, hosted tools' calls, ...) is not stored.

    Ids: the item's own (a message's ``id``; ``call_id`` for a call, ``call_id:output`` for its
    output), so the model's items are stored once however often they are added; an item with
    none (the user's input) gets a new one."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for item in items:
        raw: Mapping[str, Any] = item  # every item is a dict: read it as one
        kind, role = raw.get("type", "message"), raw.get("role")
        own: str | None
        metadata: dict[str, Any]
        if kind == "message" and role in _ROLES:
            text, own, metadata = _text(raw.get("content")), _own_id(raw.get("id")), {}
            memq_role = _ROLES[role]
        elif kind in _CALLS:
            name, call_id = str(raw.get("name") or "tool"), str(raw.get("call_id") or "")
            arguments = str(raw.get("arguments", raw.get("input", "")))
            names[call_id] = name
            text, own, memq_role = tool_call_text(name, arguments), _own_id(call_id), "tool"
            metadata = {"tool_name": name, "tool_calls": [{"name": name, "arguments": arguments}], "call_id": call_id}
        elif kind in _OUTPUTS:
            call_id = str(raw.get("call_id") or "")
            text, own, memq_role = _text(raw.get("output")) or "(no output)", _own_id(f"{call_id}:output"), "tool"
            metadata = {"call_id": call_id, **({"tool_name": names[call_id]} if call_id in names else {})}
        else:
            continue
        if not text:
            continue
        message: dict[str, Any] = {"role": memq_role, "content": text, "message_id": own or str(uuid.uuid4())}
        if metadata:
            message["metadata"] = metadata
        out.append(message)
    return out


def from_memq(said: SaidOut) -> TResponseInputItem:
    """A message memq holds (user, assistant or system) as the SDK's input item."""
    if said.role == "user":
        return {"role": "user", "content": said.content}
    if said.role == "assistant":
        return {"role": "assistant", "content": said.content}
    if said.role == "system":
        return {"role": "system", "content": said.content}
    raise ValueError(f"not a message of a session: {said.role!r}")


# --- the session --------------------------------------------------------------------------------


class MemqSession:
    """A session of the OpenAI Agents SDK kept in the memq conversation ``session_id``.

    ``add_items`` writes the items memq keeps (:func:`to_memq`) in one batch, all or nothing;
    ``clear_session`` forgets the conversation (every trace, episodes included).

    ``get_items`` reads memq, so it has what was added at once, before a worker has made
    episodes of it: the conversation's last ``history_messages`` (at most 100) stored
    messages, then every message not yet in an episode (up to ``MEMQ_SESSION_OPEN_MESSAGES_MAX``,
    200), within ``max_tokens``, as ``{"role", "content"}`` messages; tool calls and outputs
    are left out (memq does not return the call ids that pair them, and the model refuses an
    output without its call). So it is a window of the latest messages, not a replay of every
    item: older history is what :func:`memory_tools` retrieve.

    ``pop_item`` raises ``NotImplementedError``: memq forgets a whole conversation, never one
    message. The client: a ``Client`` (its calls run in a thread: it works on any event loop)
    or an ``AsyncClient`` (bound to one event loop)."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        client: Client | AsyncClient,
        *,
        user_id: str | None = None,
        history_messages: int = HISTORY_MESSAGES,
        max_tokens: int = HISTORY_MAX_TOKENS,
    ) -> None:
        self.session_id = session_id
        self.client = client
        self.user_id = user_id
        self.history_messages = history_messages
        self.max_tokens = max_tokens

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        if limit is not None and limit <= 0:
            return []
        try:
            context: ContextOut = await _ask(
                self.client,
                "context",
                self.session_id,
                summaries=0,
                continuity=self.history_messages,
                max_tokens=self.max_tokens,
            )
        except NotFound:  # nothing was ever added (or it was forgotten)
            return []
        items = [from_memq(m) for m in history(context)]
        return items if limit is None else items[-limit:]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        messages = to_memq(items)
        if messages:
            await _ask(self.client, "add_messages", self.session_id, messages, user_id=self.user_id)

    async def pop_item(self) -> TResponseInputItem | None:
        raise NotImplementedError("memq cannot remove one message: clear_session() forgets the whole conversation")

    async def clear_session(self) -> None:
        await _ask(self.client, "forget", self.session_id)


# --- tools ------------------------------------------------------------------------------------


def memory_tools(
    client: Client | AsyncClient,
    *,
    conversation_id: str | None = None,
    user_id: str | None = None,
    max_tokens: int | None = None,
) -> list[Tool]:
    """``retrieve_memory(query)`` and ``search_facts(query)``, and with a ``conversation_id``
    ``manifest()``, as the SDK's function tools answering text. The scope: ``user_id`` (every
    conversation of the user), else ``conversation_id``, else the whole tenant."""

    async def retrieve_memory(query: str) -> str:
        if user_id is not None:
            scope: dict[str, Any] = {"user_id": user_id, "asked_in": conversation_id}
        else:
            scope = {"conversation_id": conversation_id}
        found: RetrieveOut = await _ask(client, "retrieve", query, max_tokens=max_tokens, **scope)
        return memory_text(found)

    async def search_facts(query: str) -> str:
        scope = {"user_id": user_id} if user_id is not None else {"conversation_id": conversation_id}
        found: FactSearchOut = await _ask(client, "search_facts", query, **scope)
        return facts_text(found)

    tools: list[Tool] = [
        function_tool(retrieve_memory, name_override="retrieve_memory", description_override=RETRIEVE_DESCRIPTION),
        function_tool(search_facts, name_override="search_facts", description_override=FACTS_DESCRIPTION),
    ]
    if conversation_id is not None:
        conversation = conversation_id

        async def manifest() -> str:
            found: ManifestOut = await _ask(client, "manifest", conversation, user_id=user_id)
            return manifest_text(found)

        tools.append(function_tool(manifest, name_override="manifest", description_override=MANIFEST_DESCRIPTION))
    return tools
