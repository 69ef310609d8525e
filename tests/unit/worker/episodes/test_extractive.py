import time
from pathlib import Path
from typing import Any

import pytest
import regex  # type: ignore[import-untyped]  # no stubs installed (types-regex)
from hypothesis import given
from hypothesis import strategies as st

from memq.worker.episodes.extractive import (
    QUOTE_MAX_CHARS,
    TITLE_MAX_CHARS,
    content_words,
    extractive_summary,
    extractive_title,
    keywords,
    surface_words,
)

CONV: list[dict[str, Any]] = [
    {"role": "user", "content": "My sourdough loaf came out flat and dense again this morning."},
    {
        "role": "assistant",
        "content": "A flat loaf usually means the starter is weak or the dough over-proofed. How old is your starter?",
    },
    {"role": "user", "content": "The starter is five days old and smells like nail polish."},
    {
        "role": "assistant",
        "content": "That acetone smell means the starter is hungry; feed it twice a day for a week before baking.",
    },
    {"role": "tool", "content": "irrelevant tool dump " * 50, "metadata": {"tool_name": "web_search"}},
]


def test_title_is_five_to_fifteen_words_from_the_conversation():
    title = extractive_title(CONV)
    assert 5 <= len(title.split()) <= 15
    assert "starter" in title.lower() or "sourdough" in title.lower()


def test_a_tiny_exchange_still_gets_a_title_of_at_least_five_words():
    title = extractive_title([{"role": "user", "content": "ok"}, {"role": "assistant", "content": "fine"}])
    assert 5 <= len(title.split()) <= 15


def test_summary_is_third_person_quotes_in_order_and_names_tools():
    summary = extractive_summary(CONV, max_sentences=3, tools=["web_search"])
    assert summary.startswith("An exchange of 5 messages (2 user, 2 assistant, 1 tool).")
    assert "The user said:" in summary and "The assistant said:" in summary
    assert "Tools used: web_search." in summary
    assert "irrelevant tool dump" not in summary
    quoted = [s for s in ("flat and dense", "five days old", "acetone smell") if s in summary]
    assert quoted == sorted(quoted, key=summary.index)


def test_keywords_ignore_stopwords_and_tool_output():
    assert "starter" in keywords(CONV) and "the" not in keywords(CONV) and "irrelevant" not in keywords(CONV)


ROOT = Path(__file__).resolve().parents[4]  # the checkout: the subprocesses import worker/ from it
TIES = [
    {"role": "user", "content": "Caroline and Melanie talked about family, support and love at the picnic."},
    {"role": "assistant", "content": "Melanie said family and support matter; Caroline agreed about love."},
]


def test_keywords_that_tie_come_in_order_of_first_appearance():
    # each in both messages; shown as written (names keep their capital)
    assert keywords(TIES, 5) == ["Caroline", "Melanie", "family", "support", "love"]


