"""Hypothesis strategies for what a real caller can hand the producer: message fields
of every shape, valid or not, and metadata that is arbitrary Python data, not just
nice JSON. Reused by the property tests (unit and integration); import as
``import strategies`` (``tests/`` is on ``sys.path``, see ``tests/conftest.py``).

The strategies deliberately cover the awkward corners: control and format
characters, emoji and ZWJ sequences, combining marks, right-to-left text, CJK,
zero-width characters, line and paragraph separators, lone surrogates (which must be
refused), NUL, whitespace-only text, strings up to (and just past) the length limit,
timestamps from year 1 to 9999 with and without time zones, and metadata with
non-finite floats, huge integers, non-string keys, tuples, bytes and deep nesting.
"""

from __future__ import annotations

import functools
import hashlib
import math
import string
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
from hypothesis import strategies as st

from memq.producer.validation import ROLES

#: The clock the property tests validate against (a fixed instant: reproducible).
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

# -- characters ---------------------------------------------------------------------
CONTROL = [chr(c) for c in range(1, 32)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
WHITESPACE = [
    " ",
    "\t",
    "\n",
    "\r",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x1f",
    "\x85",
    "\xa0",
    "\u1680",
    *[chr(c) for c in range(0x2000, 0x200B)],
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e", "\u00ad"]
BIDI = [
    "\u200e",
    "\u200f",
    "\u061c",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
]
COMBINING = ["\u0300", "\u0301", "\u0308", "\u0336", "\u20dd", "\u0489", "\U0001d167"]
EMOJI = ["😀", "👍🏽", "👩‍👩‍👧‍👦", "🇫🇷", "❤️", "🏳️‍🌈", "\U0001f9d1\u200d\U0001f4bb", "#\ufe0f\u20e3"]
SCRIPTS = [
    "مرحبا بالعالم",
    "שלום עולם",
    "漢字かなカナ",
    "한국어",
    "Ελληνικά",
    "русский",
    "हिन्दी",
    "ไทย",
    "ǅ",
    "ß",
    "İ",
    "ﬁ",
]
ODD = [
    "\ufffd",
    "\ufffe",
    "\uffff",
    "\U0010ffff",
    "\U000e0001",
    "\U0001f600" * 3,
    "\x00",
    "\\u0000",
    "\\",
    '"',
    "'",
    "`",
    "{",
    "}",
    "[",
    "]",
    "<",
    ">",
    "&",
    "%s",
    "{0}",
    "$1",
    "\\n",
    "NaN",
    "null",
    "true",
    "1e999",
    "-0",
    "<|endoftext|>",
    "<|im_start|>",
    "<|fim_prefix|>",
    "<|endofprompt|>",
]  # tiktoken's special tokens, as text
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d"]
#: Words that exercise the extractive summariser's fillers, stop words, discourse
#: markers, acknowledgements and sentence splitting.
WORDS = [
    "ok",
    "okay",
    "so",
    "hmm",
    "um",
    "well",
    "right",
    "by the way",
    "anyway",
    "btw",
    "do you",
    "yes",
    "hi",
    "hello",
    "thanks",
    "the",
    "starter",
    "sourdough",
    "don't",
    "it's",
    "well-known",
    "3.14",
    "1,000",
    "e.g.",
    "U.S.A.",
    "?",
    "!",
    ".",
    "...",
    "\u2026",
    ",",
    ";",
    ":",
    "-",
    "--",
    "\u2014",
    "'",
    "search",
    "weather",
]

#: Any code point except surrogates (hypothesis' default alphabet excludes "Cs").
any_char = st.characters(codec=None, exclude_categories=["Cs"])
special_char = st.sampled_from(CONTROL + WHITESPACE + ZERO_WIDTH + BIDI + COMBINING + EMOJI + SCRIPTS + ODD)
surrogate_char = st.one_of(st.sampled_from(SURROGATES), st.characters(categories=["Cs"]))


def unicode_text(min_size: int = 0, max_size: int = 60) -> st.SearchStrategy[str]:
    """Arbitrary text, heavy on the awkward characters (no lone surrogates; NUL at times)."""
    return st.lists(
        st.one_of(any_char, special_char, st.sampled_from(WORDS)), min_size=min_size, max_size=max_size
    ).map("".join)


def prose(max_words: int = 40) -> st.SearchStrategy[str]:
    """Sentence-like text: words joined by varied whitespace and punctuation."""
    sep = st.sampled_from([" ", " ", " ", ", ", ". ", "? ", "! ", "\n", "\n\n", "\t", "\u2028", "\u3000", "  "])
    word = st.one_of(st.sampled_from(WORDS), st.text(string.ascii_letters, min_size=1, max_size=12), unicode_text(1, 6))
    return st.lists(st.tuples(word, sep), min_size=1, max_size=max_words).map(lambda ps: "".join(w + s for w, s in ps))


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def long_text(max_chars: int) -> st.SearchStrategy[str]:
    """Long strings built cheaply by repetition: a unit repeated to a length up to
    ``max_chars`` (often exactly ``max_chars``), as adversarial inputs for regexes."""
    unit = st.one_of(
        st.sampled_from(
            [
                "a",
                " ",
                ".",
                "!",
                "?",
                "\n",
                "ok ",
                "hm",
                "a-",
                "a'",
                "1.",
                "ok,",
                ". ",
                "\u2028",
                "\t",
                "\u200b",
                "😀",
                "漢",
                "a\u0301",
                "by the way ",
                "do you ",
                "word ",
                "x" * 30 + " ",
                "\r\n",
            ]
        ),
        unicode_text(1, 8),
        prose(8),
    )
    # (short lengths first: hypothesis shrinks towards the first branch)
    length = st.one_of(st.integers(1, max_chars), st.just(max_chars), st.integers(max(1, max_chars - 10), max_chars))
    return st.builds(_repeat, unit, length)


def contents(max_chars: int = 100_000) -> st.SearchStrategy[Any]:
    """Message content: mostly acceptable text of every kind, sometimes what must be
    refused (blank, too long, lone surrogates, NUL, not a string)."""
    return st.one_of(
        prose(60),
        unicode_text(1, 200),
        long_text(max_chars),
        st.lists(st.sampled_from(WHITESPACE + ZERO_WIDTH), min_size=0, max_size=10).map("".join),  # blank-ish
        st.tuples(unicode_text(0, 10), surrogate_char, unicode_text(0, 10)).map("".join),
        st.tuples(unicode_text(0, 10), st.just("\x00"), unicode_text(0, 10)).map("".join),
        st.builds(lambda n: "x" * n, st.just(max_chars + 1)),  # too long (built lazily: a short repr)
        st.one_of(st.none(), st.integers(), st.binary(max_size=5), st.lists(st.text(max_size=3), max_size=2)),
    )


def roles() -> st.SearchStrategy[Any]:
    invalid = st.one_of(
        st.sampled_from(ROLES).map(str.upper), st.sampled_from(["", None, 0, "user ", "bot"]), unicode_text(0, 8)
    )
    return st.one_of(st.sampled_from(ROLES), st.sampled_from(ROLES), invalid.map(lambda v: v))


# -- timestamps ---------------------------------------------------------------------
def fixed_offsets() -> st.SearchStrategy[timezone]:
    return st.builds(
        lambda minutes, seconds: timezone(timedelta(minutes=minutes, seconds=seconds)),
        st.integers(-(24 * 60 - 1), 24 * 60 - 1),
        st.sampled_from([0, 0, 0, 30]),
    )


def tzinfos() -> st.SearchStrategy[Any]:
    return st.one_of(st.just(UTC), fixed_offsets(), st.timezones())


def aware_datetimes(min_year: int = 1, max_year: int = 9999) -> st.SearchStrategy[datetime]:
    naive = st.datetimes(min_value=datetime(min_year, 1, 1), max_value=datetime(max_year, 12, 31, 23, 59, 59, 999_999))
    return st.builds(lambda d, tz: d.replace(tzinfo=tz), naive, tzinfos())


def plausible_datetimes() -> st.SearchStrategy[datetime]:
    """Aware instants near the accepted range: 1899 to a little past NOW + 5 minutes."""
    lo, hi = datetime(1899, 12, 30), (NOW + timedelta(minutes=10)).replace(tzinfo=None)
    recent = st.datetimes(min_value=(NOW - timedelta(days=3)).replace(tzinfo=None), max_value=hi)
    return st.builds(
        lambda d, tz: d.replace(tzinfo=tz), st.one_of(recent, st.datetimes(min_value=lo, max_value=hi)), tzinfos()
    )


def iso_string(ts: datetime, style: int, digits: int, pad: str) -> str:
    """``ts`` (aware) written as ISO-8601 with a Z, an offset or fractional seconds."""
    frac = f"{ts.microsecond:06d}"[:digits]
    base = ts.strftime("%Y-%m-%dT%H:%M:%S") if style != 4 else ts.strftime("%Y-%m-%d %H:%M:%S")
    if ts.year < 1000:  # strftime does not zero-pad years on every platform
        base = f"{ts.year:04d}" + base[base.index("-") :]
    if digits:
        base += "." + frac
    offset = ts.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    total = abs(int(offset.total_seconds()))
    hh, mm, ss = total // 3600, total % 3600 // 60, total % 60
    text_offset = f"{sign}{hh:02d}:{mm:02d}" + (f":{ss:02d}" if ss else "")
    if style == 0 and offset == timedelta(0):
        suffix = "Z"
    elif style == 1:
        suffix = "z" if offset == timedelta(0) else text_offset
    elif style == 2:
        suffix = f"{sign}{hh:02d}{mm:02d}" + (f"{ss:02d}" if ss else "")
    elif style == 3:
        suffix = ""  # naive: must be refused
    else:
        suffix = text_offset
    return pad + base + suffix + pad


def iso_strings(datetimes: st.SearchStrategy[datetime] | None = None) -> st.SearchStrategy[str]:
    return st.builds(
        iso_string,
        datetimes if datetimes is not None else st.one_of(plausible_datetimes(), aware_datetimes()),
        st.integers(0, 4),
        st.sampled_from([0, 0, 1, 3, 6]),
        st.sampled_from(["", "", " ", "\t", "\n"]),
    )


def timestamps() -> st.SearchStrategy[Any]:
    """Timestamps as callers pass them: aware datetimes and ISO strings over years 1 to
    9999 (mostly near now), naive ones, garbage and non-strings."""
    return st.one_of(
        st.none(),
        plausible_datetimes(),
        aware_datetimes(),
        iso_strings(),
        st.datetimes(),  # naive: refused
        st.sampled_from(
            [
                "",
                "now",
                "2026-05-01",
                "2026-05-01T10:00:00ZZ",
                "2026-13-01T00:00:00Z",
                "2026-05-01T24:00:00Z",
                "2026-05-01T23:59:60Z",
                "9999-12-31T23:59:59-14:00",
                "0001-01-01T00:00:00+14:00",
                "1900-01-01T00:00:00Z",
                "1899-12-31T23:59:59.999999Z",
                "2026-05-01T10:00:00.1234567Z",
            ]
        ),
        unicode_text(0, 30),
        st.one_of(st.integers(), st.floats(), st.dates()),
    )


# -- ids ----------------------------------------------------------------------------
def message_ids() -> st.SearchStrategy[Any]:
    printable = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=200)
    return st.one_of(
        st.none(),
        printable,
        st.uuids().map(str),
        unicode_text(0, 10),
        st.just("x" * 201),
        st.just("a b"),
        st.integers(),
    )


def tenants() -> st.SearchStrategy[Any]:
    valid = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=64)
    invalid = st.one_of(st.sampled_from(["a" * 65, "a/b", "", " ", "a b", 7]), unicode_text(0, 8)).map(lambda v: v)
    return st.one_of(st.none(), valid, invalid)


