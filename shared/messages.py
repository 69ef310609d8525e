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
    """The text a message is embedded by: its content alone.

    Who said it is a signal of its own (``episode_message.speaker``, matched against the
    participants a query names; see ``memq/memory/retrieval/participants.py``), not part of
    the vector: all-MiniLM-L6-v2 reads a short message mostly by a name put in front of
    it. Measured on LoCoMo: with names taken out of queries, content-only vectors match
    or beat "speaker (day): content" at every budget."""
    content: str = message["content"]
    return content
