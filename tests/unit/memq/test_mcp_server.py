"""The MCP server's tools without services: the table is what the server registers, every
tool goes through the one scaffold (tenant, connection, errors), and every list of the
tools (README, docs, ``memq mcp --help``, the server's instructions) names them all."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import anyio
import pytest

from memq.mcp_server import INSTRUCTIONS, TOOLS, tool_names
from memq.shared.errors import MemqError

ROOT = Path(__file__).resolve().parents[3]
NAMES = set(tool_names())


def test_the_tools():
    assert tool_names() == ["retrieve_memory", "search_facts", "recent_memory", "manifest", "session_context"]


# ---------------------------------------------------------------- every list names every tool


# names in backticks one after the other: "`a`, `b` and `c`", "`a` / `b`", "`a` or `b`"
LISTED = re.compile(r"`\w+`(?:(?:\s*[,/]\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)`\w+`)+")


def _tool_lists() -> list[tuple[str, set[str]]]:
    """Every list of MCP tools in the README and docs/: names in backticks one after the
    other, two or more of them tools, in a paragraph that says MCP."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for paragraph in re.split(r"\n\s*\n", path.read_text()):
            if "MCP" not in paragraph:
                continue
            for listed in LISTED.finditer(paragraph):
                named = set(re.findall(r"`(\w+)`", listed.group())) & NAMES
                if len(named) >= 2:
                    found.append((f"{path.relative_to(ROOT)}: {listed.group()[:50]!r}", named))
    return found


def test_every_list_of_tools_in_the_readme_and_docs_names_every_tool():
    lists = _tool_lists()
    where = {entry.split(":")[0] for entry, _ in lists}
    assert {"README.md", "docs/api.md"} <= where  # the lists this test is for are still found
    missing = {entry: sorted(NAMES - named) for entry, named in lists if named != NAMES}
    assert not missing


def test_the_instructions_and_the_module_docstring_name_every_tool():
    import memq.mcp_server

    for name in NAMES:
        assert name in INSTRUCTIONS
        assert f"``{name}``" in (memq.mcp_server.__doc__ or "")


def test_memq_mcp_help_names_every_tool():
    from click.testing import CliRunner

    from memq.cli.servers import mcp_cmd

    shown = CliRunner().invoke(mcp_cmd, ["--help"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert f"Tools: {', '.join(tool_names())}, in one tenant." in " ".join(shown.output.split())


# ---------------------------------------------------------------- the server and its scaffold

mcp = pytest.importorskip("mcp")

from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402 - only once importorskip found the SDK

from memq.mcp_server import build_server  # noqa: E402 - the same


class _Memory:
    """What a tool uses of memq.memory.Memory: the tenant it is bound to, and its methods
    (manifest spied on, see ``_manifest_spy``)."""

    calls: ClassVar[list[dict]] = []

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant

    def manifest(self, conversation_id, **kwargs):
        self.calls.append({"conversation_id": conversation_id, "tenant": self.tenant, **kwargs})
        if conversation_id == "bad":
            raise MemqError("conversation_id: not a conversation id")
        return SimpleNamespace(text=f"manifest of {conversation_id} for {self.tenant}")


class _Services:
    """What build_server uses of memq.api.services.Services: a memory per call, bound to
    the call's tenant."""

    def __init__(self) -> None:
        self.settings = SimpleNamespace(tenant="default-tenant")
        self.bound: list[str] = []

    def memory(self, tenant: str) -> _Memory:
        self.bound.append(f"bound to {tenant}")
        return _Memory(tenant)


def _context(tenant: str | None = None):
    """A tool call's context: over HTTP (the tenant the key chose on the request's state) or stdio."""
    request = None if tenant is None else SimpleNamespace(state=SimpleNamespace(memq_tenant=tenant))
    return SimpleNamespace(request_context=SimpleNamespace(request=request))


def test_the_server_registers_the_table():
    server = build_server(_Services(), tenant="t")
    listed = anyio.run(server.list_tools)
    assert [t.name for t in listed] == tool_names()
    for spec, listed_tool in zip(TOOLS, listed, strict=True):
        assert listed_tool.description == spec.description
        schema = listed_tool.input_schema
        assert schema["title"] == f"{spec.name}Arguments"
        assert "call" not in schema["properties"] and "ctx" not in schema["properties"]
        assert all(p.get("description") for p in schema["properties"].values())
    by_name = {t.name: t.input_schema for t in listed}
    assert by_name["retrieve_memory"]["required"] == ["query"]
    assert by_name["search_facts"]["required"] == ["query"]
    for name in ("manifest", "session_context"):
        assert by_name[name]["required"] == ["conversation_id"]
    assert "required" not in by_name["recent_memory"]  # a conversation_id or a user_id
    for name in ("retrieve_memory", "search_facts", "recent_memory", "manifest", "session_context"):
        assert "user_id" in by_name[name]["properties"]
    assert set(by_name["retrieve_memory"]["properties"]) == {
        "query",
        "conversation_id",
        "conversation_ids",
        "detail",
        "max_tokens",
        "limit",
        "since",
        "until",
        "asked_in",
        "user_id",
    }


def _manifest_spy(monkeypatch, calls: list[dict]):
    monkeypatch.setattr(_Memory, "calls", calls)


def _call(server, name, arguments, context):
    async def call():
        return await server.call_tool(name, arguments, context)

    return anyio.run(call)


def test_a_tool_gets_the_tenants_memory_and_its_arguments(monkeypatch):
    calls: list[dict] = []
    _manifest_spy(monkeypatch, calls)
    services = _Services()
    server = build_server(services, tenant="stdio-tenant")

    over_stdio = _call(server, "manifest", {"conversation_id": "c1", "depth": 3}, _context())
    over_http = _call(server, "manifest", {"conversation_id": "c1"}, _context("key-tenant"))

    assert over_stdio.content[0].text == "manifest of c1 for stdio-tenant"
    assert over_http.content[0].text == "manifest of c1 for key-tenant"
    assert calls[0] == {
        "conversation_id": "c1",
        "tenant": "stdio-tenant",
        "user_id": None,
        "depth": 3,
        "timezone": None,
    }
    assert services.bound == ["bound to stdio-tenant", "bound to key-tenant"]


def test_without_a_fixed_tenant_stdio_uses_the_settings(monkeypatch):
    calls: list[dict] = []
    _manifest_spy(monkeypatch, calls)
    _call(build_server(_Services()), "manifest", {"conversation_id": "c1"}, _context())
    assert calls[0]["tenant"] == "default-tenant"


def test_memq_errors_are_tool_errors_the_model_reads(monkeypatch):
    _manifest_spy(monkeypatch, [])
    server = build_server(_Services(), tenant="t")
    with pytest.raises(ToolError, match="conversation_id: not a conversation id"):
        _call(server, "manifest", {"conversation_id": "bad"}, _context())


def test_an_http_request_without_a_tenant_is_refused(monkeypatch):
    calls: list[dict] = []
    _manifest_spy(monkeypatch, calls)
    server = build_server(_Services(), tenant="t")
    context = SimpleNamespace(request_context=SimpleNamespace(request=SimpleNamespace(state=SimpleNamespace())))
    with pytest.raises(ToolError, match="no tenant for this request"):
        _call(server, "manifest", {"conversation_id": "c1"}, context)
    assert calls == []
