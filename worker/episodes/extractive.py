"""Extractive titles and summaries: the no-LLM path (and the fallback when the LLM
fails). Pure and deterministic.

- The **title** reads as one a person would write: the subject of the messages, then
  what about it, "<subject>: <aspect> and <aspect>" ("Lisbon trip: May 8 and Príncipe
  Real", "Synology DS224+: drives and backups"), at most ``TITLE_WORDS`` words. Both are
  key phrases (``key_phrases.py``: runs of content words weighted by the messages that
  hold them, names and numbers kept, names in their capitals). The subject is what most
  messages, from first to last, say, the topic the first user message opens, and a noun
  phrase; the aspects are the best key phrases after it, noun phrases that repeat none of
  its words. The same reads a chapter of many events: its subject is the one said
  throughout. Never the first words of a message, a cut word or a dangling quote.
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
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from memq.shared.messages import speaker_of
from memq.worker.episodes.key_phrases import KeyPhrases, Phrase, candidates, key_phrases
from memq.worker.episodes.words import content_words, language, specificity, stop_words

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
ROLE_NAMES = {"user": "The user", "assistant": "The assistant", "system": "The system", "tool": "A tool"}
QUOTE_MAX_WORDS = 60
QUOTE_MAX_CHARS = 400
TITLE_MAX_CHARS = 120
KEY_TERMS = 8
TOOLS_LISTED = 20
PARTICIPANTS_LISTED = 4
ELLIPSIS = "\u2026"
COMMON = 0.9  # specificity below which a word is common enough to capitalise at a title's start
TITLE_WORDS = 8  # what a person writes as a title: a few words, whatever max_words allows
TITLE_ASPECTS = 2  # after the subject
SUBJECT_OPENING = 1.5  # the first user message opens the topic
SUBJECT_NOUN = 0.5  # a subject is a noun phrase: the weight of the cues that say so
SUBJECT_SPECIFIC = 1.5  # a common word ("night", "rent") names a subject less well than a specific one
SUBJECT_COMPANION = 0.5  # "my partner Jonas": who took part, seldom what it was about
SUBJECT_LENGTH = 0.3  # a phrase of several words that recurs names a subject better than one word
OPENED_WORDS = 3  # the longest phrase of the first user message taken as the topic it opens
STEM = 4  # letters two words share when they are one word for a title ("dance", "dancing")
NOUN_FLOOR = 0.2  # a phrase whose cues say it is no noun phrase ("hangs", "tough") is no aspect


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


PHRASES = 9  # key phrases kept: the summary lists the first KEY_TERMS


def episode_phrases(messages: Sequence[dict[str, Any]], vectors: np.ndarray | None = None) -> KeyPhrases:
    """The key phrases a title and a summary of ``messages`` are made of, computed once
    (with the candidates a title picks its subject from)."""
    return key_phrases(messages, vectors, k=PHRASES)


def extractive_title(
    messages: Sequence[dict[str, Any]],
    min_words: int = 3,
    max_words: int = 10,
    vectors: np.ndarray | None = None,
    phrases: Sequence[Phrase] | None = None,
) -> str:
    """A title a person would write: the subject of the messages and what about it,
    "<subject>: <aspect> and <aspect>" ("Budget spreadsheet: groceries and Pixel"), at
    most ``TITLE_WORDS`` words (and ``max_words``, at least ``min_words``); for a chapter of
    many events as for one event.
    ``vectors``: the messages' embeddings, in order; ``phrases``: ``episode_phrases``
    when already computed."""
    if phrases is None:
        pool = candidates(messages, vectors)
    else:
        pool = phrases.pool if isinstance(phrases, KeyPhrases) and phrases.pool else list(phrases)
    limit = max(min_words, min(max_words, TITLE_WORDS))
    title = _composed(pool, limit, min_words)
    if not title:  # nothing but stop words, numbers or tool output
        who = participants(messages)
        who = who[0].lower() + who[1:] if who.startswith(("The ", "A ")) else who
        title = f"Short exchange between {who}" if " and " in who else f"Short exchange with {who}"
        if len(title.split()) > max_words:
            title = "Short exchange"
    elif len(title.split()) < min_words and ":" not in title and len(title.split()) + 2 <= max_words:
        title = f"Conversation about {title}"
    return _fit(_capitalised(title), min_words, max_words)


def _words(p: Phrase) -> int:
    return len(p.text.split())


def _named(p: Phrase) -> bool:
    return any(w[:1].isupper() or w[:1].isdigit() or any(ch.isupper() for ch in w[1:]) for w in p.text.split())


def _subject(p: Phrase) -> float:
    """How much ``p`` is what the messages are about: the weight of the messages saying it
    (so, how many), how far apart the first and the last of them are, how specific its
    words are, whether the first user message (which opens a topic) says it, whether it
    reads as a noun phrase, and a little for a phrase of several words that recurs. A
    companion of the speaker's ("my partner Jonas") is seldom the subject, nor what is
    mostly "a photo of" something."""
    specific = float(max(specificity(w) for w in p.text.split()) ** SUBJECT_SPECIFIC)
    noun = 1.0 + SUBJECT_NOUN * p.noun
    if _named(p):
        noun = max(noun, 1.0)
    length = 1.0 + SUBJECT_LENGTH * (len(p.keys) - 1) if p.held > 1 else 1.0
    spread = 1.0 + (p.last - p.first)
    opening = SUBJECT_OPENING if p.opening else 1.0
    aside = (SUBJECT_COMPANION if p.companion else 1.0) * (1.0 - p.partitive)
    return p.weight * specific * noun * length * spread * opening * aside


def _opened(pool: Sequence[Phrase]) -> list[Phrase]:
    """The phrases of several words the first user message says once whose words each
    recur ("planning a Lisbon trip", then "Lisbon" and "trip" apart): what the topic was
    opened as, counted as often as its rarer word."""
    single = {p.keys[0]: p for p in pool if len(p.keys) == 1}
    out: list[Phrase] = []
    for p in pool:
        if not p.opening or p.held > 1 or not 1 < len(p.keys) <= OPENED_WORDS or p.noun < NOUN_FLOOR:
            continue
        parts = [single.get(k) for k in p.keys if not k[:1].isdigit()]
        words = [q for q in parts if q is not None and q.held > 1]
        if len(words) < 2 or len(words) < len(parts):
            continue
        out.append(
            replace(
                p,
                held=min(q.held for q in words),
                weight=sum(q.weight for q in words) / len(words),
                first=min(q.first for q in words),
                last=max(q.last for q in words),
            )
        )
    return out


def _compound(longer: Phrase, head: Phrase) -> bool:
    """Whether ``longer`` holds ``head`` as a part that needs no cue to read as a noun
    phrase: its last word (the words before it qualify it: "road bike"), a name within a
    name ("Príncipe Real"), or a common word always said with the others ("outbox
    pattern"); "Jonas wants" is a name and a word after it."""
    n = len(head.keys)
    if longer.keys[-n:] == head.keys:
        return True
    if _named(head):
        return all(w[:1].isupper() or w[:1].isdigit() for w in longer.text.split())
    return longer.held == head.held


def _whole(head: Phrase, pool: Sequence[Phrase]) -> Phrase:
    """The longest phrase of ``pool`` holding ``head`` and said at least half as often: the
    whole name or compound it is part of ("Príncipe" -> "Príncipe Real", "bike" -> "road
    bike"), when it still reads as a noun phrase ("Jonas wants" does not)."""
    n = len(head.keys)
    longer = [
        p
        for p in pool
        if len(p.keys) > n
        and 2 * p.held >= head.held
        and any(p.keys[i : i + n] == head.keys for i in range(len(p.keys) - n + 1))
        and (p.noun > -NOUN_FLOOR if _compound(p, head) else p.noun >= NOUN_FLOOR)
    ]
    return max(longer, key=lambda p: (len(p.keys), p.held), default=head)


def _stem(word: str) -> str:
    """What "dance", "dancers" and "dancing" share, so that a title names each once: the
    first STEM letters of a word longer than that, a shorter word whole."""
    word = word.casefold()
    return word[:STEM] if len(word) > STEM else word


def _composed(pool: Sequence[Phrase], limit: int, min_words: int) -> str:
    """ "<subject>: <aspect> and <aspect>" from ``pool`` (best first), at most ``limit``
    words (more aspects when fewer than ``min_words``); "" when the pool is empty. The
    subject: ``_subject``'s best of the recurring noun phrases, or of a phrase the first
    user message opens the topic with (``_opened``), made whole (``_whole``). The aspects:
    the best key phrases after it that read as noun phrases, share no word with it nor
    with each other, in the order they are first said."""
    fitting = [p for p in pool if _words(p) <= limit and len(p.text) <= TITLE_MAX_CHARS // 2]
    if not fitting:
        return ""
    recurring = [p for p in [*fitting, *_opened(fitting)] if p.held > 1 and p.noun > -NOUN_FLOOR] or fitting
    order = {id(p): j for j, p in enumerate(recurring)}
    head = _whole(max(recurring, key=lambda p: (_subject(p), -order[id(p)])), recurring)
    used = set(head.keys)
    seen = {_stem(w) for w in head.text.split()}
    aspects: list[Phrase] = []
    budget = limit - _words(head)
    for p in fitting:
        if budget < 1 or (len(aspects) >= TITLE_ASPECTS and limit - budget >= min_words):
            break
        cost = _words(p) + (len(aspects) == 1)  # "A and B", "A, B and C": one "and"
        if (
            used.intersection(p.keys)
            or seen.intersection(_stem(w) for w in p.text.split())
            or (p.noun < -NOUN_FLOOR and not _named(p))
            or 2 * p.partitive >= 1  # mostly "a photo of" something
            or p.companion  # "my partner Jonas": who was there, not what it was about
            or (not p.ends and not _named(p))  # only ever qualifies the word after it ("raised" of "raised beds")
            or cost > budget
        ):
            continue
        aspects.append(p)
        used.update(p.keys)
        seen.update(_stem(w) for w in p.text.split())
        budget -= cost
    if not aspects:
        return head.text
    aspects.sort(key=lambda p: p.first)
    return f"{head.text}: {joined([p.text for p in aspects])}"


def _capitalised(title: str) -> str:
    """The title with a capital first letter when its first word is a common word ("pot" ->
    "Pot"); a name, identifier or jargon keeps its spelling ("iPhone", "asyncio")."""
    first = title.split(" ", 1)[0].rstrip(",:")
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
            words[-1] in ("and", "about", "between", "with") or words[-1].endswith((",", ":"))
        ):
            if words[-1].endswith((",", ":")):
                words[-1] = words[-1].rstrip(",:")
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
