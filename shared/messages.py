"""How a stored message reads: who said it and the text it is searched by."""

from __future__ import annotations

from typing import Any


def speaker_of(message: dict[str, Any]) -> str | None:
    """The participant's name (``metadata.name``, as in OpenAI's chat format), when the
    producer gave one; tool messages' names are tool names, not speakers."""
    meta = message.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, dict) else None
    if message.get("role") == "tool" or not isinstance(name, str) or not name.strip():
        return None
    return " ".join(name.split())[:100]


def indexed_text(message: dict[str, Any]) -> str:
    """The text a message is embedded by: its content, after its speaker's name."""
    speaker = speaker_of(message)
    return f"{speaker}: {message['content']}" if speaker else message["content"]
