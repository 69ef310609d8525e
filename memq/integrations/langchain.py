"""memq for LangChain and LangGraph (``pip install 'memq[langchain]'``), over the HTTP API
(:class:`memq.client.Client`):

* :class:`MemqChatMessageHistory`: a chat message history that writes to a memq conversation;
* :class:`MemqRetriever`: memq's retrieval as a retriever (a document per episode);
* :func:`memory_tools`: ``retrieve_memory``, ``search_facts`` and ``manifest`` as LangChain tools;
* :func:`memory_node` and :func:`save_node`: LangGraph nodes over a state with ``messages``
  (memory in as a system message; the turn out to memq).

Not a LangGraph ``BaseStore``: its contract is that a write is read back at once, and memq
turns messages into episodes asynchronously (docs/integrations.md).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool

from memq.api.models import Detail
from memq.client import Client, NotFound
from memq.client.models import SaidOut
from memq.integrations._common import (
    FACTS_DESCRIPTION,
    HISTORY_MAX_TOKENS,
    HISTORY_MESSAGES,
    MANIFEST_DESCRIPTION,
    RETRIEVE_DESCRIPTION,
    document_parts,
    facts_text,
    history,
    manifest_text,
    memory_text,
    message_id,
    tool_call_text,
)

__all__ = [
    "MEMORY_MESSAGE_PREFIX",
    "MemqChatMessageHistory",
    "MemqRetriever",
    "from_memq",
    "memory_node",
    "memory_tools",
    "save_node",
    "to_memq",
]

MEMORY_MESSAGE_PREFIX = "memq-memory-"
"""The id prefix of the system message :func:`memory_node` adds (and replaces on the next turn)."""

QUERY_MAX_CHARS = 2000
"""The longest question :func:`memory_node` asks (the API's default ``MEMQ_QUERY_MAX_CHARS``); longer ones are cut."""

_CHAT_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "system": "system"}


# --- messages both ways -----------------------------------------------------------------------


def to_memq(message: BaseMessage) -> dict[str, Any] | None:
    """``message`` as memq stores it (None: nothing to store, e.g. an empty AI message).

    Roles: ``HumanMessage`` user, ``AIMessage`` assistant, ``SystemMessage`` system,
    ``ToolMessage`` (and ``FunctionMessage``) tool; an ``AIMessage`` with tool calls and no
    text is a tool message naming the calls (``metadata.tool_calls``, so the episode records
    the tools). A name becomes ``metadata.name`` (memq's speaker). The message id is
    ``message.id``; a message without one is given one here (written back to
    ``message.id``), so adding the same message objects again stores nothing twice."""
    text = str(message.text).strip()
    metadata: dict[str, Any] = {}
    if isinstance(message, HumanMessage):
        role = "user"
    elif isinstance(message, AIMessage):
        role = "assistant"
        if message.tool_calls:
            calls = [(c["name"], json.dumps(c["args"]), c["id"]) for c in message.tool_calls]
            metadata["tool_calls"] = [{"name": name, "arguments": args, "id": id_} for name, args, id_ in calls]
            if not text:
                role, text = "tool", "; ".join(tool_call_text(name, args) for name, args, _ in calls)
    elif isinstance(message, SystemMessage):
        role = "system"
    elif isinstance(message, ToolMessage | FunctionMessage):
        role = "tool"
        text = text or "(no output)"
        if isinstance(message, ToolMessage):
            metadata["tool_call_id"] = message.tool_call_id
        if message.name:
            metadata["tool_name"] = message.name
    elif isinstance(message, ChatMessage) and message.role in _CHAT_ROLES:
        role = _CHAT_ROLES[message.role]
    else:
        raise ValueError(f"memq stores human, AI, system and tool messages, not {message.type!r}")
    if not text:
        return None
    if message.name and role != "tool":
        metadata["name"] = message.name
    if message.id is None:
        message.id = str(uuid.uuid4())
    out: dict[str, Any] = {"role": role, "content": text, "message_id": message_id(message.id)}
    if metadata:
        out["metadata"] = metadata
    return out


