"""memq as a Model Context Protocol server (official ``mcp`` SDK): the tools of ``TOOLS``
(``retrieve_memory``, ``search_facts``, ``recent_memory``, ``manifest`` and
``session_context``), each a call into the same library as the HTTP API.

Two transports: stdio (``memq mcp``; the tenant is the process' ``--tenant`` /
``MEMQ_TENANT``) and streamable HTTP mounted on the API at ``/mcp``, where the bearer
key chooses the tenant exactly as for the API (``memq/api/app.py`` checks it and hands
the tenant to the tool through the request).

A tool is a plain function registered with ``@tool(description)``: its first parameter
is the ``Memory`` bound to the call's tenant (``memq.memory``), the others are the tool's
arguments, and it returns the text the model reads. ``build_server`` gives every tool
the same scaffold: the tenant of the request, its memory, a worker thread, and memq's
errors as tool errors. This module imports the SDK
only there, so the table of tools can be read without it (``memq mcp --help``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from memq import version
from memq.shared.errors import MemqError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from memq.memory import Memory

INSTRUCTIONS = (
    "memq is this agent's long-term memory of its conversations. At the start of a session call session_context "
    "for the conversation; call manifest to see what was talked about when; call retrieve_memory whenever earlier "
    "conversations may hold the answer (it searches what was said, not only summaries); search_facts finds lasting "
    "facts (preferences, plans, relationships) distilled from earlier conversations; recent_memory lists the "
    "latest episodes."
)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    body: Callable[..., str]  # (memory, **arguments) -> the answer


TOOLS: list[Tool] = []  # in the order they are listed


def tool(description: str) -> Callable[[Callable[..., str]], Callable[..., str]]:
    """Register the function as the MCP tool of its name."""

    def register(body: Callable[..., str]) -> Callable[..., str]:
        TOOLS.append(Tool(body.__name__, description, body))
        return body

    return register


def tool_names() -> list[str]:
    return [t.name for t in TOOLS]


ConversationId = Annotated[str, Field(description="The conversation's id (1-128 letters, digits, '.', '_', ':', '-').")]
MaxTokens = Annotated[int | None, Field(description="Budget of the answer in tokens.")]
UserId = Annotated[
    str | None, Field(description="Only this user's conversations (the user's memories across conversations).")
]


@tool(
    "Search long-term memory: the most relevant episodes of earlier conversation and the messages in them that "
    "matter, as markdown within max_tokens. Name a time ('last week', 'in May 2023') to prefer it, or give "
    "since/until to filter."
)
def retrieve_memory(
    memory: Memory,
    query: Annotated[str, Field(description="What to remember, in words.")],
    conversation_id: Annotated[str | None, Field(description="Search this conversation only.")] = None,
    conversation_ids: Annotated[list[str] | None, Field(description="Search these conversations.")] = None,
    detail: Annotated[
        str, Field(description="none | low | high | auto (messages of the best episodes and best message matches)")
    ] = "auto",
    max_tokens: MaxTokens = None,
    limit: Annotated[int | None, Field(description="Most episodes returned.")] = None,
    since: Annotated[str | None, Field(description="ISO-8601: only episodes after this.")] = None,
    until: Annotated[str | None, Field(description="ISO-8601: only episodes before this.")] = None,
    asked_in: Annotated[
        str | None, Field(description="The conversation you are in (default: the one searched).")
    ] = None,
    user_id: UserId = None,
) -> str:
    return memory.retrieve(
        query,
        conversation_id=conversation_id,
        conversation_ids=conversation_ids,
        user_id=user_id,
        detail=detail,
        max_tokens=max_tokens,
        limit=limit,
        time_range=None if since is None and until is None else (since, until),
        asked_in=asked_in,
    ).text


@tool(
    "Search the facts memq has distilled from earlier conversation (who people are, what they prefer, want, did; "
    "each with its category and since when it is true)."
)
def search_facts(
    memory: Memory,
    query: Annotated[str, Field(description="What to look for, in words.")],
    conversation_id: Annotated[str | None, Field(description="Facts of this conversation only.")] = None,
    limit: Annotated[int | None, Field(description="Most facts.")] = None,
    user_id: UserId = None,
) -> str:
    from memq.memory.retrieval.facts_section import fact_line

    asked, found = memory.facts(query, conversation_id=conversation_id, user_id=user_id, limit=limit)
    return "\n".join(fact_line(f) for f, _, _ in found) or f"No facts match “{asked}”."


@tool("The latest episodes of a conversation, or of a user's conversations (title, when, summary), newest first.")
def recent_memory(
    memory: Memory,
    conversation_id: Annotated[
        str | None, Field(description="The conversation's id (or give user_id for all of the user's).")
    ] = None,
    days: Annotated[float, Field(description="How far back, in days.")] = 7.0,
    limit: Annotated[int | None, Field(description="Most episodes.")] = None,
    max_tokens: MaxTokens = None,
    user_id: UserId = None,
) -> str:
    return memory.recent(conversation_id, user_id=user_id, days=days, limit=limit, max_tokens=max_tokens).text


@tool(
    "The conversation's manifest: its chapters (the topics talked about, each a run of episodes) as a tree by "
    "day (Today, Yesterday, dates), each with its time range and short title; the segment still open is marked "
    "Active."
)
def manifest(
    memory: Memory,
    conversation_id: ConversationId,
    depth: Annotated[int | None, Field(description="Newest episodes read into chapters (default 100).")] = None,
    timezone: Annotated[str | None, Field(description="IANA time zone for days and times (default UTC).")] = None,
    user_id: UserId = None,
) -> str:
    return memory.manifest(conversation_id, user_id=user_id, depth=depth, timezone=timezone).text


@tool(
    "What to read at the start of a new session: a note that older history is searchable, the latest episode "
    "summaries, the last messages before the open segment, the time since then, and the open segment's messages."
)
def session_context(
    memory: Memory,
    conversation_id: ConversationId,
    max_tokens: Annotated[int | None, Field(description="Budget in tokens (default 2000).")] = None,
    timezone: Annotated[str | None, Field(description="IANA time zone (default UTC).")] = None,
    user_id: UserId = None,
) -> str:
    return memory.context(conversation_id, user_id=user_id, max_tokens=max_tokens, timezone=timezone).text


def build_server(services, *, tenant: str | None = None) -> MCPServer:
    """``services``: ``memq.api.services.Services``. ``tenant``: the fixed tenant of a stdio
    server; over HTTP the tenant comes from the request."""
    import anyio
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("memq", instructions=INSTRUCTIONS, version=version())

    def tenant_of(ctx: Context) -> str:
        request = getattr(ctx.request_context, "request", None) if ctx is not None else None
        state = getattr(request, "state", None)
        from_request = getattr(state, "memq_tenant", None) if state is not None else None
        if from_request:
            return from_request
        if request is not None:  # an HTTP request that our middleware did not let through cannot get here
            raise ToolError("no tenant for this request")
        return tenant or services.settings.tenant

    def scaffolded(spec: Tool) -> Callable[..., Any]:
        async def run(ctx: Context, **arguments: Any) -> str:
            who = tenant_of(ctx)

            def in_thread() -> str:
                return spec.body(services.memory(who), **arguments)

            try:
                return await anyio.to_thread.run_sync(in_thread)
            except MemqError as exc:  # bad input and the like: the model reads the message, which says what to do
                raise ToolError(str(exc)) from None

        # The SDK reads the tool's arguments (names, types, descriptions, defaults) from the
        # signature: the body's, less the Memory, plus the Context it fills in itself.
        signature = inspect.signature(spec.body, eval_str=True, locals={"Memory": Any})  # dropped below
        context = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
        params = [*list(signature.parameters.values())[1:], context]
        run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]  # settable, not declared
        run.__annotations__ = {p.name: p.annotation for p in params} | {"return": str}
        run.__name__ = run.__qualname__ = spec.name  # names the schemas, as for a function of that name
        return run

    for spec in TOOLS:
        server.add_tool(scaffolded(spec), name=spec.name, description=spec.description)
    return server
