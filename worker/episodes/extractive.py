"""Extractive titles and summaries: the no-LLM path (and the fallback when the LLM
fails). Pure and deterministic.

Sentences are scored by how many of the segment's frequent content words they carry
(a SumBasic-style centrality); the summary quotes the best few in their original
order, attributed to their speakers, so it stays faithful and third-person.

Sizes are bounded whatever the input: a quoted sentence is cut at
``QUOTE_MAX_WORDS`` words or ``QUOTE_MAX_CHARS`` characters, the title at
``TITLE_MAX_CHARS``, a "word" longer than ``WORD_MAX_CHARS`` (a hash, base64, one
letter repeated) is never a keyword, and at most ``TOOLS_LISTED`` tools are named. A
message may be 100,000 characters of one sentence; quoted whole, the summary would be
as long, and a remote embedding model refuses input over its context (8,191 tokens for
OpenAI's), a deterministic failure that would quarantine the segment.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import regex  # type: ignore[import-untyped]  # no stubs installed (types-regex)

# A word: letters of any script with their combining marks (accents, Devanagari vowel
# signs ...), joined by an inner apostrophe or hyphen (O'Brien, e-mail); a number with its
# decimals or a time (9:40) and an attached unit or per cent (5km, 3.5kg, 20%). The old
# ASCII class cut "Príncipe" into "Pr" and "ncipe". Text is NFC-normalised first, so a
# letter and its accent typed apart are one character.
_LETTERS = r"\p{L}[\p{L}\p{M}\p{Nd}]*"  # a word may carry digits after its first letter: A320, COVID19
_UNIT = r"\p{L}[\p{L}\p{M}]*(?![\p{L}\p{M}\p{Nd}'\u2019])"
_WORD = regex.compile(rf"{_LETTERS}(?:['\u2019\-]{_LETTERS})*|\p{{Nd}}+(?:[.,:]\p{{Nd}}+)*(?:%|{_UNIT})?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren't",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "can't",
        "could",
        "couldn't",
        "did",
        "didn't",
        "do",
        "does",
        "doesn't",
        "doing",
        "don't",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "get",
        "got",
        "had",
        "hadn't",
        "has",
        "hasn't",
        "have",
        "haven't",
        "having",
        "he",
        "he'd",
        "he'll",
        "he's",
        "her",
        "here",
        "here's",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "how's",
        "i",
        "i'd",
        "i'll",
        "i'm",
        "i've",
        "if",
        "in",
        "into",
        "is",
        "isn't",
        "it",
        "it's",
        "its",
        "itself",
        "just",
        "let's",
        "like",
        "me",
        "maybe",
        "more",
        "most",
        "much",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "ok",
        "okay",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "really",
        "same",
        "she",
        "she'd",
        "she'll",
        "she's",
        "should",
        "shouldn't",
        "so",
        "some",
        "such",
        "sure",
        "than",
        "that",
        "that's",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "there's",
        "these",
        "they",
        "they'd",
        "they'll",
        "they're",
        "they've",
        "thing",
        "things",
        "think",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "us",
        "very",
        "was",
        "wasn't",
        "we",
        "we'd",
        "we'll",
        "we're",
        "we've",
        "well",
        "were",
        "weren't",
        "what",
        "what's",
        "when",
        "when's",
        "where",
        "where's",
        "which",
        "while",
        "who",
        "who's",
        "whom",
        "why",
        "why's",
        "will",
        "with",
        "won't",
        "would",
        "wouldn't",
        "yeah",
        "yes",
        "you",
        "you'd",
        "you'll",
        "you're",
        "you've",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "thanks",
        "thank",
        "please",
        "hi",
        "hello",
        "hey",
        "great",
        "good",
        "right",
        "one",
        "two",
        "also",
        "would",
        "could",
        "want",
        "need",
        "know",
        "see",
        "make",
        "go",
        "going",
    ]
)
_FILLER = re.compile(
    r"^(?:(?:ok|okay|so|hm+|um+|well|right|alright|also|and|but|oh|ah|hey|hi|thanks|great|cool)\b[\s,.!:-]*)+",
    re.IGNORECASE,
)
ROLE_NAMES = {"user": "The user", "assistant": "The assistant", "system": "The system", "tool": "A tool"}
WORD_MAX_CHARS = 50
QUOTE_MAX_WORDS = 60
QUOTE_MAX_CHARS = 400
TITLE_MAX_CHARS = 120
TOOLS_LISTED = 20
ELLIPSIS = "\u2026"


def _key(word: str) -> str:
    """What two spellings of one word share: case-folded, the typographic apostrophe as ASCII."""
    return word.casefold().replace("\u2019", "'")


def _script(ch: str) -> str:
    """The scripts written without spaces between words, told apart; "" for the others."""
    if "\u3040" <= ch <= "\u309f":
        return "hiragana"
    if "\u30a0" <= ch <= "\u30ff":
        return "katakana"
    if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff":
        return "han"
    if "\uac00" <= ch <= "\ud7af":
        return "hangul"
    return ""


def _unspaced_runs(word: str) -> list[str]:
    """A word of Japanese or Chinese text, where no space separates words, cut where the
    script changes: the Han and Katakana runs carry the content (東京, 会議); Hiragana
    runs are mostly particles and endings (で, があります) and are left out."""
    runs: list[str] = []
    for ch in word:
        if runs and _script(ch) == _script(runs[-1][-1]):
            runs[-1] += ch
        else:
            runs.append(ch)
    return [r for r in runs if _script(r[0]) not in ("hiragana", "")]


def _is_content(word: str) -> bool:
    # Words of one or two letters are mostly function words, except in the scripts written
    # without spaces (a two-character Han word is a word).
    shortest = 2 if _script(word[0]) else 3
    return shortest <= len(word) <= WORD_MAX_CHARS and _key(word) not in STOPWORDS


def surface_words(text: str) -> list[str]:
    """The content words of ``text`` as written (case and accents kept), in order."""
    words: list[str] = []
    for w in _WORD.findall(unicodedata.normalize("NFC", text)):
        words += _unspaced_runs(w) if any(_script(ch) for ch in w) else [w]
    return [w for w in words if _is_content(w)]


def content_words(text: str) -> list[str]:
    """The content words of ``text``, case-folded: what counts as the same word."""
    return [_key(w) for w in surface_words(text)]


def keywords(messages: Sequence[dict[str, Any]], k: int = 5) -> list[str]:
    """Most frequent content words (counted once per message), user and assistant text
    only (tool dumps excluded), each shown as it is most often written (names keep their
    capital, accents stay); ties in order of first appearance, so the same messages always
    give the same words (a set's order changes with each process's hash seed)."""
    counts: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    for m in messages:
        if m["role"] in ("user", "assistant"):
            words = surface_words(m["content"])
            counts.update(dict.fromkeys((_key(w) for w in words), 1))
            for w in words:
                spellings.setdefault(_key(w), Counter())[w] += 1
    return [spellings[key].most_common(1)[0][0] for key, _ in counts.most_common(k)]


@dataclass(frozen=True)
class Sentence:
    position: int
    role: str
    text: str


def _sentences(messages: Sequence[dict[str, Any]]) -> list[Sentence]:
    out: list[Sentence] = []
    for m in messages:
        if m["role"] not in ("user", "assistant"):
            continue
        for part in _SENTENCE.split(m["content"]):
            part = " ".join(part.split())
            if len(part.split()) >= 3:
                out.append(Sentence(len(out), m["role"], part))
    return out


def _scores(sentences: Sequence[Sentence]) -> list[float]:
    freq: Counter[str] = Counter()
    for s in sentences:
        freq.update(set(content_words(s.text)))
    scores = []
    for s in sentences:
        words = content_words(s.text)
        if not words:
            scores.append(0.0)
            continue
        scores.append(sum(freq[w] for w in set(words)) / (len(set(words)) ** 0.5 + 1))
    return scores


def _clip_words(text: str, limit: int) -> str:
    words = text.split()
    return " ".join(words[:limit])


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


def extractive_title(messages: Sequence[dict[str, Any]], min_words: int = 5, max_words: int = 15) -> str:
    sentences = _sentences(messages)
    scores = _scores(sentences)
    # Topics are usually introduced early: user sentences are weighted by centrality
    # and, gently, by how early they come.
    user = [
        (sc * 0.9**rank, s)
        for rank, (sc, s) in enumerate((sc, s) for sc, s in zip(scores, sentences) if s.role == "user")
    ]
    pool = user or list(zip(scores, sentences))
    if pool:
        _, best = max(pool, key=lambda p: (p[0], -p[1].position))
        text = _FILLER.sub("", best.text) or best.text
        title = _clip_words(text[:1].upper() + text[1:], min(max_words, 12))
        if len(title) > TITLE_MAX_CHARS:
            title = _clip(title, min(max_words, 12), TITLE_MAX_CHARS)
        title = title.rstrip(" ,;:-")
    else:
        title = ""
    title = title.rstrip(".!?") if title else title
    if len(title.split()) < min_words:
        kws = keywords(messages, 4) or ["conversation"]
        extra = "Conversation about " + ", ".join(kws)
        title = f"{title}: {extra}" if title else extra
        while len(title.split()) < min_words:
            title += " (short exchange)"
    return _clip_words(title, max_words)


def extractive_summary(messages: Sequence[dict[str, Any]], max_sentences: int = 4, tools: Sequence[str] = ()) -> str:
    sentences = _sentences(messages)
    roles = Counter(m["role"] for m in messages)
    head = f"An exchange of {len(messages)} message{'s' if len(messages) != 1 else ''}"
    parts = [f"{roles[r]} {r}" for r in ("user", "assistant", "tool", "system") if roles[r]]
    head += f" ({', '.join(parts)})."
    body: list[str] = []
    if sentences:
        scores = _scores(sentences)
        ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))[:max_sentences]
        for i in sorted(ranked):
            s = sentences[i]
            body.append(
                f"{ROLE_NAMES.get(s.role, s.role)} said: \u201c{_clip(s.text, QUOTE_MAX_WORDS, QUOTE_MAX_CHARS)}\u201d"
            )
    else:
        text = " ".join(" ".join(m["content"].split()) for m in messages)[:300]
        body.append(f"Content: \u201c{text}\u201d")
    kws = keywords(messages, 5)
    tail = []
    if kws:
        tail.append("Key terms: " + ", ".join(kws) + ".")
    if tools:
        more = f" and {len(tools) - TOOLS_LISTED} more" if len(tools) > TOOLS_LISTED else ""
        tail.append("Tools used: " + ", ".join(tools[:TOOLS_LISTED]) + more + ".")
    return " ".join([head, *body, *tail])
