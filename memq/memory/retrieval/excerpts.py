"""Excerpts of long messages (pure): the part of a message worth its tokens.

An assistant's answer runs to hundreds of tokens where a question's answer is often one
sentence; shown whole, one such message takes most of a small budget and crowds out the
short messages around it that hold what was asked (on LongMemEval, 70 % of what retrieval
returned at 1,000 tokens was assistant text, while the evidence is mostly in the user's
turns). So a long message is first shown as an excerpt: its sentences that share the most
words with the query, or its opening when none does (an answer leads with its point), a
``…`` where text is left out; the whole message comes later, when what ranks above it is
in (``selection.py``).

A message that asks (``asks``) is shown with its answer (``selection.py``); an answer that
does not fit whole is shown as its ``lead``: its first sentences, never a question alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

GAP = "…"
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# the end of a sentence, a line break, or the start of a list item ("* ", "- ", "2. ")
_BREAK = re.compile(r"(?<=[.!?:;])\s+|\s*\n\s*|\s+(?=(?:[*•]|-|\d{1,2}[.)])\s)")
STEM = 5  # words are compared by their first letters: "recommended" ~ "recommend"

# Function words, and what a question to a memory says around its subject ("what did I say
# about", "remind me"): they tell nothing of what it is about.
_STOP = frozenset(
    """a about after again all also am an and any are as at be been before being both but by can
    could did do does doing done for from get got had has have having he her here hers him his
    how i i'd i'm i've if in into is it it's its just me more most my no not now of on once one
    only or other our out over own please same she should so some such than that the their them
    then there these they this those through to too under up very was we were what when where
    which while who whom why will with would you your yours say said tell told remind know remember
    mention mentioned talk talked""".split()  # noqa: SIM905 (a word list reads best as words)
)


def _keys(text: str) -> set[str]:
    return {w[:STEM] for w in (m.group().lower() for m in _WORD.finditer(text)) if w not in _STOP and len(w) > 1}


def query_keys(query: str) -> frozenset[str]:
    """What the query is about, as excerpts compare it: its words but function words, by
    their first ``STEM`` letters."""
    return frozenset(_keys(query))


_MARKER = re.compile(r"(?:[*•-]|\d{1,2}[.)])")


def sentences(text: str) -> list[str]:
    """The text's sentences, lines and list items, in order (whitespace folded); a list
    item's marker ("2.", "*") stays with its item."""
    out: list[str] = []
    marker = ""
    for part in _BREAK.split(text):
        part = " ".join(part.split()) if part else ""
        if not part:
            continue
        if _MARKER.fullmatch(part):
            marker = f"{marker} {part}".strip()
            continue
        out.append(f"{marker} {part}" if marker else part)
        marker = ""
    if marker:
        out.append(marker)
    return out


def _cut(text: str, tokens: int, count: Callable[[str], int]) -> str:
    """The longest prefix of ``text``'s words that, with `` …``, counts at most ``tokens``."""
    words = text.split()
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid]) + " " + GAP) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


@functools.lru_cache(maxsize=256)
def _finder(keys: frozenset[str]) -> re.Pattern[str] | None:
    """A pattern finding the query's keys at the start of words: a key of ``STEM`` letters
    begins a word, a shorter one is a whole word (what ``_keys`` makes of a word)."""
    if not keys:
        return None
    stems = sorted((k for k in keys if len(k) >= STEM), key=len, reverse=True)
    whole = sorted((k for k in keys if len(k) < STEM), key=len, reverse=True)
    parts = [f"(?:{'|'.join(map(re.escape, stems))})" if stems else "", ""]
    if whole:
        parts[1] = f"(?:{'|'.join(map(re.escape, whole))})(?![^\\W_])"
    alternatives = "|".join(f"({p})" for p in parts if p)
    return re.compile(rf"(?<![^\W_])(?:{alternatives})", re.IGNORECASE)


def _scores(parts: list[str], keys: frozenset[str]) -> list[int]:
    """How many of the query's keys each sentence holds."""
    finder = _finder(keys)
    if finder is None:
        return [0] * len(parts)
    return [len({m.group(0).lower()[:STEM] for m in finder.finditer(part)}) for part in parts]