def test_the_same_messages_give_the_same_summary_in_every_process():
    """Word order must not follow the process's string hash seed (a set's order does)."""
    import subprocess
    import sys

    code = (
        "from memq.worker.episodes.extractive import extractive_summary; "
        f"print(extractive_summary({TIES!r}, max_sentences=2, tools=[]))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(seed), "PATH": ""},
            cwd=str(ROOT),
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert len(outputs) == 1, outputs


N = 100_000


def _one(text: str, role: str = "user") -> list[dict]:
    return [{"role": role, "content": text}]


def test_a_100000_character_sentence_gives_a_short_summary_and_title():
    words = [f"topic{i % 977}word" for i in range(N // 12)]
    text = " ".join(words)[:N]  # one sentence, no punctuation
    summary = extractive_summary(_one(text) + _one(text, "assistant"))
    assert len(summary) < 2 * QUOTE_MAX_CHARS + 600  # was ~2 x 100,000: too long for remote embedding models
    assert "\u2026" in summary
    title = extractive_title(_one(text))
    assert 5 <= len(title.split()) <= 15 and len(title) <= TITLE_MAX_CHARS + 1


def test_a_100000_character_word_is_neither_a_title_nor_a_keyword():
    title = extractive_title(_one("a" * N + " is long"))
    assert 5 <= len(title.split()) <= 15 and len(title) <= 300
    assert content_words("a" * 51 + " normal words") == ["normal", "words"]
    summary = extractive_summary(_one("a" * N + " b c"))
    assert len(summary) < QUOTE_MAX_CHARS + 200 and "Key terms" not in summary


def test_at_most_twenty_tools_are_named():
    tools = [f"tool{i}" for i in range(500)]
    summary = extractive_summary(CONV, tools=tools)
    assert "tool19, " not in summary and "tool19 and 480 more." in summary and "tool20" not in summary


ADVERSARIAL = [
    "ok " * (N // 3),
    "ok," * (N // 3),
    "hm" * (N // 2),
    "a" + " " * (N - 1),
    "." * N,
    ". " * (N // 2),
    "a-" * (N // 2),
    "1." * (N // 2),
    "\u2028" + "x" * (N - 1),
    "by the way " * (N // 11),
    "\U0001f600" * N,
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda t: repr(t[:6]))
def test_no_catastrophic_backtracking_on_100000_characters(text):
    """Each of these takes tens of milliseconds (linear in the input); the bound only
    catches exponential or quadratic regressions."""
    messages = _one(text) + _one(text, "assistant")
    started = time.perf_counter()
    extractive_title(messages)
    extractive_summary(messages)
    assert time.perf_counter() - started < 2.0


# Key terms in any script: real cases, each word whole (no fragment such as "ncipe").
WORD_CASES = [
    ("Lunch in São Tomé and Príncipe on Friday", ["Lunch", "São", "Tomé", "Príncipe", "Friday"]),
    ("O'Brien’s e-mail about Zürich", ["O'Brien’s", "e-mail", "Zürich"]),
    (
        "The 9:40 train, a 5km walk, 20% off and 3.5kg of flour",
        ["9:40", "train", "5km", "walk", "20%", "3.5kg", "flour"],
    ),
    ("Встреча в Москве завтра", ["Встреча", "Москве", "завтра"]),
    ("Ταξίδι, Αθήνα", ["Ταξίδι", "Αθήνα"]),
    ("नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),
    ("東京で会議があります", ["東京", "会議"]),  # Han runs kept, the Hiragana particles and endings left out
    ("サッカーの試合", ["サッカー", "試合"]),
    ("Tome\u0301 cafe\u0301", ["Tomé", "café"]),  # decomposed accents: one letter each (NFC)
    ("the and of it is to", []),
    ("Flight A320 or COVID19 rules", ["Flight", "A320", "COVID19", "rules"]),
]


@pytest.mark.parametrize(("text", "expected"), WORD_CASES)
def test_key_terms_are_whole_words_in_any_script(text, expected):
    assert surface_words(text) == expected


def test_the_demo_key_terms_keep_accented_names_whole():
    messages = [
        {"role": "user", "content": "We fly to São Tomé and Príncipe at night, Príncipe first."},
        {"role": "assistant", "content": "Príncipe is quieter; São Tomé has the capital."},
    ]
    terms = keywords(messages, 5)
    assert "Príncipe" in terms and "ncipe" not in terms and "real" not in terms


_LETTER = regex.compile(r"[\p{L}\p{M}]")


@given(st.text(max_size=300))
def test_key_terms_of_any_text_are_whole_words_of_it(text):
    """Over arbitrary Unicode: every key term is in the (NFC) text, and where it stands
    the characters on either side are not letters of the same word (no fragments), except
    in the scripts written without spaces, where words are cut where the script changes."""
    import unicodedata

    normal = unicodedata.normalize("NFC", text)
    for word in surface_words(text):
        assert word in normal
        if any("\u3040" <= ch <= "\u9fff" for ch in word):
            continue
        starts = [m.start() for m in regex.finditer(regex.escape(word), normal, overlapped=True)]
        assert any(
            not (i > 0 and _LETTER.match(normal[i - 1]))
            and not (i + len(word) < len(normal) and _LETTER.match(normal[i + len(word)]))
            for i in starts
        ), (word, normal)
        assert 2 <= len(word) <= 50