def from_memq(said: SaidOut) -> BaseMessage:
    """A message memq holds (a user, assistant or system message) as LangChain's; the
    speaker is the message's ``name``."""
    if said.role == "user":
        return HumanMessage(said.content, name=said.speaker)
    if said.role == "assistant":
        return AIMessage(said.content, name=said.speaker)
    if said.role == "system":
        return SystemMessage(said.content, name=said.speaker)
    raise ValueError(f"not a message of a history: {said.role!r}")


# --- the chat message history ---------------------------------------------------------------


class MemqChatMessageHistory(BaseChatMessageHistory):
    """A chat message history kept in a memq conversation.

    ``add_messages`` writes to the conversation (roles and ids: :func:`to_memq`), all or
    nothing; ``clear`` forgets the conversation (every trace of it, episodes included).

    ``messages`` reads back what memq holds of the conversation, at once: its last
    ``history_messages`` (at most 100) stored messages, then every message not yet in an
    episode (up to ``MEMQ_SESSION_OPEN_MESSAGES_MAX``, 200), within ``max_tokens``; tool
    messages are left out. It is a window of the latest messages, not the whole history
    (older ones are found by retrieval), and it reads plain text: ids, metadata and tool
    calls are not returned. ``user_id`` gives the conversation to that user (retrieval can
    then search all of the user's conversations).

    The async methods run these in a thread (the client is blocking and thread-safe)."""

    def __init__(
        self,
        client: Client,
        conversation_id: str,
        *,
        user_id: str | None = None,
        history_messages: int = HISTORY_MESSAGES,
        max_tokens: int = HISTORY_MAX_TOKENS,
    ) -> None:
        super().__init__()
        self.client = client
        self.conversation_id = conversation_id
        self.user_id = user_id
        self.history_messages = history_messages
        self.max_tokens = max_tokens

    @property
    def messages(self) -> list[BaseMessage]:
        try:
            context = self.client.context(
                self.conversation_id, summaries=0, continuity=self.history_messages, max_tokens=self.max_tokens
            )
        except NotFound:  # nothing was ever added (or it was forgotten)
            return []
        return [from_memq(m) for m in history(context)]

    @messages.setter
    def messages(self, value: list[BaseMessage]) -> None:
        raise AttributeError("memq's history is read from memq; add messages with add_messages")

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        batch = [m for m in map(to_memq, messages) if m is not None]
        if batch:
            self.client.add_messages(self.conversation_id, batch, user_id=self.user_id)

    def clear(self) -> None:
        self.client.forget(self.conversation_id)


# --- the retriever ------------------------------------------------------------------------------


class MemqRetriever(BaseRetriever):
    """memq's retrieval (``POST /v1/memory/retrieve``) as a retriever: a ``Document`` per
    episode found, best first (:func:`memq.integrations._common.document_parts`: the title,
    the summary when shown, the messages shown; metadata ``episode_id``, ``conversation_id``,
    ``title``, ``start_at``, ``end_at``, ``rank``, ``score`` and every score in ``scores``).

    The scope: ``conversation_id`` or ``conversation_ids``, or ``user_id`` (every conversation
    of the user), or none of them (every conversation of the key's tenant). Only episodes are
    found: messages a worker has not yet made into an episode are not."""

    client: Client
    conversation_id: str | None = None
    conversation_ids: list[str] | None = None
    user_id: str | None = None
    limit: int | None = None
    max_tokens: int | None = None
    detail: Detail = "auto"
    record: bool = True
    """Record what was returned for memq's memory review (``record`` of the API)."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        found = self.client.retrieve(
            query,
            conversation_id=self.conversation_id,
            conversation_ids=self.conversation_ids,
            user_id=self.user_id,
            limit=self.limit,
            max_tokens=self.max_tokens,
            detail=self.detail,
            record=self.record,
        )
        documents = []
        for memory in found.memories:
            text, metadata = document_parts(memory)
            documents.append(Document(page_content=text, metadata=metadata, id=memory.id))
        return documents


# --- tools ------------------------------------------------------------------------------------


def memory_tools(
    client: Client,
    *,
    conversation_id: str | None = None,
    user_id: str | None = None,
    max_tokens: int | None = None,
) -> list[BaseTool]:
    """``retrieve_memory(query)`` and ``search_facts(query)``, and with a ``conversation_id``
    ``manifest()``, as LangChain tools answering text. The scope: ``user_id`` (every
    conversation of the user), else ``conversation_id``, else the whole tenant."""

    def retrieve_memory(query: str) -> str:
        if user_id is not None:
            found = client.retrieve(query, user_id=user_id, max_tokens=max_tokens, asked_in=conversation_id)
        else:
            found = client.retrieve(query, conversation_id=conversation_id, max_tokens=max_tokens)
        return memory_text(found)

    def search_facts(query: str) -> str:
        scope = {"user_id": user_id} if user_id is not None else {"conversation_id": conversation_id}
        return facts_text(client.search_facts(query, **scope))

    tools: list[BaseTool] = [
        StructuredTool.from_function(retrieve_memory, name="retrieve_memory", description=RETRIEVE_DESCRIPTION),
        StructuredTool.from_function(search_facts, name="search_facts", description=FACTS_DESCRIPTION),
    ]
    if conversation_id is not None:
        conversation = conversation_id

        def manifest() -> str:
            return manifest_text(client.manifest(conversation, user_id=user_id))

        tools.append(StructuredTool.from_function(manifest, name="manifest", description=MANIFEST_DESCRIPTION))
    return tools


# --- LangGraph nodes ------------------------------------------------------------------------------


class Node(Protocol):
    """A LangGraph node that takes the graph's config (``state`` has ``messages``)."""

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, list[BaseMessage]]: ...


