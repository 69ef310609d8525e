"""Words of a conversation, in any script: what a word is, which words carry content, and
the stop words of the language a text is written in. Pure and deterministic; used by the
extractive titles, summaries and key phrases (``extractive.py``, ``key_phrases.py``).

A word: letters of any script with their combining marks (accents, Devanagari vowel
signs ...), joined by an inner apostrophe or hyphen (O'Brien, e-mail); a number with its
decimals or a time (9:40) and an attached unit or per cent (5km, 3.5kg, 20%). Text is
NFC-normalised first, so a letter and its accent typed apart are one character. In the
scripts written without spaces (Japanese, Chinese), a word is cut where the script
changes and the Hiragana runs (particles, endings) are left out.

Stop words: memq's own English list (function words and chat fillers), joined by the
stopwords-iso list of the text's language when it is another one: detected from the
script (Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai, Hangul, Kana, Han) or, for
Latin script, from which language's most frequent function words the text uses most.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Iterable

import regex  # type: ignore[import-untyped]  # no stubs installed (types-regex)

_LETTERS = r"\p{L}[\p{L}\p{M}\p{Nd}]*"  # a word may carry digits after its first letter: A320, COVID19
_UNIT = r"\p{L}[\p{L}\p{M}]*(?![\p{L}\p{M}\p{Nd}'\u2019])"
# never a fragment: no word starts right after a letter, mark or digit, and a number is not
# a word when a combining mark follows it ("000\u0300")
_START = r"(?<![\p{L}\p{M}\p{Nd}])"
# a name may end in one or two plus signs ("DS224+", "C++", "Disney+"), when no word follows them ("a+b")
_PLUS = r"(?:\+{1,2}+(?![\p{L}\p{M}\p{Nd}+]))?+"
WORD = regex.compile(
    rf"{_START}{_LETTERS}(?:['\u2019\-]{_LETTERS})*{_PLUS}"
    rf"|{_START}\p{{Nd}}++(?:[.,:]\p{{Nd}}++)*+(?:%|{_UNIT})?+(?!\p{{M}})"
)
WORD_MAX_CHARS = 50

_ENGLISH_WORDS = """
a able about above actually after again against all already also always am amazing an and
another answer any anyone anything anyway anyways are aren't around as at awesome basically be
because been before being below between bit both but by bye came can can't cause come comes
congrats congratulations cool could couldn't cute day days definitely did didn't directly do
does doesn't doing don't done down during each else etc even ever every everyone everything
exactly excited exciting fantastic feel feels felt few finally for from fun further get glad go
going gonna good goodbye got great guess had hadn't happy has hasn't have haven't having he
he'd he'll he's hear heard hello help her here here's hers herself hey hi him himself his
honestly hope hopefully hoping hour hours how how'd how'll how're how's i i'd i'll i'm i've idea ideas if in
incredible inspiring instead into is isn't it it'd it'll it's its itself just kind know lately least let
let's like literally lot lots love loved lovely luckily lucky make maybe me mean means minute
minutes month months more most mostly much my myself need never nice no nope nor not nothing
now of off often oh ok okay on once one only or other others ought our ours ourselves out over
own part per please plus pm point pretty probably proud question questions quickly quite really
recently right said same say says second seconds see seriously share shared shares sharing she
she'd she'll she's should shouldn't since so some someone something sometimes sort sounds still
stuff such super sure tell than thank thankfully thanks that that'll that's the their theirs them
themselves then there there's these they they'd they'll they're they've thing things think this
those though thrilled through time times to told too totally try trying two under until up us
usually very via wanna want was wasn't way we we'd we'll we're we've week weeks well were
weren't what what's when when's where where's whether which while who who's whom why why's will
with won't wonderful would wouldn't wow yeah year years yep yes yet you you'd you'll you're
you've your yours yourself yourselves yup
"""
ENGLISH = frozenset(_ENGLISH_WORDS.split())

# The most frequent function words of the Latin-script languages told apart (a text is
# taken to be in the language whose words it uses most, when it uses at least a few).
_MARKERS = {
    "en": "the and is are was you that this with have for not but what",
    "es": "el la los las que de y en es por para una con pero muy",
    "fr": "le la les des est et une que pour dans pas avec sur mais très",
    "de": "der die das und ist nicht ein eine ich mit auf für sie aber auch",
    "it": "il lo gli che di una per non con sono della anche ma molto",
    "pt": "o os as que de uma para com não mas muito você está são",
    "nl": "de het een en is niet dat van ik je met voor maar ook",
    "sv": "och att det som en är på för med inte jag till har men",
    "pl": "i w nie się na że jest to z do jak ale czy",
    "tr": "ve bir bu da de için ile çok ne ama gibi var",
    "id": "yang dan di ini itu dengan untuk tidak ada dari saya akan",
}
MARKERS = {lang: frozenset(words.split()) for lang, words in _MARKERS.items()}
MIN_MARKERS = 3  # a text using fewer marker words of any language is read as English
# each marker word's languages: a text's words are looked up once, not once per language
_MARKER_LANGUAGES: dict[str, tuple[str, ...]] = {
    w: tuple(lang for lang, markers in MARKERS.items() if w in markers) for w in set().union(*MARKERS.values())
}


def key(word: str) -> str:
    """What two spellings of one word share: case-folded, the typographic apostrophe as ASCII."""
    return word.casefold().replace("\u2019", "'")


def base(word: str) -> str:
    """A word without its possessive ending (Pixel's, Pixel’s -> Pixel)."""
    return word[:-2] if len(word) > 3 and word[-2:] in ("'s", "\u2019s") else word


def script(ch: str) -> str:
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


# every letter ``script`` names, in one class: most words hold none, and are told so at once
_UNSPACED = regex.compile("[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def unspaced(word: str) -> bool:
    """Whether ``word`` holds a letter of a script written without spaces (``script``)."""
    return not word.isascii() and _UNSPACED.search(word) is not None


def unspaced_runs(word: str) -> list[str]:
    """A word of Japanese or Chinese text cut where the script changes: the Han and
    Katakana runs carry the content (東京, 会議); Hiragana runs are mostly particles and
    endings (で, があります) and are left out."""
    runs: list[str] = []
    for ch in word:
        if runs and script(ch) == script(runs[-1][-1]):
            runs[-1] += ch
        else:
            runs.append(ch)
    return [r for r in runs if script(r[0]) not in ("hiragana", "")]


def words(text: str) -> list[str]:
    """Every word of ``text`` as written, in order (stop words included)."""
    out: list[str] = []
    for w in WORD.findall(unicodedata.normalize("NFC", text)):
        out += unspaced_runs(w) if unspaced(w) else [w]
    return out


# Scripts that name their language well enough for a stop-word list, by a letter's range.
_SCRIPT_LANGUAGES = (
    ("\u0400", "\u04ff", "ru"),
    ("\u0370", "\u03ff", "el"),
    ("\u0600", "\u06ff", "ar"),
    ("\u0590", "\u05ff", "he"),
    ("\u0900", "\u097f", "hi"),
    ("\u0e00", "\u0e7f", "th"),
    ("\uac00", "\ud7af", "ko"),
    ("\u3040", "\u30ff", "ja"),
    ("\u3400", "\u9fff", "zh"),
)
_UKRAINIAN = frozenset("іїєґІЇЄҐ")


_SCRIPT_PATTERNS = tuple((regex.compile(rf"[{lo}-{hi}]"), lang) for lo, hi, lang in _SCRIPT_LANGUAGES)
_ALPHA = regex.compile(r"\p{L}")


def _script_language(text: str) -> str | None:
    if text.isascii():
        return None
    counts = {lang: n for pattern, lang in _SCRIPT_PATTERNS if (n := len(pattern.findall(text)))}
    if not counts:
        return None
    lang = max(counts, key=lambda k: (counts[k], k))
    if counts[lang] * 2 < len(_ALPHA.findall(text)):
        return None
    if lang == "zh" and counts.get("ja"):  # Japanese writes Han with Kana; Chinese without
        return "ja"
    if lang == "ru" and any(ch in _UKRAINIAN for ch in text):
        return "uk"
    return lang


def language(texts: Iterable[str], keys: Iterable[str] | None = None) -> str:
    """The language most of ``texts`` is written in (ISO 639-1), "en" when unsure.
    ``keys``: the ``key`` of each of their words, when already known."""
    text = "\n".join(texts)
    by_script = _script_language(text)
    if by_script:
        return by_script
    hits = dict.fromkeys(MARKERS, 0)
    for k in (key(w) for w in WORD.findall(text)) if keys is None else keys:
        for lang in _MARKER_LANGUAGES.get(k, ()):
            hits[lang] += 1
    best = max(hits, key=lambda k: (hits[k], k == "en"))
    return best if hits[best] >= MIN_MARKERS else "en"


@functools.lru_cache(maxsize=64)
def stop_words(lang: str = "en") -> frozenset[str]:
    """memq's English stop words, and stopwords-iso's list of ``lang`` when it is another."""
    if lang == "en":
        return ENGLISH
    import stopwordsiso

    if not stopwordsiso.has_lang(lang):
        return ENGLISH
    return ENGLISH | frozenset(key(w) for w in stopwordsiso.stopwords(lang))


def is_number(word: str) -> bool:
    return word[:1].isdigit()


# laughter, hums and interjections in any length ("haha", "jajaja", "lool", "hmmm", "kkkk", "aww", "huh"): chat
# filler no stop-word list can spell out in full
_FILLER = re.compile(
    r"(?:ha|he|hi|ja|je|ks)(?:ha|he|hi|ja|je|ks)+h?|l+o+l+|lmf?a+o+|rofl|k{3,}|h+m+|u+g+h+"
    r"|a+w+|a+h+|o+h+|u+h+|u+m+|huh|o{2,}p+s+|omg|ya+y+|whoa+|yikes",
    re.I,
)


_ACRONYM = re.compile(r"[A-Z][A-Z0-9]")


def is_content(word: str, stop: frozenset[str] = ENGLISH) -> bool:
    """A word that can carry what a text is about: not a stop word, not a stray letter
    (words of one or two letters are mostly function words, except in the scripts written
    without spaces, where a two-character Han word is a word), no run-away string, no
    laughter. A number of three characters or more counts (9:40, 5km, 20%, 138), and so
    does a two-character acronym or code in capitals ("AI", "B2", "S3")."""
    shortest = 2 if script(word[0]) or _ACRONYM.fullmatch(word) else 3
    return shortest <= len(word) <= WORD_MAX_CHARS and key(word) not in stop and not _FILLER.fullmatch(word)


def surface_words(text: str, stop: frozenset[str] = ENGLISH) -> list[str]:
    """The content words of ``text`` as written (case and accents kept), in order."""
    return [w for w in words(text) if is_content(w, stop)]


def content_words(text: str, stop: frozenset[str] = ENGLISH) -> list[str]:
    """The content words of ``text``, case-folded: what counts as the same word."""
    return [key(w) for w in surface_words(text, stop)]


COMMON_RANK = 50_000  # a word that is one token ranked above this is as specific as a rare word


@functools.lru_cache(maxsize=65_536)
def specificity(word: str) -> float:
    """How specific a word is in general text, 0.09 to 1, with no corpus of our own: the BPE
    tokenizer (cl100k_base) learnt its merges in order of frequency, so a word that is one
    early token (" time" is token 892) is common and a word of several tokens ("asyncio",
    "idempotency") or one late token (" Lisbon": 81801) is specific. Squared, so that the
    most common words weigh a third of a name."""
    from memq.shared.tokens import encoding

    tokens = encoding().encode(" " + word, disallowed_special=())
    if len(tokens) != 1:
        return 1.0
    rank = max(tokens[0], 2)
    return float(min(1.0, max(0.3, math.log(rank) / math.log(COMMON_RANK))) ** 2)


@functools.lru_cache(maxsize=65_536)
def written_as_name(word: str) -> bool:
    """Whether a capitalised word seen only at the start of sentences is a name ("Caroline",
    "Lisbon") rather than a common word capitalised by its place ("Dough", "Then"): the BPE
    tokenizer learnt the spelling that is more frequent in general text as fewer or
    earlier tokens, and a name is more often written capitalised."""
    from memq.shared.tokens import encoding

    enc = encoding()
    upper = enc.encode(" " + word, disallowed_special=())
    lower = enc.encode(" " + word.lower(), disallowed_special=())
    return (len(upper), upper[:1]) < (len(lower), lower[:1])


@functools.lru_cache(maxsize=65_536)
def dictionary_word(word: str) -> bool:
    """Whether ``word`` in lower case is a word of general text, one token of the BPE
    tokenizer ("dough", "compost", "gut", "asyncio"), rather than a name, which lower-cased
    is cut in pieces ("okafor", "kaltenbrunn", "synology"): a word written capitalised once
    mid-sentence is a name when it is no dictionary word (or ``written_as_name``: "Kafka")."""
    from memq.shared.tokens import encoding

    return len(encoding().encode(" " + word.lower(), disallowed_special=())) == 1
