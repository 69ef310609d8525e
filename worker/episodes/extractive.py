"""Extractive titles and summaries: the no-LLM path (and the fallback when the LLM
fails). Pure and deterministic.

- The **title** names the topic: the episode's best key phrases (``key_phrases.py``:
  runs of content words weighted by the messages that hold them, names and numbers
  kept), joined as "A, B and C", 3 to 10 words; never the first words of a message, never
  a cut word or a dangling quote.
- The **summary** says who, when, what: the participants (their names when the producer
  gave them) and the dates, then the most central sentences quoted in their original
  order and attributed to their speakers (SumBasic-style centrality: how many of the
  episode's frequent content words a sentence carries), then the key phrases and the
  tools used.

Sizes are bounded whatever the input: a quoted sentence is cut at ``QUOTE_MAX_WORDS``
words or ``QUOTE_MAX_CHARS`` characters, the title at ``TITLE_MAX_CHARS``, a "word"
longer than ``WORD_MAX_CHARS`` (a hash, base64, one letter repeated) is never a key
phrase, and at most ``TOOLS_LISTED`` tools and ``PARTICIPANTS_LISTED`` participants are
named. A message may be 100,000 characters of one sentence; quoted whole, the summary
would be as long, and a remote embedding model refuses input over its context (8,191
tokens for OpenAI's), a deterministic failure that would quarantine the segment.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from memq.shared.messages import speaker_of
from memq.worker.episodes.key_phrases import Phrase, key_phrases
from memq.worker.episodes.words import content_words, language, specificity, stop_words

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
ROLE_NAMES = {"user": "The user", "assistant": "The assistant", "system": "The system", "tool": "A tool"}
QUOTE_MAX_WORDS = 60
QUOTE_MAX_CHARS = 400
TITLE_MAX_CHARS = 120
TITLE_PHRASES = 3
KEY_TERMS = 8
TOOLS_LISTED = 20
PARTICIPANTS_LISTED = 4
ELLIPSIS = "\u2026"
COMMON = 0.9  # specificity below which a word is common enough to capitalise at a title's start


@dataclass(frozen=True)
class Sentence:
    position: int
    role: str
    speaker: str | None
    text: str


def joined(items: Sequence[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _sentences(messages: Sequence[dict[str, Any]]) -> list[Sentence]:
    out: list[Sentence] = []
    for m in messages:
        if m["role"] not in ("user", "assistant"):
            continue
        for part in _SENTENCE.split(m["content"]):
            part = " ".join(part.split())
            if len(part.split()) >= 3:
                out.append(Sentence(len(out), m["role"], speaker_of(m), part))
    return out


def _scores(sentences: Sequence[Sentence], stop: frozenset[str]) -> list[float]:
    words = [set(content_words(s.text, stop)) for s in sentences]
    freq: Counter[str] = Counter()
    for w in words:
        freq.update(w)
    return [sum(freq[x] for x in w) / (len(w) ** 0.5 + 1) if w else 0.0 for w in words]


def _clip(text: str, max_words: int, max_chars: int) -> str:
    """At most ``max_words`` words and about ``max_chars`` characters (cut at a word
    boundary when there is one in the second half), with an ellipsis when cut."""
    words = text.split()
    out = " ".join(words[:max_words])
    cut = len(words) > max_words
    if len(out) > max_chars:
        head = out[:max_chars]
        space = head.rfind(" ")
        out = head[:space] if space > max_chars // 2 else head
        cut = True
    return out + ELLIPSIS if cut else out


def participants(messages: Sequence[dict[str, Any]]) -> str:
    """Who took part: their names in order of first word, else the roles ("The user and
    the assistant")."""
    names: list[str] = []
    roles: list[str] = []
    for m in messages:
        name = speaker_of(m)
        if name and name not in names:
            names.append(name)
        if m["role"] in ("user", "assistant") and m["role"] not in roles:
            roles.append(m["role"])
    if names:
        more = len(names) - PARTICIPANTS_LISTED
        shown = names[:PARTICIPANTS_LISTED] + ([f"{more} more"] if more > 0 else [])
        return joined(shown)
    spoken = [ROLE_NAMES[r] for r in roles] or ["A tool"]
    return joined([spoken[0], *(s.lower() for s in spoken[1:])])


def _date(ts: datetime) -> str:
    return f"{ts.day} {ts:%B %Y}"


def when(messages: Sequence[dict[str, Any]]) -> str | None:
    """The day (or days) the messages were sent on, e.g. "8 May 2023" or "8 May 2023 to
    10 May 2023"; None when a timestamp is missing or unreadable."""
    try:
        first = datetime.fromisoformat(messages[0]["timestamp"])
        last = datetime.fromisoformat(messages[-1]["timestamp"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return _date(first) if first.date() == last.date() else f"{_date(first)} to {_date(last)}"


PHRASES = max(KEY_TERMS, 3 * TITLE_PHRASES)  # what the title picks from, the key terms' first


def episode_phrases(messages: Sequence[dict[str, Any]], vectors: np.ndarray | None = None) -> list[Phrase]:
    """The key phrases a title and a summary of ``messages`` are made of, computed once."""
    return key_phrases(messages, vectors, k=PHRASES)


def extractive_title(
    messages: Sequence[dict[str, Any]],
    min_words: int = 3,
    max_words: int = 10,
    vectors: np.ndarray | None = None,
    phrases: Sequence[Phrase] | None = None,
) -> str:
    """The episode's best key phrases, "A, B and C" (``TITLE_PHRASES`` of them, more when
    needed to reach ``min_words``), at most ``max_words`` words. ``vectors``: the
    messages' embeddings, in order; ``phrases``: ``episode_phrases`` when already computed."""
    chosen: list[str] = []
    for phrase in episode_phrases(messages, vectors) if phrases is None else phrases:
        candidate = joined([*chosen, phrase.text])
        if len(candidate.split()) > max_words or len(candidate) > TITLE_MAX_CHARS:
            continue
        chosen.append(phrase.text)
        if len(chosen) >= TITLE_PHRASES and len(candidate.split()) >= min_words:
            break
    if chosen:
        title = joined(chosen)
        count = len(title.split())
        if count < min_words and count + 2 <= max_words:
            title = f"Conversation about {title}"
    else:  # nothing but stop words, numbers or tool output
        who = participants(messages)
        who = who[0].lower() + who[1:] if who.startswith(("The ", "A ")) else who
        title = f"Short exchange between {who}" if " and " in who else f"Short exchange with {who}"
        if len(title.split()) > max_words:
            title = "Short exchange"
    return _fit(_capitalised(title), min_words, max_words)


def _capitalised(title: str) -> str:
    """The title with a capital first letter when its first word is a common word ("pot" ->
    "Pot"); a name, identifier or jargon keeps its spelling ("iPhone", "asyncio")."""
    first = title.split(" ", 1)[0].rstrip(",")
    if not first[:1].islower() or any(ch.isupper() or ch.isdigit() for ch in first) or specificity(first) >= COMMON:
        return title
    return title[:1].upper() + title[1:]


def _fit(title: str, min_words: int, max_words: int) -> str:
    """Between ``min_words`` and ``max_words`` words, whatever the settings ask: padded with
    "(short exchange)", cut at a phrase boundary where one is close enough."""
    words = title.split()
    while len(words) < min_words:
        words += ["(short", "exchange)"]
    if len(words) > max_words:
        words = words[:max_words]
        while len(words) > max(min_words, 1) and (
            words[-1] in ("and", "about", "between", "with") or words[-1].endswith(",")
        ):
            if words[-1].endswith(","):
                words[-1] = words[-1].rstrip(",")
                break
            words.pop()
    return " ".join(words)


def extractive_summary(
    messages: Sequence[dict[str, Any]],
    max_sentences: int = 4,
    tools: Sequence[str] = (),
    vectors: np.ndarray | None = None,
    phrases: Sequence[Phrase] | None = None,
) -> str:
    """``phrases``: ``episode_phrases`` when already computed (its first ``KEY_TERMS`` are listed)."""
    sentences = _sentences(messages)
    roles = Counter(m["role"] for m in messages)
    parts = [f"{roles[r]} {r}" for r in ("user", "assistant", "tool", "system") if roles[r]]
    date = when(messages)
    n = len(messages)
    who = participants(messages) + (f", {date}" if date else "")
    head = f"{who}: {n} message{'s' if n != 1 else ''} ({', '.join(parts)})."
    body: list[str] = []
    if sentences:
        scores = _scores(sentences, stop_words(language(s.text for s in sentences)))
        ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))[:max_sentences]
        for i in sorted(ranked):
            s = sentences[i]
            who = s.speaker or ROLE_NAMES.get(s.role, s.role)
            body.append(f"{who} said: \u201c{_clip(s.text, QUOTE_MAX_WORDS, QUOTE_MAX_CHARS)}\u201d")
    else:
        text = " ".join(" ".join(m["content"].split()) for m in messages)[:300]
        body.append(f"Content: \u201c{text}\u201d")
    terms = [p.text for p in (episode_phrases(messages, vectors) if phrases is None else phrases)[:KEY_TERMS]]
    tail = []
    if terms:
        tail.append("Key terms: " + ", ".join(terms) + ".")
    if tools:
        more = f" and {len(tools) - TOOLS_LISTED} more" if len(tools) > TOOLS_LISTED else ""
        tail.append("Tools used: " + ", ".join(tools[:TOOLS_LISTED]) + more + ".")
    return " ".join([head, *body, *tail])
