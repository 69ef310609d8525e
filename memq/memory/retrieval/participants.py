"""Participants a query names (pure).

Questions about a conversation often name who said something ("What did Caroline
research?"). all-MiniLM-L6-v2 reads a short text mostly by such a name, so a query
vector carrying it finds that person's short, empty messages ("Hey Caroline!") before
the one that answers, and the lexical leg matches every message the person wrote. So a
participant's name is taken out of the text that is searched and becomes a signal of
its own: messages by the named participant gain ``MEMQ_SPEAKER_MATCH_WEIGHT``
(``relevance.py``). Measured on LoCoMo (``memq eval-locomo``), see the README.

Names match whole words, case-sensitively (a participant called "May" is not named by
"may"), with an optional possessive ("Caroline's"). Times are read from the original
query, not from the stripped one.

An agent's memory has one participant no name stands for: the assistant, "you" in a
question the user asks it ("what was the trail you recommended?"). Such a question is
about what the assistant said, so the assistant's messages that match are its answer,
not context to be cut short (``asks_what_the_assistant_said``; ``selection.py`` shows
them whole before anything is excerpted).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class QueryTerms:
    named: frozenset[str]  # participants the query names
    search_text: str  # the query without them: what the legs search by


def _pattern(name: str) -> str:
    escaped = re.escape(name)
    left = r"(?<!\w)" if name[:1].isalnum() or name[:1] == "_" else ""
    return rf"{left}{escaped}(?:['’]s)?(?!\w)"


def query_terms(query: str, participants: Iterable[str]) -> QueryTerms:
    """The participants ``query`` names and the query without their names. When nothing
    but names is left, the query is searched as it is."""
    named: set[str] = set()
    text = query
    # longer names first, so "Anna Lee" is taken before "Anna"
    for name in sorted({p for p in participants if p and p.strip()}, key=lambda p: (-len(p), p)):
        stripped, n = re.subn(_pattern(name), " ", text)
        if n:
            named.add(name)
            text = stripped
    text = " ".join(text.split())
    text = re.sub(r"\s+([?.!,;:])", r"\1", text)
    if not named or not re.search(r"\w", text):
        return QueryTerms(frozenset(named), query)
    return QueryTerms(frozenset(named), text)


# "you" as the one who said or gave something: a verb of telling, advising or making
# within two words after it ("you recommended", "you kindly suggested", "you came up
# with" is not caught: a list, not a parser). A request to the assistant ("can you
# remind me", "could you suggest") is not about what it said: the verb's own form after
# "can/could/would/will you" is left out.
_TOLD = re.compile(
    r"(?<!\bcan )(?<!\bcould )(?<!\bwould )(?<!\bwill )\byou\s+(?:\w+\s+){0,2}?"
    r"(?:recommended|mentioned|suggested|said|told|gave|provided|listed|created|wrote|explained|shared|offered"
    r"|described|named|proposed|advised|showed|taught|came up with|helped me)\b",
    re.IGNORECASE,
)


# a past conversation with the assistant, named as such ("in our previous conversation")
_EARLIER_CHAT = re.compile(
    r"\b(?:our|the|that)\s+(?:previous|last|earlier|past|other)\s+(?:conversation|chat|discussion)s?\b", re.IGNORECASE
)


def asks_what_the_assistant_said(query: str) -> bool:
    """Whether the query asks about something the assistant said or made ("the Jamaican
    dish you recommended", "you mentioned some resources"), or recalls a past
    conversation with it as such ("our previous conversation about posture")."""
    return bool(_TOLD.search(query) or _EARLIER_CHAT.search(query))
