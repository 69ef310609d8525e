"""Which tools a segment used (as MIRA's segments record ``tools_used``): tool
messages (``metadata.tool_name`` or ``metadata.name``) and assistant tool calls
(``metadata.tool_calls[*].name`` or ``[*].function.name``). Deduplicated, in order
of first use.

Defensive about shapes: the producer's validator enforces the documented ones, but
messages queued before it did (or written by another producer) reach the worker too,
and a segment must never fail because of its metadata. Anything that is not a
non-blank string where a name should be is ignored; names have their whitespace
collapsed and are cut at ``NAME_MAX_CHARS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

NAME_MAX_CHARS = 200
UNNAMED = "unnamed_tool"


def tool_name(value: Any) -> str | None:
    """``value`` as a tool name, or None when it is not a non-blank string."""
    if not isinstance(value, str):
        return None
    name = " ".join(value.split())[:NAME_MAX_CHARS].strip()
    return name or None


def tools_used(messages: Sequence[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for m in messages:
        meta = m.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        if m.get("role") == "tool":
            seen.setdefault(tool_name(meta.get("tool_name")) or tool_name(meta.get("name")) or UNNAMED, None)
        calls = meta.get("tool_calls")
        if not isinstance(calls, list):
            continue
        for call in calls:
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            name = tool_name(call.get("name")) or (
                tool_name(function.get("name")) if isinstance(function, dict) else None
            )
            if name:
                seen.setdefault(name, None)
    return list(seen)
