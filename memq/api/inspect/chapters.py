"""The chapters a conversation page draws its events in: read through the tenant's bound
``Memory`` (``Memory.chapters``, docs/inspector.md), and kept in a small cache of this
process for as long as the conversation's stored episodes stay the same.

Chapters are drawn when read (the messages' words and embeddings through a scorer,
titles without an LLM), which costs far more than the page's own two queries; the same
episodes always make the same chapters, so a page viewed again does not draw them anew.
The cache is keyed by the tenant, the conversation and a digest of its episodes (id,
title, span, messages, who wrote the summary): a new, changed or forgotten episode is a
miss."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from memq.api.services import Services
from memq.memory.chapters.chapter import Chapter
from memq.shared.episode_listing import EpisodeListing

log = structlog.get_logger("memq.api.inspect")

MAX_DEPTH = 500  # what Memory.chapters accepts
CACHED = 64  # conversations

_cache: OrderedDict[tuple[str, str, str], list[Chapter]] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True)
class Drawn:
    chapters: list[Chapter]
    problem: str | None = None  # why there are none, when drawing them failed


def _digest(episodes: Sequence[EpisodeListing]) -> str:
    h = hashlib.sha256()
    for e in episodes:
        h.update(
            f"{e.id}|{e.title}|{e.start_at.isoformat()}|{e.end_at.isoformat()}|{e.message_count}|"
            f"{e.summary_source}\n".encode()
        )
    return h.hexdigest()


def chapters(svc: Services, tenant: str, conversation_id: str, episodes: Sequence[EpisodeListing]) -> Drawn:
    """The chapters of the conversation's newest episodes (as many as the page shows, 500
    at most), oldest first."""
    if not episodes:
        return Drawn([])
    depth = min(len(episodes), MAX_DEPTH)
    key = (tenant, conversation_id, f"{depth}:{_digest(episodes)}")
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return Drawn(found)
    try:
        found = svc.memory(tenant).chapters(conversation_id, depth=depth)
    except Exception as e:  # the timeline is still worth showing without its chapters
        log.warning("chapters_failed", tenant=tenant, conversation_id=conversation_id, error=repr(e))
        return Drawn([], f"{type(e).__name__}: {e}")
    with _lock:
        _cache[key] = found
        _cache.move_to_end(key)
        while len(_cache) > CACHED:
            _cache.popitem(last=False)
    return Drawn(found)


def clear() -> None:
    with _lock:
        _cache.clear()
