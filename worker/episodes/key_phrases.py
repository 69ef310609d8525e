"""Key phrases of an episode: what its extractive title is made of and what its summary
lists as key terms. Pure and deterministic.

Candidates are the runs of content words in the user's and the assistant's sentences
(no stop word or punctuation inside; numbers kept inside a run, so "May 8" or "4TB
drives" stay whole), at most ``MAX_PHRASE_WORDS`` words. A word weighs what the messages
holding it weigh: each message by how central it is to the episode (the cosine of its
embedding to the episode's mean, when the embeddings are given; topics come from the
user, so a user message counts a little more); names, acronyms and numbers count more. A
phrase scores the weight of its words over the square root of its length, so a phrase
whose words recur together beats one frequent word alone only when both words recur.

A word is shown as it is most often written away from the start of a sentence (names
keep their capital, "Frankenjura" stays one, "The" at a sentence start is "the"); a word
seen only at sentence starts is lower-cased unless it is an acronym or mixed case
("DS224", "iPhone").
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memq.shared.messages import speaker_of
from memq.worker.episodes.words import (
    WORD,
    base,
    is_content,
    is_number,
    key,
    language,
    specificity,
    stop_words,
    unspaced,
    unspaced_runs,
    written_as_name,
)

MAX_PHRASE_WORDS = 4
TEXT_MAX_CHARS = 4000  # of each message: the cost of a title is bounded whatever the input
USER_WEIGHT = 1.25  # topics are usually brought by the user
NAME_WEIGHT = 1.5  # names, acronyms and numbers: what a question asks about
LENGTH_BONUS = 0.8  # a phrase held as often as its words is worth more than one of them
_SENTENCE_END = frozenset(".!?\n:;")


@dataclass(frozen=True)
class Phrase:
    keys: tuple[str, ...]
    score: float
    text: str  # as shown


@dataclass
class _Token:
    word: str
    start: int
    end: int
    initial: bool  # first word of a sentence


def _tokens(text: str) -> list[_Token]:
    text = unicodedata.normalize("NFC", text)
    out: list[_Token] = []
    last = 0
    for m in WORD.finditer(text):
        gap = text[last : m.start()]
        initial = not out or any(ch in _SENTENCE_END for ch in gap)
        out.append(_Token(base(m.group()), m.start(), m.end(), initial))
        last = m.end()
    return out


def _runs(text: str, stop: frozenset[str]) -> list[list[_Token]]:
    """The runs of content words (and numbers) of ``text``, each cut to MAX_PHRASE_WORDS;
    in the scripts written without spaces every content word is a run of its own."""
    normal = unicodedata.normalize("NFC", text)
    runs: list[list[_Token]] = []
    current: list[_Token] = []
    previous: _Token | None = None
    for tok in _tokens(normal):
        if unspaced(tok.word):
            runs += [[_Token(w, tok.start, tok.end, False)] for w in unspaced_runs(tok.word) if is_content(w, stop)]
            keep = False
        else:
            keep = is_content(tok.word, stop) or is_number(tok.word)
        adjacent = previous is not None and normal[previous.end : tok.start] in (" ", "\u00a0")
        if current and (not keep or not adjacent):
            if not keep and adjacent and _counts_the_next_word(current):
                current.pop()  # "losing 15 (years)": the number belongs to the word cut off
            runs.append(current)
            current = []
        if keep:
            current.append(tok)
        previous = tok
    if current:
        runs.append(current)
    return [
        chunk
        for run in runs
        for chunk in (run[i : i + MAX_PHRASE_WORDS] for i in range(0, len(run), MAX_PHRASE_WORDS))
        if any(not is_number(t.word) for t in chunk)
    ]


def _counts_the_next_word(run: list[_Token]) -> bool:
    """Whether a run ending in a number after a common word, and followed by a word, would
    end in half a phrase: the number counts that word ("losing 15 years", "spent 300
    euros", "Assume 2,000 payment requests"). After a name the number is part of it ("on
    May 8 at", "iPhone 15 is")."""
    if len(run) < 2 or not is_number(run[-1].word):
        return False
    before = run[-2]
    # a common word: lower case, or capitalised only by its place at a sentence's start
    return before.word.islower() or (before.initial and before.word[1:].islower())


def _head(text: str) -> str:
    """The part of a message its phrases are read from: its first TEXT_MAX_CHARS characters
    (a message may be 100,000 characters; its topic is named early), cut at a space."""
    if len(text) <= TEXT_MAX_CHARS:
        return text
    cut = text.rfind(" ", 0, TEXT_MAX_CHARS)
    return text[: cut if cut > TEXT_MAX_CHARS // 2 else TEXT_MAX_CHARS]


def _names_a_speaker(word: str, speakers: set[str]) -> bool:
    """A speaker's name, or its short form ("Mel" for Melanie)."""
    return word in speakers or (len(word) >= 3 and any(name.startswith(word) for name in speakers))


def _ngrams(run: list[_Token], keys: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The phrases within a run: every span of it, but none that ends in a number counting
    the word after it in the run ("spent 300" of "spent 300 euros")."""
    ends = [j for j in range(1, len(keys) + 1) if j == len(keys) or not _counts_the_next_word(run[:j])]
    return [keys[i:j] for j in ends for i in range(j)]


def _length_factor(keys: tuple[str, ...], messages: int) -> float:
    """A phrase of several words that recurs (in two messages or more) is worth more than
    one of its words; one said once is worth what its weight says."""
    return 1.0 + LENGTH_BONUS * (len(keys) - 1) if messages > 1 else 1.0


def centrality(vectors: np.ndarray | None, count: int) -> list[float]:
    """Each message's weight: its cosine to the mean of the episode's message embeddings
    (floored at 0.05), scaled to a mean of 1; all 1 without embeddings."""
    if vectors is None or len(vectors) != count or count == 0:
        return [1.0] * count
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.where(norms > 0, norms, 1.0)
    mean = v.mean(axis=0)
    size = np.linalg.norm(mean)
    if size == 0:
        return [1.0] * count
    cos = np.clip(v @ (mean / size), 0.05, None)
    return [float(c) for c in cos * (count / cos.sum())]


def _display(spellings: Counter[str], initial_only: Counter[str]) -> str:
    if spellings:
        return spellings.most_common(1)[0][0]
    word = initial_only.most_common(1)[0][0]
    mixed = any(ch.isupper() for ch in word[1:]) or any(ch.isdigit() for ch in word)  # NAS, iPhone, DS224
    if len(word) > 1 and (mixed or (word[:1].isupper() and written_as_name(word))):
        return word
    return word.lower()


def key_phrases(messages: Sequence[dict[str, Any]], vectors: np.ndarray | None = None, k: int = 8) -> list[Phrase]:
    """The ``k`` best key phrases of ``messages`` (user and assistant text only), best
    first, no two sharing a word. ``vectors``: the messages' embeddings, in order."""
    texts = [(i, _head(m["content"])) for i, m in enumerate(messages) if m.get("role") in ("user", "assistant")]
    if not texts:
        return []
    stop = stop_words(language(t for _, t in texts))
    weights = centrality(vectors, len(messages))
    weight: dict[tuple[str, ...], float] = {}  # phrase -> weight of the messages holding it
    held_by: Counter[tuple[str, ...]] = Counter()  # phrase -> how many messages hold it
    spellings: dict[str, Counter[str]] = {}
    initial_only: dict[str, Counter[str]] = {}
    for i, text in texts:
        w = weights[i] * (USER_WEIGHT if messages[i]["role"] == "user" else 1.0)
        held: set[tuple[str, ...]] = set()
        folded = text.casefold()
        for run in _runs(text, stop):
            keys = tuple(key(t.word) for t in run)
            for t, kk in zip(run, keys, strict=True):
                (initial_only if t.initial else spellings).setdefault(kk, Counter())[t.word] += 1
            held.update(_ngrams(run, keys))
        # in order of appearance (then shorter first, then by spelling): never a set's order, which
        # depends on the process' string hashing and would break ties differently on each worker
        for phrase in sorted(held, key=lambda p: (folded.find(p[0]), len(p), p)):
            weight[phrase] = weight.get(phrase, 0.0) + w
            held_by[phrase] += 1
    shown = {
        kk: _display(spellings.get(kk, Counter()), initial_only.get(kk, Counter()))
        for kk in set(spellings) | set(initial_only)
    }

    def bonus(keys: tuple[str, ...]) -> float:
        """Names and numbers count more, common words less (``specificity``)."""
        named = sum(1 for kk in keys if shown[kk][:1].isupper() or any(ch.isdigit() for ch in shown[kk]))
        specific = max(specificity(shown[kk]) for kk in keys)
        return (1.0 + (NAME_WEIGHT - 1.0) * named / len(keys)) * specific

    # who spoke is said elsewhere (the summary's first words): their names alone are no topic
    speakers = {key(w) for m in messages if (name := speaker_of(m)) for w in WORD.findall(name)}
    scored = [
        Phrase(keys, w * _length_factor(keys, held_by[keys]) * bonus(keys), " ".join(shown[kk] for kk in keys))
        for keys, w in weight.items()
        if not all(is_number(kk) or _names_a_speaker(kk, speakers) for kk in keys)
        and len(set(keys)) == len(keys)  # "very very" or "ha ha": one word said twice is no phrase
    ]
    # best first; ties: the phrase met first (dict order is the order of appearance)
    order = sorted(range(len(scored)), key=lambda j: (-scored[j].score, j))
    chosen: list[Phrase] = []
    used: set[str] = set()
    for j in order:
        p = scored[j]
        if used.intersection(p.keys):
            continue
        chosen.append(p)
        used.update(p.keys)
        if len(chosen) == k:
            break
    return chosen