def conversation_ids() -> st.SearchStrategy[Any]:
    valid = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:\-]{0,40}\Z")
    invalid = st.one_of(st.sampled_from([None, "", "a/b", "-a", "x" * 200, 5]), unicode_text(0, 8)).map(lambda v: v)
    return st.one_of(valid, valid, valid, invalid)  # (a mapped strategy is one branch: one_of does not flatten it)


# -- metadata -----------------------------------------------------------------------
def json_scalars(text: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(-(2**70), 2**70),
        st.builds(lambda e, s: s * 10**e, st.integers(15, 5000), st.sampled_from([1, -1, 7])),  # big ints
        st.floats(),  # nan, inf, -0.0, subnormals, 1e308 ...
        st.sampled_from([0.1, -0.0, 1e23, 1e-7, 5e-324, 1.7976931348623157e308, 2.0**53 + 1, 123456789.123456789]),
        text if text is not None else unicode_text(0, 30),
    )


def _odd_keys() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(), st.none(), st.booleans(), st.floats(), st.tuples(st.integers()), st.binary(max_size=3)
    )


def json_values(max_leaves: int = 25) -> st.SearchStrategy[Any]:
    """JSON-ish Python data: mostly plain JSON, sometimes tuples, bytes, sets and
    non-string keys (which must be refused)."""
    keys = st.one_of(unicode_text(0, 12), st.sampled_from(["name", "tool_calls", "tool_name", "function", "", " "]))
    return st.recursive(
        json_scalars(),
        lambda children: st.one_of(
            st.lists(children, max_size=5),
            st.dictionaries(keys, children, max_size=5),
            st.lists(children, max_size=3).map(tuple),
            st.dictionaries(_odd_keys(), children, min_size=1, max_size=2),
            st.binary(max_size=4),
            st.frozensets(st.integers(), max_size=2),
        ),
        max_leaves=max_leaves,
    )