def excerpt(text: str, keys: frozenset[str], tokens: int, count: Callable[[str], int], *, long: bool = False) -> str:
    """At most ``tokens`` tokens of ``text``: the sentence sharing the most query ``keys``
    (the first such; the first sentence when none shares any), then its neighbours, the
    following first, while they fit; ``…`` before and after what is left out. The whole
    text when it fits (``long``: the caller knows it does not)."""
    folded = " ".join(text.split())
    if not long and count(folded) <= tokens:
        return folded
    parts = sentences(folded) or [folded]
    scores = _scores(parts, keys)
    best = max(range(len(parts)), key=lambda i: (scores[i], -i))
    sizes = [count(part) for part in parts]  # a window costs about its sentences, a space each and its gaps
    gap = count(GAP)

    def render(lo: int, hi: int) -> str:
        body = " ".join(parts[lo : hi + 1])
        return (f"{GAP} " if lo > 0 else "") + body + (f" {GAP}" if hi < len(parts) - 1 else "")

    def estimate(lo: int, hi: int) -> int:
        return sum(sizes[lo : hi + 1]) + (hi - lo) + (gap + 1) * ((lo > 0) + (hi < len(parts) - 1))

    start = end = best  # the window [start, end]
    if estimate(start, end) > tokens:  # the best sentence alone is too long: its opening
        lead = f"{GAP} " if start > 0 else ""
        cut = _cut(parts[start], tokens - count(lead) if lead else tokens, count)
        return f"{lead}{cut} {GAP}" if cut else GAP
    grown = True
    while grown:
        grown = False
        for lo, hi in ((start, end + 1), (start - 1, end)):
            if lo >= 0 and hi < len(parts) and estimate(lo, hi) <= tokens:
                start, end, grown = lo, hi, True
                break
    shown = render(start, end)
    while count(shown) > tokens and end > start:  # the estimate was short by a token or two
        end -= 1
        shown = render(start, end)
    if count(shown) > tokens:
        lead = f"{GAP} " if start > 0 else ""
        cut = _cut(parts[start], tokens - count(lead) if lead else tokens, count)
        return f"{lead}{cut} {GAP}" if cut else GAP
    return shown


# Questions (pure): what makes a message one that asks, and the lead of its answer.

_QUESTION_WORDS = frozenset(("what", "which", "who", "whom", "whose", "when", "where", "why", "how"))
# an auxiliary opens a question when a subject follows it ("do you", "is there"), not alone
# ("will do", "can't wait")
_AUXILIARIES = frozenset(
    """do does did is are was were am can could would should will shall may might have has
    had""".split()  # noqa: SIM905 (a word list reads best as words)
)
_SUBJECTS = frozenset(
    """i you we they he she it there this that these those your my our his her their anyone anybody
    someone somebody anything something""".split()  # noqa: SIM905 (a word list reads best as words)
)
_FIRST_WORDS = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_TRAILING = re.compile(r"[^\w.!?]+$")  # closing quotes, brackets, emoji after the last mark


def _asks(sentence: str) -> bool:
    """The sentence ends with a question mark ("really?!" too), or opens with a question
    word ("what", "how"; "do you", "is there") and is no exclamation ("how cool!")."""
    end = _TRAILING.sub("", sentence)
    if re.search(r"\?[!?]*$", end):
        return True
    words = [w.lower() for w in _FIRST_WORDS.findall(sentence[:60])[:2]]
    if not words or end.endswith("!"):
        return False
    if words[0] in _QUESTION_WORDS:
        return True
    return len(words) == 2 and words[0] in _AUXILIARIES and words[1] in _SUBJECTS


@functools.lru_cache(maxsize=50_000)  # the same messages come back query after query
def asks(text: str) -> bool:
    """Whether a message asks: it ends with a question or opens with one, and its questions
    (with what introduces one: "quick question:") hold at least two thirds of its words:
    "what db would you pick for this?", "I'll measure on monday. what about the ledger
    part? do I need double-entry?". Whoever says it: users ask, and assistants ask back.

    A statement with a question tacked on ("... I'm super thankful. Who supports you,
    Mel?") is a statement: it was found for what it states, and what answers its question
    is mostly about something else. Measured (``memq eval-locomo``, ``memq
    eval-longmemeval``, 2026-12-07): counting as questions the messages whose questions
    hold half their words, the answers brought along lost 0.004 (LoCoMo) and 0.005
    (LongMemEval) of evidence recall at 250 tokens; at two thirds, LoCoMo gained 0.0065
    and LongMemEval did not change."""
    parts = sentences(" ".join(text.split()))
    if not parts or not (_asks(parts[-1]) or _asks(parts[0])):
        return False
    asking = [_asks(part) for part in parts]
    for i in range(len(parts) - 2, -1, -1):  # a part ending in ":" introduces what follows it
        asking[i] = asking[i] or (parts[i].endswith(":") and asking[i + 1])
    sizes = [len(part.split()) for part in parts]
    asked = sum(size for size, question in zip(sizes, asking) if question)
    return 3 * asked >= 2 * sum(sizes)


def lead(text: str, tokens: int, count: Callable[[str], int]) -> str:
    """The opening of an answer within ``tokens`` tokens: its first sentences while they fit
    (an answer leads with its point), ``…`` after what is left out; the first sentence cut
    at a word when it alone is longer; "" when not even a word fits. The whole text (its
    whitespace folded) when it fits."""
    folded = " ".join(text.split())
    if count(folded) <= tokens:
        return folded
    parts = sentences(folded) or [folded]
    shown = ""
    for i in range(len(parts)):
        candidate = " ".join(parts[: i + 1]) + f" {GAP}"
        if count(candidate) > tokens:
            break
        shown = candidate
    if shown:
        return shown
    cut = _cut(parts[0], tokens, count)
    return f"{cut} {GAP}" if cut else ""
