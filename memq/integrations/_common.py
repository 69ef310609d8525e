"""What the integrations share, free of any framework: message ids, what a conversation's
history reads back as, and the text the memory tools answer."""

from __future__ import annotations

import hashlib
from typing import Any

from memq.client.models import ContextOut, FactOut, FactSearchOut, ManifestOut, MemoryOut, RetrieveOut, SaidOut

HISTORY_ROLES = ("user", "assistant", "system")
"""The roles a history reads back. Tool activity (a call, its result) is stored as a ``tool``
message, in memory and on the episode's tools, but not read back: memq does not return the
call ids that pair a call with its result, and a chat model refuses a result without its call."""

HISTORY_MESSAGES = 100
"""Stored messages read back before those not yet in an episode (the API's ``continuity``, at most 100)."""
HISTORY_MAX_TOKENS = 16_000
"""The token budget of that read (``MEMQ_RETRIEVAL_MAX_TOKENS_MAX``'s default): older messages are left out."""

RETRIEVE_DESCRIPTION = (
    "Search long-term memory: the most relevant episodes of earlier conversation and the messages in them "
    "that matter, as markdown. Ask in words what to remember; name a time ('last week') to prefer it."
)
FACTS_DESCRIPTION = (
    "Search the facts distilled from earlier conversation (who people are, what they prefer, want, did; "
    "each with its category and since when it is true)."
)
MANIFEST_DESCRIPTION = (
    "The conversation's manifest: the topics talked about so far as a tree by day, each with its time "
    "range and short title; the part not yet stored is marked Active."
)


def message_id(given: object) -> str | None:
    """The memq message id for an id the framework gave (None when it gave none): the id
    itself when memq takes it (1 to 200 printable ASCII characters), else its digest. The same
    id always maps to the same memq id, so sending a message again is a ``duplicate``."""
    if not isinstance(given, str) or not given:
        return None
    if len(given) <= 200 and given.isascii() and given.isprintable():
        return given
    return "sha256:" + hashlib.sha256(given.encode()).hexdigest()


def tool_call_text(name: str, arguments: str) -> str:
    """How a tool call reads in memory (a ``tool`` message: memq needs text)."""
    return f"{name}({arguments})"


def history(context: ContextOut) -> list[SaidOut]:
    """The conversation's latest messages as memq holds them, oldest first: the last stored
    ones (``continuity``), then those not yet in an episode (``open_segment``); tool messages
    left out (:data:`HISTORY_ROLES`)."""
    return [m for m in [*context.continuity, *context.open_segment] if m.role in HISTORY_ROLES]


def fact_line(fact: FactOut) -> str:
    since = f", since {fact.valid_at[:10]}" if fact.valid_at else ""
    return f"- {' '.join(fact.content.split())} ({fact.category}{since})"


def facts_text(found: FactSearchOut) -> str:
    return "\n".join(fact_line(f) for f in found.facts) or f"No facts match “{found.query}”."


def memory_text(found: RetrieveOut) -> str:
    return found.text.strip() or f"Nothing in memory about “{found.query}”."


def manifest_text(manifest: ManifestOut) -> str:
    return manifest.text.strip() or "Nothing talked about yet."


def document_parts(memory: MemoryOut) -> tuple[str, dict[str, Any]]:
    """One retrieved episode as a document: its title, its summary (when retrieval showed it)
    and the messages retrieval showed, a line each; and its metadata (ids, time, scores)."""
    lines = [memory.title]
    if memory.summary_shown and memory.summary:
        lines.append(memory.summary)
    lines += [f"{m.speaker or m.role}: {m.content}" for m in memory.messages]
    metadata: dict[str, Any] = {
        "episode_id": memory.id,
        "conversation_id": memory.conversation_id,
        "title": memory.title,
        "start_at": memory.start_at,
        "end_at": memory.end_at,
        "message_count": memory.message_count,
        "rank": memory.rank,
        "score": memory.scores.final,
        "scores": memory.scores.model_dump(),
    }
    return "\n".join(lines), metadata