def plain_json_values(max_leaves: int = 25) -> st.SearchStrategy[Any]:
    """Only what JSON holds (strings may still carry NUL or surrogates)."""
    keys = unicode_text(0, 12)
    return st.recursive(
        json_scalars(),
        lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=5)),
        max_leaves=max_leaves,
    )


def nested(depth: st.SearchStrategy[int] | None = None) -> st.SearchStrategy[Any]:
    """A chain of dicts and lists ``depth`` levels deep."""

    def build(n: int, kinds: list[bool]) -> Any:
        node: Any = "leaf"
        for i in range(n):
            node = {"x": node} if kinds[i % len(kinds)] else [node]
        return node

    depth = depth if depth is not None else st.one_of(st.integers(1, 60), st.sampled_from([500, 1_500, 5_000]))
    return st.builds(build, depth, st.lists(st.booleans(), min_size=1, max_size=4))


def tool_names() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(["web_search", "weather", "calculator", "search"]),
        unicode_text(0, 20),
        st.sampled_from(["", " ", "\n", "\u200b"]),
        st.none(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
        st.lists(st.text(max_size=3), max_size=2),
        st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
    )


def tool_call(objects_only: bool = False) -> st.SearchStrategy[Any]:
    """One element of ``metadata.tool_calls``: the OpenAI and Anthropic shapes, loose
    variants of them (a bare function name, a non-string name) and arbitrary values."""
    objects = st.one_of(
        st.fixed_dictionaries({"name": tool_names()}),
        st.fixed_dictionaries(
            {
                "id": st.text(max_size=5),
                "type": st.just("function"),
                "function": st.fixed_dictionaries({"name": tool_names()}, optional={"arguments": unicode_text(0, 20)}),
            }
        ),
        st.fixed_dictionaries({"function": st.one_of(tool_names(), st.lists(st.integers(), max_size=2))}),
        st.fixed_dictionaries({"type": st.just("tool_use"), "name": tool_names(), "input": plain_json_values(5)}),
        st.dictionaries(unicode_text(0, 8), plain_json_values(3), max_size=3),
    )
    return objects if objects_only else st.one_of(objects, json_scalars().map(lambda v: v))


