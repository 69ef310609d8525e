"""The MCP server through the official SDK's client: over stdio (``memq mcp`` as a
subprocess, as agent frameworks start it) and over streamable HTTP on the API with a
bearer key. Tools are listed with descriptions and JSON schemas and answer from the
same library as the API."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import numpy as np
import pytest
from mcp.types import TextContent
from test_retrieval import write_episode

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
TOOLS = {"retrieve_memory", "recent_memory", "manifest", "session_context", "search_facts"}


@pytest.fixture
def stored(db, settings, tenant) -> str:
    v = np.zeros(settings.embedding_dim, dtype=np.float32)
    v[7] = 1.0
    return write_episode(
        db,
        settings,
        tenant,
        "mcp-conv",
        title="Choosing a database for the ledger",
        summary="They picked PostgreSQL for the ledger.",
        vector=v,
        start=datetime.now(UTC) - timedelta(hours=3),
        messages=[("user", "Which database for the ledger?", v), ("assistant", "PostgreSQL.", v)],
    )


def test_mcp_over_stdio_lists_and_calls_the_tools(stored, tenant, service_env, db, settings):
    from mcp import Client, StdioServerParameters
    from test_retrieval import other_tenant

    v = np.zeros(settings.embedding_dim, dtype=np.float32)
    v[8] = 1.0
    stranger = other_tenant()
    write_episode(
        db,
        settings,
        stranger,
        "mcp-conv",
        title="Someone else's secret plans",
        summary="Not yours.",
        vector=v,
        start=datetime.now(UTC) - timedelta(hours=1),
        messages=[("user", "secret", v)],
    )
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "memq"),
        args=["mcp", "--tenant", tenant],
        env={**os.environ, **service_env},
        cwd=str(ROOT),
    )

    async def session():
        async with Client(params, read_timeout_seconds=120) as client:
            listed = await client.list_tools()
            tools = {t.name: t for t in listed.tools}
            assert set(tools) == TOOLS
            for t in tools.values():
                assert t.description and t.input_schema["type"] == "object"
            assert tools["retrieve_memory"].input_schema["required"] == ["query"]
            manifest = await client.call_tool("manifest", {"conversation_id": "mcp-conv"})
            recent = await client.call_tool("recent_memory", {"conversation_id": "mcp-conv"})
            context = await client.call_tool("session_context", {"conversation_id": "mcp-conv"})
            found = await client.call_tool(
                "retrieve_memory", {"query": "ledger database", "conversation_id": "mcp-conv"}
            )
            bad = await client.call_tool("retrieve_memory", {"query": ""})
            return manifest, recent, context, found, bad

    manifest, recent, context, found, bad = anyio.run(session)
    assert "Choosing a database for the ledger" in manifest.content[0].text
    assert "secret" not in manifest.content[0].text  # another tenant's conversation of the same name
    assert "They picked PostgreSQL" in recent.content[0].text
    assert "[Earlier conversation: 1 episode is stored" in context.content[0].text
    assert "PostgreSQL" in found.content[0].text and not found.is_error
    assert bad.is_error and "query: is empty" in bad.content[0].text


def test_mcp_over_http_needs_the_key(served, stored, auth):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def tools(headers):
        async with Client(
            streamable_http_client(f"{served}/mcp", http_client=httpx2.AsyncClient(headers=headers))
        ) as c:
            listed = await c.list_tools()
            content = (await c.call_tool("manifest", {"conversation_id": "mcp-conv"})).content[0]
            assert isinstance(content, TextContent)
            text = content.text
            return {t.name for t in listed.tools}, text

    names, text = anyio.run(tools, auth)
    assert names == TOOLS and "Choosing a database for the ledger" in text
    with httpx2.Client() as http:
        refused = http.post(
            f"{served}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={
                "Authorization": "Bearer memq_wrongwrong_" + "x" * 43,
                "accept": "application/json, text/event-stream",
            },
        )
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