def _messages(state: Any) -> list[BaseMessage]:
    messages = state["messages"] if isinstance(state, Mapping) else state.messages
    return list(messages)


def _conversation(conversation_id: str | None, config: RunnableConfig) -> str:
    if conversation_id is not None:
        return conversation_id
    thread = (config.get("configurable") or {}).get("thread_id")
    if not isinstance(thread, str) or not thread:
        raise ValueError("give the node a conversation_id, or run the graph with configurable.thread_id")
    return thread


def _is_memory(message: BaseMessage) -> bool:
    return isinstance(message, SystemMessage) and (message.id or "").startswith(MEMORY_MESSAGE_PREFIX)


def memory_node(
    client: Client,
    *,
    conversation_id: str | None = None,
    user_id: str | None = None,
    max_tokens: int | None = None,
) -> Node:
    """A LangGraph node over a state with ``messages`` (``MessagesState``, its ``add_messages``
    reducer): retrieves what memq remembers about the latest human message and adds it as a
    system message (id ``memq-memory-...``), removing the one an earlier turn added. Nothing
    is added when memq finds nothing.

    The conversation is ``conversation_id``, else the graph's ``thread_id``; with ``user_id``
    every conversation of the user is searched. Only episodes are found: what was said in
    this session and is not yet an episode is in the state's messages already."""

    def node(state: Any, config: RunnableConfig) -> dict[str, list[BaseMessage]]:
        messages = _messages(state)
        question = next((str(m.text) for m in reversed(messages) if isinstance(m, HumanMessage)), "").strip()
        question = question[:QUERY_MAX_CHARS]
        update: list[BaseMessage] = [RemoveMessage(id=m.id) for m in messages if _is_memory(m) and m.id]
        if not question:
            return {"messages": update}
        conversation = _conversation(conversation_id, config)
        if user_id is not None:
            found = client.retrieve(question, user_id=user_id, max_tokens=max_tokens, asked_in=conversation)
        else:
            found = client.retrieve(question, conversation_id=conversation, max_tokens=max_tokens)
        if found.memories or found.facts:
            text = "What you remember from earlier conversation (memq):\n\n" + found.text.strip()
            update.append(SystemMessage(text, id=f"{MEMORY_MESSAGE_PREFIX}{uuid.uuid4().hex}"))
        return {"messages": update}

    return node


def save_node(client: Client, *, conversation_id: str | None = None, user_id: str | None = None) -> Node:
    """A LangGraph node that writes the current turn to memq: the state's messages from the
    latest human message on (without :func:`memory_node`'s system message). LangGraph's
    ``add_messages`` gives every message an id, so saving a turn again stores nothing twice.
    The conversation is ``conversation_id``, else the graph's ``thread_id``. Changes no state."""

    def node(state: Any, config: RunnableConfig) -> dict[str, list[BaseMessage]]:
        messages = _messages(state)
        start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0)
        turn = [m for m in messages[start:] if not _is_memory(m)]
        MemqChatMessageHistory(client, _conversation(conversation_id, config), user_id=user_id).add_messages(turn)
        return {}

    return node
