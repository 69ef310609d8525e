"""How many of a scope's messages hold each word, remembered per process: what the
common words of a query are found from (``common_words.py``).

Counting costs a pass over the scope's messages (``legs.word_counts``, ~6 ms for 500 long
messages), and an agent asks of the same conversation or user again and again: a word's
lexemes are remembered for good (stemming does not change), a scope's counts for
``MEMQ_LEXICAL_COMMON_CACHE_SECONDS`` (new messages change them by little), so a query
whose words were all seen in its scope costs no round trip. A scope too large to count
(``MEMQ_LEXICAL_COMMON_MAX_MESSAGES``) is remembered as such.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import psycopg

from memq.memory.retrieval import legs
from memq.memory.retrieval.request import RetrievalRequest

MAX_WORDS = 100_000  # words remembered with their lexemes (cleared past it)
MAX_SCOPES = 10_000  # scopes remembered with their counts (cleared past it)


@dataclass
class _Counts:
    expires: float
    total: int
    counted: bool  # False: the scope is too large to count
    lexemes: dict[str, int] = field(default_factory=dict)  # lexeme -> messages holding it


_lexemes: dict[str, tuple[str, ...]] = {}
_scopes: dict[tuple[object, ...], _Counts] = {}
_lock = threading.Lock()


def word_counts(
    conn: psycopg.Connection, request: RetrievalRequest, words: list[str], most: int, keep_seconds: float
) -> tuple[list[tuple[str, list[int]]], int] | None:
    """Each word with its lexemes' message counts in the request's scope, and the scope's
    message count; None when the scope holds more than ``most`` messages."""
    key = (request.tenant, request.conversation_ids, request.time_range)
    now = time.monotonic()
    with _lock:
        counts = _scopes.get(key)
        if counts is not None and counts.expires < now:
            counts = None
        if counts is not None and not counts.counted:
            return None
        if counts is not None and all(w in _lexemes for w in words):
            known = [(w, [counts.lexemes.get(lx) for lx in _lexemes[w]]) for w in words]
            if all(c is not None for _, cs in known for c in cs):
                return [(w, [int(c) for c in cs if c is not None]) for w, cs in known], counts.total
    found, total = legs.word_counts(conn, request, words, most)
    with _lock:
        if len(_lexemes) > MAX_WORDS:
            _lexemes.clear()
        if len(_scopes) > MAX_SCOPES:
            _scopes.clear()
        counted = all(c is not None for _, _, c in found)
        fresh = _scopes.get(key)
        if fresh is None or fresh.expires < now or fresh.counted != counted:
            fresh = _scopes[key] = _Counts(now + keep_seconds, total, counted)
        for word, lexemes, cs in found:
            _lexemes[word] = lexemes
            if cs is not None:
                fresh.lexemes.update(zip(lexemes, cs, strict=True))
    if not counted:
        return None
    return [(word, list(cs or ())) for word, _, cs in found], total
