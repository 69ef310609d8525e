"""The entry points reach the read side through ``memq.memory.Memory`` only: no adapter (the
HTTP API, the MCP server, the CLI, the inspector) calls retrieval, the session context,
the manifest, facts search, export or import by their functions, so each of those is bound
(tenant, settings, connections) in one place. Checked on the source of every import."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
ADAPTERS = [ROOT / "memq" / "api", ROOT / "memq" / "cli", ROOT / "memq" / "mcp_server.py"]
# what Memory's methods wrap: an adapter importing one of these goes around the bound object
WRAPPED = {
    "memq.memory.retrieval.service": {"retrieve_memory", "recent_memory", "retrieve"},
    "memq.memory.retrieval.facts": {"find_facts"},
    "memq.memory.context.service": {"manifest", "session_context"},
    "memq.memory.portability.export": {"export_records", "export_lines", "count_rows"},
    "memq.memory.portability.importer": {"import_lines", "Importer"},
}


def _files() -> list[Path]:
    found: list[Path] = []
    for place in ADAPTERS:
        found += [place] if place.is_file() else sorted(place.rglob("*.py"))
    return found


def test_the_adapters_call_the_read_side_through_memory_only():
    offenders = []
    for path in _files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module in WRAPPED:
                bad = {a.name for a in node.names} & WRAPPED[node.module]
                offenders += [f"{path.relative_to(ROOT)}: {node.module}.{name}" for name in sorted(bad)]
            elif isinstance(node, ast.Import):
                offenders += [f"{path.relative_to(ROOT)}: import {a.name}" for a in node.names if a.name in WRAPPED]
    assert offenders == []


def test_the_guard_sees_the_adapters():
    names = {p.relative_to(ROOT).as_posix() for p in _files()}
    assert {"memq/api/routes/memory.py", "memq/cli/retrieve.py", "memq/mcp_server.py"} <= names
