import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memq.worker.episodes.extractive import QUOTE_MAX_CHARS, TITLE_MAX_CHARS, extractive_summary, extractive_title
from memq.worker.episodes.key_phrases import key_phrases
from memq.worker.episodes.words import content_words

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


def test_the_title_names_the_topic_in_three_to_ten_words_of_the_conversation():
    title = extractive_title(CONV)
    assert 3 <= len(title.split()) <= 10
    assert "starter" in title.lower()
    text = " ".join(m["content"] for m in CONV).lower()
    for word in title.replace(",", "").replace(":", "").split():  # whole words of the conversation, or the joiner
        assert word.lower() in text.split() or word.lower() + "," in text or word == "and" or word.lower() in text, word
    assert not title.startswith("My sourdough")  # not the first words of the first message


def test_a_tiny_exchange_still_gets_a_title_of_at_least_three_words():
    title = extractive_title([{"role": "user", "content": "ok"}, {"role": "assistant", "content": "fine"}])
    assert 3 <= len(title.split()) <= 10


def test_a_title_of_nothing_but_stop_words_says_who_spoke():
    messages = [
        {"role": "user", "content": "and so it is", "metadata": {"name": "Caroline"}},
        {"role": "assistant", "content": "yes it is", "metadata": {"name": "Melanie"}},
    ]
    assert extractive_title(messages) == "Short exchange between Caroline and Melanie"


def test_the_title_keeps_names_and_numbers_whole():
    messages = [
        {"role": "user", "content": "We booked the TAP flights for May 8, an apartment in Príncipe Real."},
        {"role": "assistant", "content": "Príncipe Real in May is lovely; the TAP flight lands at 09:25."},
        {"role": "user", "content": "Príncipe Real was cheaper than Alfama."},
    ]
    title = extractive_title(messages)
    assert "Príncipe Real" in title and "ncipe" not in title.replace("Príncipe", "")


@given(st.integers(1, 12), st.integers(0, 12))
def test_the_title_respects_any_word_bounds(lo, extra):
    hi = lo + extra
    for messages in (CONV, [{"role": "user", "content": "ok"}]):
        title = extractive_title(messages, lo, hi)
        assert lo <= len(title.split()) <= hi, (lo, hi, title)
        assert not title.endswith((" and", ","))


def test_summary_is_third_person_quotes_in_order_and_names_tools():
    summary = extractive_summary(CONV, max_sentences=3, tools=["web_search"])
    assert summary.startswith("The user and the assistant: 5 messages (2 user, 2 assistant, 1 tool).")
    assert "The user said:" in summary and "The assistant said:" in summary
    assert "Tools used: web_search." in summary
    assert "irrelevant tool dump" not in summary
    quoted = [s for s in ("flat and dense", "five days old", "acetone smell") if s in summary]
    assert quoted == sorted(quoted, key=summary.index)


def test_key_terms_ignore_stopwords_and_tool_output():
    terms = " ".join(p.text for p in key_phrases(CONV)).split()
    assert "starter" in terms and "the" not in terms and "irrelevant" not in terms


def test_the_summary_says_who_and_when_by_name():
    messages = [
        {
            "role": "user",
            "content": "I went to the LGBTQ support group yesterday and it was powerful.",
            "metadata": {"name": "Caroline"},
            "timestamp": "2023-05-08T13:56:00+00:00",
        },
        {
            "role": "assistant",
            "content": "That support group sounds inspiring, Caroline.",
            "metadata": {"name": "Melanie"},
            "timestamp": "2023-05-09T09:00:00+00:00",
        },
    ]
    summary = extractive_summary(messages, max_sentences=2)
    assert summary.startswith("Caroline and Melanie, 8 May 2023 to 9 May 2023: 2 messages (1 user, 1 assistant).")
    assert "Caroline said: \u201cI went to the LGBTQ support group" in summary
    assert "Melanie said:" in summary and "support group" in summary.split("Key terms:")[1]


ROOT = Path(__file__).resolve().parents[4]  # the checkout: the subprocesses import worker/ from it
TIES = [
    {"role": "user", "content": "Caroline and Melanie talked about family, support and love at the picnic."},
    {"role": "assistant", "content": "Melanie said family and support matter; Caroline agreed about love."},
]


def test_key_phrases_that_tie_come_in_order_of_first_appearance():
    # each in both messages; shown as written (names keep their capital, and come first)
    assert [p.text for p in key_phrases(TIES, k=5)][:2] == ["Caroline", "Melanie"]


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
    assert 3 <= len(title.split()) <= 10 and len(title) <= TITLE_MAX_CHARS + 1


def test_a_100000_character_word_is_neither_a_title_nor_a_keyword():
    title = extractive_title(_one("a" * N + " is long"))
    assert 3 <= len(title.split()) <= 10 and len(title) <= 300
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
    extractive_title(CONV)  # loads the tokenizer key phrases weigh words by (once, as a worker does at start)
    messages = _one(text) + _one(text, "assistant")
    started = time.perf_counter()
    extractive_title(messages)
    extractive_summary(messages)
    assert time.perf_counter() - started < 2.0
