"""Which tools a segment used (as MIRA's segments record ``tools_used``): tool
messages (``metadata.tool_name`` or ``metadata.name``) and assistant tool calls
(``metadata.tool_calls[*].name`` or ``[*].function.name``). Deduplicated, in order
of first use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def tools_used(messages: Sequence[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for m in messages:
        meta = m.get("metadata") or {}
        if m.get("role") == "tool":
            name = meta.get("tool_name") or meta.get("name")
            seen.setdefault(str(name) if name else "unnamed_tool", None)
        for call in meta.get("tool_calls") or []:
            if isinstance(call, dict):
                name = call.get("name") or (call.get("function") or {}).get("name")
                if name:
                    seen.setdefault(str(name), None)
    return list(seen)
