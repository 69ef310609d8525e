"""memq as a Model Context Protocol server (official ``mcp`` SDK): the tools
``retrieve_memory``, ``recent_memory``, ``manifest``, ``session_context`` and
``search_facts``, each a call
into the same library as the HTTP API.

Two transports: stdio (``memq mcp``; the tenant is the process' ``--tenant`` /
``MEMQ_TENANT``) and streamable HTTP mounted on the API at ``/mcp``, where the bearer
key chooses the tenant exactly as for the API (``memq/api/app.py`` checks it and hands
the tenant to the tool through the request).
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from memq import version
from memq.shared.errors import MemqError

INSTRUCTIONS = (
    "memq is this agent's long-term memory of its conversations. At the start of a session call session_context "
    "for the conversation; call manifest to see what was talked about when; call retrieve_memory whenever earlier "
    "conversations may hold the answer (it searches what was said, not only summaries); search_facts finds lasting "
    "facts (preferences, plans, relationships) distilled from earlier conversations; recent_memory lists the "
    "latest episodes."
)

ConversationId = Annotated[str, Field(description="The conversation's id (1-128 letters, digits, '.', '_', ':', '-').")]


def build_server(services, *, tenant: str | None = None) -> MCPServer:
    """``services``: ``memq.api.services.Services``. ``tenant``: the fixed tenant of a stdio
    server; over HTTP the tenant comes from the request."""
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

    async def run(fn, *args, **kwargs) -> Any:
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        except MemqError as exc:  # bad input and the like: the model reads the message, which says what to do
            raise ToolError(str(exc)) from None

    @server.tool(
        description="Search long-term memory: the most relevant episodes of earlier conversation and the "
        "messages in them that matter, as markdown within max_tokens. Name a time ('last week', "
        "'in May 2023') to prefer it, or give since/until to filter."
    )
    async def retrieve_memory(
        query: Annotated[str, Field(description="What to remember, in words.")],
        ctx: Context,
        conversation_id: Annotated[str | None, Field(description="Search this conversation only.")] = None,
        conversation_ids: Annotated[list[str] | None, Field(description="Search these conversations.")] = None,
        detail: Annotated[
            str, Field(description="none | low | high | auto (messages for the best two episodes)")
        ] = "auto",
        max_tokens: Annotated[int | None, Field(description="Budget of the answer in tokens.")] = None,
        limit: Annotated[int | None, Field(description="Most episodes returned.")] = None,
        since: Annotated[str | None, Field(description="ISO-8601: only episodes after this.")] = None,
        until: Annotated[str | None, Field(description="ISO-8601: only episodes before this.")] = None,
        asked_in: Annotated[
            str | None, Field(description="The conversation you are in (default: the one searched).")
        ] = None,
    ) -> str:
        from memq.shared.retrieval.service import retrieve_memory as retrieve

        who = tenant_of(ctx)

        def call() -> str:
            with services.conn() as conn:
                return retrieve(
                    query,
                    tenant=who,
                    conversation_id=conversation_id,
                    conversation_ids=conversation_ids,
                    detail=detail,
                    max_tokens=max_tokens,
                    limit=limit,
                    time_range=None if since is None and until is None else (since, until),
                    settings=services.settings,
                    conn=conn,
                    asked_in=asked_in,
                ).text

        return await run(call)

    @server.tool(
        description="Search the facts memq has distilled from earlier conversation (who people are, what "
        "they prefer, want, did; each with its category and since when it is true)."
    )
    async def search_facts(
        query: Annotated[str, Field(description="What to look for, in words.")],
        ctx: Context,
        conversation_id: Annotated[str | None, Field(description="Facts of this conversation only.")] = None,
        limit: Annotated[int | None, Field(description="Most facts.")] = None,
    ) -> str:
        from memq.shared.retrieval.facts import find_facts
        from memq.shared.retrieval.facts_section import fact_line

        who = tenant_of(ctx)

        def call() -> str:
            with services.conn() as conn:
                asked, found = find_facts(
                    query,
                    tenant=who,
                    settings=services.settings,
                    conn=conn,
                    conversation_id=conversation_id,
                    limit=limit,
                )
            return "\n".join(fact_line(f) for f, _, _ in found) or f"No facts match “{asked}”."

        return await run(call)

    @server.tool(description="The latest episodes of a conversation (title, when, summary), newest first.")
    async def recent_memory(
        conversation_id: ConversationId,
        ctx: Context,
        days: Annotated[float, Field(description="How far back, in days.")] = 7.0,
        limit: Annotated[int | None, Field(description="Most episodes.")] = None,
        max_tokens: Annotated[int | None, Field(description="Budget of the answer in tokens.")] = None,
    ) -> str:
        from memq.shared.retrieval.service import recent_memory as recent

        who = tenant_of(ctx)

        def call() -> str:
            with services.conn() as conn:
                return recent(
                    conversation_id,
                    tenant=who,
                    days=days,
                    limit=limit,
                    max_tokens=max_tokens,
                    settings=services.settings,
                    conn=conn,
                ).text

        return await run(call)

    @server.tool(
        description="The conversation's manifest: its episodes as a tree by day (Today, Yesterday, dates), "
        "each with its time range and short title; the segment still open is marked Active."
    )
    async def manifest(
        conversation_id: ConversationId,
        ctx: Context,
        depth: Annotated[int | None, Field(description="Most entries shown (default 30).")] = None,
        timezone: Annotated[str | None, Field(description="IANA time zone for days and times (default UTC).")] = None,
    ) -> str:
        from memq.shared.context.service import manifest as read

        who = tenant_of(ctx)

        def call() -> str:
            with services.conn() as conn:
                return read(
                    conversation_id,
                    tenant=who,
                    depth=depth,
                    tz=timezone,
                    settings=services.settings,
                    conn=conn,
                    client=services.redis,
                ).text

        return await run(call)

    @server.tool(
        description="What to read at the start of a new session: a note that older history is searchable, "
        "the latest episode summaries, the last messages before the open segment, the time since "
        "then, and the open segment's messages."
    )
    async def session_context(
        conversation_id: ConversationId,
        ctx: Context,
        max_tokens: Annotated[int | None, Field(description="Budget in tokens (default 2000).")] = None,
        timezone: Annotated[str | None, Field(description="IANA time zone (default UTC).")] = None,
    ) -> str:
        from memq.shared.context.service import session_context as read

        who = tenant_of(ctx)

        def call() -> str:
            with services.conn() as conn:
                return read(
                    conversation_id,
                    tenant=who,
                    max_tokens=max_tokens,
                    tz=timezone,
                    settings=services.settings,
                    conn=conn,
                    client=services.redis,
                ).text

        return await run(call)

    return server