def tool_calls(objects_only: bool = False) -> st.SearchStrategy[Any]:
    """``metadata.tool_calls`` in any shape (mostly lists of calls)."""
    calls = st.lists(tool_call(objects_only), min_size=1, max_size=4)
    if objects_only:
        return calls
    return st.one_of(
        calls,
        calls,
        st.none(),
        st.just([]),
        st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
        st.text(max_size=8),
        st.integers(),
        calls.map(tuple),
    )


def tool_metadata(objects_only: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """Metadata carrying the fields memq reads: ``tool_calls``, ``tool_name``, ``name``
    (``objects_only``: ``tool_calls`` is always a list of objects)."""
    calls = tool_calls(objects_only)
    return st.one_of(
        st.fixed_dictionaries({"tool_calls": calls}, optional={"name": tool_names(), "note": unicode_text(0, 10)}),
        st.fixed_dictionaries({"tool_name": tool_names()}, optional={"name": tool_names(), "tool_calls": calls}),
        st.fixed_dictionaries({"name": tool_names()}),
    )


def metadatas() -> st.SearchStrategy[Any]:
    """``metadata`` as a caller may pass it: None, dicts of arbitrary data (with or
    without the tool fields memq reads), deep nesting, over-size, and non-dicts."""
    base = st.dictionaries(
        st.one_of(unicode_text(0, 12), st.sampled_from(["source", "lang", "attachments"])), json_values(), max_size=5
    )
    tool_fields = tool_metadata()
    return st.one_of(
        st.none(),
        st.just({}),
        st.builds(lambda a, b: {**a, **b}, base, tool_fields),
        tool_fields,
        st.dictionaries(unicode_text(0, 12), plain_json_values(), max_size=6),
        st.builds(lambda n: {"deep": n}, nested()),
        st.builds(lambda s: {"big": s}, long_text(20_000)),
        json_values(5),  # often not a dict
    )


# -- whole messages -----------------------------------------------------------------
@functools.cache
def field_values(name: str, max_chars: int = 100_000) -> st.SearchStrategy[Any]:
    """Every kind of value for one public field (valid ones included)."""
    return {
        "conversation_id": conversation_ids,
        "role": roles,
        "content": lambda: contents(max_chars),
        "timestamp": timestamps,
        "message_id": message_ids,
        "metadata": metadatas,
        "tenant": tenants,
    }[name]()


@st.composite
def raw_messages(draw, max_chars: int = 100_000) -> dict[str, Any]:
    """One message as a mapping of the public field names, as ``add_messages`` takes
    it: a mostly acceptable message with up to three fields replaced by any value of
    that field, or dropped, and sometimes an unknown field."""
    raw = draw(accepted_raw_messages(max_chars))
    names = ["conversation_id", "role", "content", "timestamp", "message_id", "metadata", "tenant", "unknown", "drop"]
    for name in draw(st.lists(st.sampled_from(names), max_size=3, unique=True)):
        if name == "unknown":
            raw[draw(st.sampled_from(["text", "ts", "Content", "meta", ""]))] = draw(st.sampled_from([1, "x", None]))
        elif name == "drop":
            raw.pop(draw(st.sampled_from(["conversation_id", "role", "content", "timestamp", "metadata"])), None)
        else:
            raw[name] = draw(field_values(name, max_chars))
    return raw


@functools.cache
def accepted_raw_messages(max_chars: int = 100_000) -> st.SearchStrategy[dict[str, Any]]:
    """Messages that are mostly acceptable (valid ids and roles, plausible timestamps,
    plain JSON metadata), to spend examples on processing rather than refusals. Some
    are still refused; callers filter with the validator."""
    return st.builds(
        lambda required, optional: {**required, **optional},
        st.fixed_dictionaries(
            {
                "conversation_id": st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:\-]{0,40}\Z"),
                "role": st.sampled_from(ROLES),
                "content": st.one_of(prose(60), unicode_text(1, 200), long_text(max_chars)),
            }
        ),
        st.fixed_dictionaries(
            {},
            optional={
                "timestamp": st.one_of(plausible_datetimes(), iso_strings(plausible_datetimes())),
                "message_id": st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=200),
                "metadata": st.one_of(
                    tool_metadata(objects_only=True),
                    tool_metadata(),
                    st.dictionaries(unicode_text(0, 12), plain_json_values(), max_size=6),
                    st.builds(
                        lambda a, b: {**a, **b},
                        st.dictionaries(unicode_text(0, 12), plain_json_values(), max_size=4),
                        tool_metadata(),
                    ),
                    st.builds(lambda n: {"deep": n}, nested(st.integers(1, 31))),
                ),
                "tenant": st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=64),
            },
        ),
    )


