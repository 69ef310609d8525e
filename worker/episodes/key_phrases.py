"""Key phrases of an episode: what its extractive title is made of and what its summary
lists as key terms. Pure and deterministic.

Candidates are the runs of content words in the user's and the assistant's sentences
(no stop word or punctuation inside; numbers kept inside a run, so "May 8" or "4TB
drives" stay whole; a capitalised stop word inside a name too, "Time Machine"), at most
``MAX_PHRASE_WORDS`` words. A word weighs what the messages holding it weigh: each
message by how central it is to the episode (the cosine of its embedding to the
episode's mean, when the embeddings are given; topics come from the user, so a user
message counts a little more); names, acronyms and numbers count more. A phrase scores
the weight of its words over the square root of its length, so a phrase whose words
recur together beats one frequent word alone only when both words recur. A plural is
the same word as its singular when both are written ("backups", "backup").

A word is shown as it is most often written away from the start of a sentence (names
keep their capital, "Frankenjura" stays one, "The" at a sentence start is "the"), and
capitalised when anyone writes it so in mid-sentence ("Dr. Okafor": a title's full stop
ends no sentence) and it is a name, no word of general text (the user typed "okafor", the
assistant "Okafor"; "the Dough" stays "dough"); a phrase that is a name ("Hyper Backup",
"Gut Kaltenbrunn") is shown as the name. A word seen only at sentence starts is
lower-cased unless it is an acronym or mixed case ("DS224+", "iPhone").

Each phrase also carries what a title needs to tell the subject of the messages from a
detail: how many messages hold it, where in them it is first and last said, whether the
first user message says it (topics are opened there), whether it reads as a noun phrase
(English cues: "the lock" and "lock is" are nouns, "it hangs", "to refresh", "huge" and
"currently" are not; 0 in other languages), whether it is mostly "a photo of" something,
a companion of the speaker's ("my partner Jonas") or only ever the first half of a
longer phrase ("raised" of "raised beds").
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import regex  # type: ignore[import-untyped]  # no stubs installed (types-regex)

from memq.shared.messages import speaker_of
from memq.worker.episodes.words import (
    WORD,
    base,
    dictionary_word,
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
POOL = 100  # candidates kept for a title to choose from (best first), and all of the first user message
PLURAL_S = frozenset(("en", "es", "fr", "pt", "it", "nl"))  # languages whose plurals mostly add "s" or "es"
_SENTENCE_END = frozenset(".!?\n:;")
_ABBREVIATIONS = frozenset(["dr", "mr", "mrs", "ms", "prof", "st", "mt", "jr", "sr", "vs", "no", "fig", "approx"])
# after one of these a capital says nothing about the word: quotes, brackets, list bullets
_OPENERS = frozenset("\"\u201c\u201d\u2018'([{*#>\u2022-_")

# English cues to a word's part of speech, from its neighbours (a noun phrase or not)
_POSSESSIVE_WORDS = "my your his her our their"
_BEFORE_NOUN_WORDS = """
a an the its this these those some any no every each another of in on at for with from about into onto under
by per without between through during what which whose few several many other same
"""
_BEFORE_OTHER_WORDS = """
i you we they he she it to can could will would should might must shall do does did don't doesn't didn't can't
won't wouldn't shouldn't couldn't isn't aren't wasn't not never just also always often usually still already
i'll i'd i've we'll we've we'd you'll you've you'd they'll they've they'd he'll she'll let's be been being it's
that's i'm you're we're they're he's she's so very too really quite pretty super fairly bit looks seems feel
feels felt sounds
"""
_AFTER_NOUN_WORDS = "is are was were has have had will can could would should does did isn't aren't wasn't hasn't of"
_AFTER_OTHER_WORDS = "a an the my your his her our their me him us them it you some any every these those"
# common English words that are no noun: adjectives (they may begin a noun phrase, "huge
# difference") and verbs and adverbs (they may not, "keep track"); never what a title names
_ADJECTIVE_WORDS = """
able bad beautiful best better big bigger brave bright busy calm cheap cheaper clean clear close cold common
complete crazy curious dark deep different difficult easier easy entire extra fair false familiar far fast
fine free fresh full funny grateful hard harder healthy heavy helpful high higher hot huge important impossible
interesting large last late little long longer low lower main major meaningful minor necessary new next normal
obvious old open perfect personal positive possible powerful proper quick quiet ready recent regular relevant
safe scary serious short similar simple slow small smaller smart soft special specific strong stronger sweet
tight tiny tired tough true typical unique useful usual warm weird whole wide wild wise worried worth wrong young
"""
_VERB_WORDS = """
alone anymore apart appreciate assume away back become begin believe bring choose consider continue create
decide encourage enjoy enough expect explain forget forward give imagine inspire keep later learn leave listen
lose manage meet motivate pick prefer realise realize remember seem send sit soon spend suggest take today
together tomorrow tonight understand wait yesterday look looks feeling looking keeping getting making taking
giving staying pushing putting seeing saying thinking wanting needing knowing coming
"""
_VERBS = frozenset(_VERB_WORDS.split())
_NO_NOUNS = _VERBS | frozenset(_ADJECTIVE_WORDS.split())
# endings of adverbs ("currently", "definitely", "hopefully"), of adjectives and participles ("motivated",
# "creative"): a noun seldom ends so ("family", "assembly" do not end so)
_ADVERB_ENDINGS = ("ally", "ely", "tly", "sly", "ully", "vely", "ably", "ibly", "dly", "gly", "rly")
_NOT_NOUN_ENDINGS = ("ed", "ous", "ful", "ive", "able", "ible", "less", "ly")
# 1: a noun follows, 2: something else does, 3: a noun follows a possessive ("my partner Jonas")
_BEFORE = {
    **dict.fromkeys(_BEFORE_OTHER_WORDS.split(), 2),
    **dict.fromkeys(_BEFORE_NOUN_WORDS.split(), 1),
    **dict.fromkeys(_POSSESSIVE_WORDS.split(), 3),
}
# 1: after a noun, 2: after something else, 4: after a noun that only holds what matters ("a photo of")
_AFTER = {**dict.fromkeys(_AFTER_OTHER_WORDS.split(), 2), **dict.fromkeys(_AFTER_NOUN_WORDS.split(), 1), "of": 4}


@dataclass(frozen=True)
class Phrase:
    keys: tuple[str, ...]
    score: float
    text: str  # as shown
    held: int = 1  # messages holding it
    weight: float = 1.0  # their weight (centrality, user messages a little more)
    first: float = 0.0  # where the first and the last of them stand in the messages, 0 to 1
    last: float = 0.0
    opening: bool = False  # said in the first user message
    noun: float = 0.0  # -1 to 1: how much it reads as a noun phrase (0: no cue)
    partitive: float = 0.0  # share of its mentions followed by "of" ("a photo of", "a lot of")
    companion: bool = False  # a name said after whom it is to the speaker ("my partner Jonas", "my dog Pixel")
    ends: float = 1.0  # share of its mentions that end their run of words ("raised" of "raised beds" never does)


class KeyPhrases(list[Phrase]):
    """The key phrases (no two sharing a word), best first, and ``pool``: every candidate
    they were chosen from (phrases may overlap), best first."""

    pool: list[Phrase]

    def __init__(self, chosen: Sequence[Phrase] = (), pool: Sequence[Phrase] = ()) -> None:
        super().__init__(chosen)
        self.pool = list(pool)


class _Token:
    __slots__ = ("glue", "initial", "key", "left", "marked", "right", "word")

    def __init__(self, word: str, k: str, initial: bool, marked: bool) -> None:
        self.word = word
        self.key = k
        self.initial = initial  # first word of a sentence
        self.marked = marked  # where a capital is no choice of the writer's: a sentence's start, after a quote
        self.glue = False  # a capitalised stop word inside a name ("Time" of "Time Machine")
        self.left = 0  # the word before it, as a cue to a noun (1, 3), to something else (2) or none (0)
        self.right = 0  # the word after it, likewise (1, 4: a noun; 2: something else)


_SPLIT = regex.compile(f"({WORD.pattern})")


@dataclass
class _Text:
    """A text cut into its words (as written, without a possessive ending), their keys and
    the gaps before them."""

    words: list[str]
    keys: list[str]
    gaps: list[str]


def _split(text: str) -> _Text:
    parts = _SPLIT.split(unicodedata.normalize("NFC", text))
    words = [base(w) for w in parts[1::2]]
    keys = [w.casefold() for w in words]
    if "\u2019" in text:
        keys = [k.replace("\u2019", "'") for k in keys]
    return _Text(words, keys, parts[0:-1:2])


def _runs(text: _Text, content: Callable[[str], bool]) -> list[list[_Token]]:
    """The runs of content words (and numbers) of a text, each cut to MAX_PHRASE_WORDS; in
    the scripts written without spaces every content word is a run of its own. A
    capitalised stop word written mid-sentence right before a capitalised content word is
    part of the name they make ("Time Machine", "The Hague"). Each token carries its
    neighbours as cues to its part of speech (English) and where it stands."""
    words, keys, gaps = text.words, text.keys, text.gaps
    count = len(words)
    runs: list[list[_Token]] = []
    current: list[_Token] = []
    joined = [gap == " " or gap == "\u00a0" for gap in gaps]
    before, after = _BEFORE.get, _AFTER.get
    opened = False  # the previous word stood after a quote, a bullet or a heading mark
    for i, word in enumerate(words):
        gap = gaps[i]
        simple = gap == " "
        initial = i == 0 or (not simple and not _SENTENCE_END.isdisjoint(gap) and not _abbreviated(gap, words[i - 1]))
        upper = word[:1].isupper()
        if simple:  # "**Sinking Funds**", "### Fixed Costs": title case after a bullet or heading mark
            opened = opened and upper and words[i - 1][:1].isupper()
        else:
            opened = not initial and not _OPENERS.isdisjoint(gap)
        if not word.isascii() and unspaced(word):
            if current:
                runs.append(current)
                current = []
            runs += [[_Token(w, key(w), False, True)] for w in unspaced_runs(word) if content(w)]
            continue
        keep = content(word) or word[:1].isdigit()
        glue = False
        if not keep and upper and not (initial or opened) and i + 1 < count and joined[i + 1] and len(word) >= 2:
            following = words[i + 1]
            glue = keep = following[:1].isupper() and content(following) and not keys[i].startswith("i'")
        if current and (not keep or not joined[i]):
            if not keep and joined[i] and _counts_the_next_word(current):
                current.pop()  # "losing 15 (years)": the number belongs to the word cut off
            if current:
                runs.append(current)
            current = []
        if keep:
            tok = _Token(word, keys[i], initial, initial or opened)
            tok.glue = glue
            if joined[i]:
                tok.left = before(keys[i - 1], 0)
            if i + 1 < count and joined[i + 1]:
                tok.right = after(keys[i + 1], 0)
            current.append(tok)
    if current:
        runs.append(current)
    return [
        chunk
        for run in runs
        for chunk in (run[i : i + MAX_PHRASE_WORDS] for i in range(0, len(run), MAX_PHRASE_WORDS))
        if any(not t.glue and not t.word[:1].isdigit() for t in chunk)
    ]


def _abbreviated(gap: str, before: str) -> bool:
    """Whether the full stop before a word ends an abbreviation or an initial, not a
    sentence ("Dr. Okafor", "J. K. Rowling")."""
    return gap.rstrip() == "." and (key(before) in _ABBREVIATIONS or (len(before) == 1 and before.isupper()))


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


def _spans(run: list[_Token]) -> list[tuple[int, int]]:
    """The phrases within a run, as (start, end), in order of appearance: every span of it,
    but none that ends in a number counting the word after it in the run ("spent 300" of
    "spent 300 euros"), none ending in a stop word, none of stop words and numbers only."""
    size = len(run)
    if size == 1:
        return _ALL_SPANS[1]
    if not any(t.glue or t.word[:1].isdigit() for t in run):
        return _ALL_SPANS[size]
    ends = {j for j in range(1, size + 1) if (j == size or not _counts_the_next_word(run[:j])) and not run[j - 1].glue}
    words = [not t.glue and not is_number(t.word) for t in run]
    return [(i, j) for i in range(size) for j in range(i + 1, size + 1) if j in ends and any(words[i:j])]


_ALL_SPANS = [[(i, j) for i in range(n) for j in range(i + 1, n + 1)] for n in range(MAX_PHRASE_WORDS + 1)]


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


def _display(spellings: dict[str, int], initial_only: dict[str, int]) -> str:
    """How a word is shown: as most often written mid-sentence, capitalised when someone
    writes it so mid-sentence and it is no dictionary word ("okafor" -> "Okafor"; "the
    Dough" stays "dough"); seen only at sentence starts, lower-cased unless a name."""
    if spellings:
        word = max(spellings, key=spellings.__getitem__)  # ties: the spelling met first
        if word.islower() and len(spellings) > 1:
            for spelling in spellings:  # in order of first appearance
                if spelling[:1].isupper() and spelling[1:] == word[1:] and _a_name(spelling):
                    return spelling
        return word
    word = max(initial_only, key=initial_only.__getitem__)
    mixed = any(ch.isupper() for ch in word[1:]) or any(ch.isdigit() for ch in word)  # NAS, iPhone, DS224
    if len(word) > 1 and (mixed or (word[:1].isupper() and written_as_name(word))):
        return word
    return word.lower()


def _coded(word: str) -> bool:
    """An acronym, a code or a mixed-case name: "NAS", "B2", "DS224+", "iPhone"."""
    return any(ch.isupper() or ch.isdigit() for ch in word[1:])


def _cased(word: str, like: str) -> str:
    """``word`` with the case of the first letter of ``like``, when ``like`` is not mixed case."""
    if like[:1].isupper() and word[:1].islower():
        return word[:1].upper() + word[1:]
    if like[:1].islower() and word[:1].isupper() and word[1:].islower():
        return word.lower()
    return word


def _a_name(word: str) -> bool:
    """Whether a capitalised word is a name, not a word of general text ("Okafor",
    "Kaltenbrunn", "Kafka"; not "Dough", "Gut"): cut in pieces by the BPE tokenizer when
    lower-cased, or learnt capitalised rather than not."""
    return word[:1].isupper() and (not dictionary_word(word) or written_as_name(word))


def _plurals(vocabulary: set[str]) -> dict[str, str]:
    """Plural -> singular, for the words whose singular is written too ("backups" ->
    "backup", "batteries" -> "battery"): one word, counted once."""
    out: dict[str, str] = {}
    for w in vocabulary:
        if len(w) < 4 or not w.endswith("s") or w.endswith(("ss", "us", "is")) or not w.isalpha():
            continue
        for stem in (w[:-1], w[:-2] if w.endswith("es") else "", w[:-3] + "y" if w.endswith("ies") else ""):
            if len(stem) >= 3 and stem in vocabulary:
                out[w] = stem
                break
    return out


@dataclass
class _Stats:
    """What is counted of one phrase over the messages."""

    weight: float = 0.0  # of the messages holding it
    held: int = 0  # messages holding it
    first: int = 0
    last: int = 0
    noun: int = 0  # cues that it is a noun phrase
    other: int = 0  # cues that it is not
    mentions: int = 0
    ends: int = 0  # mentions that end their run
    partitive: int = 0  # mentions followed by "of"
    companion: bool = False
    unmarked: int = 0  # times written away from a sentence's start (phrases of several words)
    names: Counter[tuple[str, ...]] | None = None  # of those, its spellings as a name ("Hyper Backup")
    forms: Counter[tuple[str, ...]] | None = None  # its spellings, when a plural is counted as its singular


def candidates(messages: Sequence[dict[str, Any]], vectors: np.ndarray | None = None) -> list[Phrase]:
    """The candidate phrases of ``messages`` (user and assistant text only), scored, best
    first: the ``POOL`` best, then the others the first user message says; they may share
    words. ``vectors``: the messages' embeddings, in order."""
    texts = [(i, _head(m["content"])) for i, m in enumerate(messages) if m.get("role") in ("user", "assistant")]
    if not texts:
        return []
    read = [(i, _split(text)) for i, text in texts]
    lang = language((t for _, t in texts), (k for _, split in read for k in split.keys))
    english = lang == "en"
    stop = stop_words(lang)
    known: dict[str, bool] = {}

    def content(word: str) -> bool:
        answer = known.get(word)
        if answer is None:
            answer = known[word] = is_content(word, stop)
        return answer

    runs_of = []
    for i, split in read:
        runs_of.append((i, _runs(split, content)))
    vocabulary = {t.key for _, runs in runs_of for run in runs for t in run}
    singular = _plurals(vocabulary) if lang in PLURAL_S else {}
    plurals = set(singular) | set(singular.values())  # the words written both ways

    weights = centrality(vectors, len(messages))
    opening = next((i for i, m in enumerate(messages) if m.get("role") == "user"), -1)
    stats: dict[tuple[str, ...], _Stats] = {}  # in order of appearance
    word_noun: Counter[str] = Counter()  # a word's cues, wherever it stands
    word_other: Counter[str] = Counter()
    spellings: dict[str, dict[str, int]] = {}  # word -> its spellings away from a sentence's start
    initial_only: dict[str, dict[str, int]] = {}
    glued: dict[str, str] = {}  # a stop word written as part of a name -> its spelling
    said: set[tuple[str, ...]] = set()  # in the first user message
    for i, runs in runs_of:
        w = weights[i] * (USER_WEIGHT if messages[i]["role"] == "user" else 1.0)
        held: dict[tuple[str, ...], None] = {}  # in order of appearance, never a set's order (hash seeds)
        for run in runs:
            keys = tuple(singular.get(t.key, t.key) for t in run)
            plural = plurals and any(t.key in plurals for t in run)
            for t, kk in zip(run, keys, strict=True):
                if t.glue:
                    glued.setdefault(kk, t.word)
                    continue
                table = initial_only if t.marked else spellings
                counts = table.get(kk)
                if counts is None:
                    counts = table[kk] = {}
                counts[t.word] = counts.get(t.word, 0) + 1
                if english and (t.left or t.right):
                    word_noun[kk] += (t.left & 1) + (t.right & 5 > 0)
                    word_other[kk] += (t.left == 2) + (t.right == 2)
            caps = [t.word[:1].isupper() or not t.word[:1].isalpha() for t in run] if len(run) > 1 else []
            for a, b in _spans(run):
                phrase = keys[a:b]
                st = stats.get(phrase)
                if st is None:
                    st = stats[phrase] = _Stats(first=i)
                held[phrase] = None
                st.mentions += 1
                st.ends += b == len(run)
                if plural and b - a > 1:
                    st.forms = st.forms or Counter()
                    st.forms[tuple(t.word for t in run[a:b])] += 1
                left, right = run[a].left, run[b - 1].right
                if english and (left or right):
                    st.noun += (left & 1) + (right & 5 > 0)
                    st.other += (left == 2) + (right == 2)
                    st.partitive += right == 4
                if a == 1 and b == 2 and run[0].left == 3 and run[0].word.islower() and caps[1]:
                    st.companion = True
                if b - a > 1:
                    st.unmarked += not run[a].marked
                    # a name: capitalised words, away from a sentence's start or holding a code ("Backblaze
                    # B2") or a name capitalised where it need not be ("Gut Kaltenbrunn is")
                    if all(caps[a:b]) and (
                        not run[a].marked
                        or any(_coded(t.word) or not (t.marked or dictionary_word(t.word)) for t in run[a + 1 : b])
                    ):
                        st.names = st.names or Counter()
                        st.names[tuple(t.word for t in run[a:b])] += 1
        if i == opening:
            said = set(held)
        for phrase in held:
            st = stats[phrase]
            st.weight += w
            st.held += 1
            st.last = i
    shown = {kk: _display(spellings.get(kk, {}), initial_only.get(kk, {})) for kk in set(spellings) | set(initial_only)}
    specific = {kk: specificity(text) for kk, text in shown.items()}
    named = {kk: text[:1].isupper() or any(ch.isdigit() for ch in text) for kk, text in shown.items()}

    def text_of(keys: tuple[str, ...], st: _Stats) -> str:
        if st.names:
            form, times = st.names.most_common(1)[0]
            # a name: written so at least half the time, or holding a name ("Gut Kaltenbrunn")
            if 2 * times >= st.unmarked or any(named.get(k) and _a_name(shown[k]) for k in keys if k in shown):
                return " ".join(form)
        if st.forms:  # "5 nights" as written, each word in the case it is shown in
            forms = st.forms
            # the most written; of those, the one with the most words in the singular
            form = max(forms, key=lambda f: (forms[f], sum(key(w) in shown for w in f)))
            return " ".join(_cased(w, shown.get(kk) or w) for w, kk in zip(form, keys, strict=True))
        return " ".join(shown.get(kk) or glued.get(kk, kk) for kk in keys)

    def bonus(keys: tuple[str, ...]) -> float:
        """Names and numbers count more, common words less (``specificity``)."""
        if len(keys) == 1:
            kk = keys[0]
            return (NAME_WEIGHT if named[kk] else 1.0) * specific[kk] if kk in shown else 0.0
        present = [kk for kk in keys if kk in shown]
        if not present:  # only stop words written as a name's part
            return 0.0
        names = sum(1 for kk in present if named[kk])
        return (1.0 + (NAME_WEIGHT - 1.0) * names / len(keys)) * max(specific[kk] for kk in present)

    def noun(keys: tuple[str, ...], st: _Stats) -> float:
        """The cues that ``keys`` reads as a noun phrase, less those that it does not, -1 to 1."""
        last = keys[-1]
        if last in _NO_NOUNS or (len(last) > 4 and last.endswith(_ADVERB_ENDINGS)) or keys[0] in _VERBS:
            return -1.0
        yes = st.noun + word_noun[last]
        no = st.other + word_other[last]
        if len(last) > 4 and last.endswith(_NOT_NOUN_ENDINGS) and not last.endswith("eed"):
            no += 1
        return (yes - no) / (yes + no + 1)

    # who spoke is said elsewhere (the summary's first words): their names alone are no topic
    speakers = {key(w) for m in messages if (name := speaker_of(m)) for w in WORD.findall(name)}
    scored = [
        (st.weight * _length_factor(keys, st.held) * bonus(keys), j, keys, st)
        for j, (keys, st) in enumerate(stats.items())
        if not (speakers and all(is_number(kk) or _names_a_speaker(kk, speakers) for kk in keys))
        and (len(keys) == 1 or len(set(keys)) == len(keys))  # "very very", "ha ha": one word twice is no phrase
    ]
    # best first; ties: the phrase met first (dict order is the order of appearance)
    scored.sort(key=lambda s: (-s[0], s[1]))
    span = max(len(messages) - 1, 1)
    return [
        Phrase(
            keys,
            score,
            text_of(keys, st),
            st.held,
            st.weight,
            st.first / span,
            st.last / span,
            keys in said,
            noun(keys, st) if english else 0.0,
            st.partitive / st.mentions,
            st.companion,
            st.ends / st.mentions,
        )
        for score, _, keys, st in [*scored[:POOL], *(s for s in scored[POOL:] if s[2] in said)]  # the opening's all
        if score > 0
    ]


def select(pool: Sequence[Phrase], k: int) -> list[Phrase]:
    """The ``k`` best of ``pool`` (best first), no two sharing a word."""
    chosen: list[Phrase] = []
    used: set[str] = set()
    for p in pool:
        if used.intersection(p.keys):
            continue
        chosen.append(p)
        used.update(p.keys)
        if len(chosen) == k:
            break
    return chosen


def key_phrases(messages: Sequence[dict[str, Any]], vectors: np.ndarray | None = None, k: int = 8) -> KeyPhrases:
    """The ``k`` best key phrases of ``messages`` (user and assistant text only), best
    first, no two sharing a word, with the candidates they were chosen from (``pool``).
    ``vectors``: the messages' embeddings, in order."""
    pool = candidates(messages, vectors)
    return KeyPhrases(select(pool, k), pool)