# -- the worker's path, without servers ---------------------------------------------
# What a worker does with an accepted message, step by step, on plain data: the inbox
# item enqueue.lua would push, decoding and numbering, token counting, engine steps
# (the state round-tripping through JSON as it does through Redis), closing the open
# event, the segment record as Redis holds it, and the episode row.

CONTEXT = (
    "My sourdough loaf came out flat and dense again this morning, what could be wrong with it?",
    "A flat loaf usually means the starter is weak or the dough over-proofed. How old is your starter?",
)
FOLLOW_UP = "The starter is five days old and smells a bit like nail polish remover, is that normal?"
DETECTORS = ("rules", "hysteresis", "default", "dual_channel")


def fake_unit_vector(text: str, dim: int) -> np.ndarray:
    """A deterministic unit float32 vector for ``text`` (no model)."""
    seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.float32(np.linalg.norm(v))


class FakeEmbedder:
    """Stands in for ``memq.shared.embeddings.Embedder``: unit rows, float32, deterministic."""

    name = "test/hash-embedder"

    def __init__(self, dim: int = 384):
        self.dim = dim
        self.calls: list[list[str]] = []

    def embed(self, texts) -> np.ndarray:
        texts = list(texts)
        self.calls.append(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([fake_unit_vector(t, self.dim) for t in texts])


def lua_number(us: int) -> int:
    """A microsecond count as enqueue.lua handles it: a Lua double, printed with %d."""
    return int(float(us))


def inbox_item(
    message_id: str, role: str, content: str, sent_us: int | None, metadata, *, arrival_us: int, last_us: int | None
) -> str:
    """The inbox item ``enqueue.lua`` pushes (clamp policy): "<effective_us> <arrival_us> <json>"."""
    from memq.shared.mailbox.codec import encode_payload

    payload = encode_payload(message_id, role, content, sent_us, metadata)
    effective = lua_number(arrival_us if sent_us is None else sent_us)
    if last_us is not None and effective < last_us:
        effective = last_us
    return f"{effective} {lua_number(arrival_us)} {payload}"


@dataclass
class WorkerRun:
    items: list[str]  # inbox items, in order
    messages: list[Any]  # numbered QueuedMessages, in order (the accepted one at index 2)
    steps: list[Any] = field(default_factory=list)
    segments: list[Any] = field(default_factory=list)  # Segments, as episode creation reads them from Redis
    episodes: list[Any] = field(default_factory=list)  # EpisodeRow per segment

    @property
    def message(self):
        return self.messages[2]


def run_worker(
    valid,
    settings,
    *,
    detector_name: str,
    gap_seconds: float,
    tenant: str = "default",
    conversation_id: str = "conv-1",
    fence: int = 1,
    embedder: FakeEmbedder | None = None,
    first_seq: int = 1,
) -> WorkerRun:
    """Process ``valid`` (a ``ValidMessage``) as a worker would: two context messages
    ``gap_seconds`` apart before it (a negative gap makes its timestamp get clamped), one
    after, each a step of the engine; then a flush closes the open event. Every closed
    segment goes through its Redis record into ``build_episode``."""
    from memq.shared.mailbox.codec import decode_buffer_item, decode_inbox_item, to_micros
    from memq.shared.mailbox.segment import Segment
    from memq.worker.conversation_store import stored_segment
    from memq.worker.episodes.builder import build_episode
    from memq.worker.segmentation.detectors.registry import build_detector
    from memq.worker.segmentation.event_state import EventState
    from memq.worker.segmentation.segmenter import Segmenter

    embedder = embedder or FakeEmbedder(settings.embedding_dim)
    arrival_us = to_micros(NOW)
    sent_us = to_micros(valid.timestamp) if valid.timestamp is not None else None
    anchor = arrival_us if sent_us is None else sent_us
    gap_us = round(gap_seconds * 1_000_000)
    new_id = valid.message_id or "generated-message-id"
    spec = [
        (f"{new_id}-ctx1", "user", CONTEXT[0], anchor - 2 * gap_us, None),
        (f"{new_id}-ctx2", "assistant", CONTEXT[1], anchor - gap_us, None),
        (new_id, valid.role, valid.content, sent_us, valid.metadata),
        (f"{new_id}-next", "user", FOLLOW_UP, None, None),
    ]
    items, last = [], None
    for message_id, role, content, sent, metadata in spec:
        item = inbox_item(message_id, role, content, sent, metadata, arrival_us=arrival_us, last_us=last)
        items.append(item)
        last = int(item.split(" ", 1)[0])

    detector = build_detector(settings, detector_name, embed_text=lambda t: fake_unit_vector(t, embedder.dim))
    segmenter = Segmenter.from_settings(settings, detector)

    decoded = []
    for item in items:
        a, b = decode_inbox_item(item), decode_inbox_item(item.encode("utf-8"))  # redis-py hands back bytes
        assert a == b, (a, b)
        decoded.append(a)
    vectors = list(embedder.embed([m.content for m in decoded])) if detector.needs_embeddings else [None] * len(decoded)

    run = WorkerRun(items, [])
    last_eff: int | None = None

    def keep(segment) -> None:
        raw = stored_segment(tenant, conversation_id, segment, fence).encode()
        raw = raw.encode("utf-8").decode("utf-8")  # through Redis
        parsed = Segment.decode(raw)
        run.segments.append(parsed)
        run.episodes.append(build_episode(parsed, settings, embedder))

    for j, queued in enumerate(decoded):
        message = queued.numbered(first_seq + j, last_eff)
        assert decode_buffer_item(message.raw) == message
        assert decode_buffer_item(message.raw.encode("utf-8")) == message
        run.messages.append(message)
        ahead = [v for v in vectors[j + 1 : j + 1 + detector.lookahead] if v is not None]
        result = segmenter.advance(message, vectors[j], ahead)
        run.steps.append(result)
        last_eff = to_micros(message.timestamp)
        segmenter.state = EventState.from_json(segmenter.state.to_json())  # persisted in Redis between steps
        if result.segment is not None:
            keep(result.segment)
    closing = segmenter.close("flush")
    if closing is not None:
        run.steps.append(closing)
        EventState.from_json(closing.state.to_json())
        keep(closing.segment)
    return run


# -- comparing JSON values ----------------------------------------------------------
def same_json(a: Any, b: Any) -> bool:
    """Exact equality that also tells 1 from 1.0 from True and 0.0 from -0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return a == b


def same_json_number(a: Any, b: Any) -> bool:
    """Equality as JSON numbers (what PostgreSQL's jsonb keeps: ``1e+23`` comes back as
    ``100000000000000000000000`` and ``-0.0`` as ``0.0``): a float equals the number read
    back when that number, read as a double, is the same double."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, float) or isinstance(b, float):
            return float(a) == float(b)
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json_number(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json_number(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
