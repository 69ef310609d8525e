import unicodedata

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memq.worker.episodes.key_phrases import MAX_PHRASE_WORDS, centrality, key_phrases
from memq.worker.episodes.words import base, key, words


def _msgs(*texts: str) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


def test_a_phrase_that_recurs_beats_its_words_alone_and_no_two_phrases_share_a_word():
    phrases = key_phrases(
        _msgs(
            "Should we stay in Príncipe Real or in Alfama?",
            "Príncipe Real is quieter than Alfama, and the metro is close.",
            "Then Príncipe Real it is, near the metro.",
        )
    )
    texts = [p.text for p in phrases]
    assert texts[0] == "Príncipe Real"
    keys = [k for p in phrases for k in p.keys]
    assert len(keys) == len(set(keys))
    assert all(1 <= len(p.keys) <= MAX_PHRASE_WORDS for p in phrases)


def test_a_phrase_never_spans_punctuation_and_numbers_alone_are_no_phrase():
    phrases = [p.text for p in key_phrases(_msgs("Budget: 900, maybe 1000. Road bike, carbon frame.", "900 or 1000?"))]
    assert "900" not in phrases and "1000" not in phrases
    assert all("," not in p and "." not in p for p in phrases)
    assert "road bike" in phrases or "carbon frame" in phrases


@pytest.mark.parametrize(
    ("text", "whole", "cut"),
    [
        ("fine, cheaper than losing 15 years of photos", "losing", "losing 15"),  # "years" is a stop word
        ("I spent 300 euros on the 4TB drives", "300 euros", "spent 300"),
        ("Assume 2,000 payment requests per second.", "2,000 payment", "assume 2,000"),  # capitalised by its place
        ("we meet on May 8 at noon", "May 8", None),  # after a name the number is part of it
        ("the iPhone 15 is great", "iPhone 15", None),
        ("go to room 101.", "room 101", None),  # nothing after the number for it to count
    ],
)
def test_no_phrase_ends_in_a_number_that_counts_the_word_after_it(text, whole, cut):
    phrases = [p.text for p in key_phrases(_msgs(text))]
    assert whole in phrases and (cut is None or cut not in phrases)


def test_a_word_seen_only_at_sentence_starts_is_lower_cased_unless_an_acronym():
    phrases = [
        p.text for p in key_phrases(_msgs("Dough rose well. NAS backups run nightly.", "Dough again. NAS again."))
    ]
    assert "dough" in phrases and "NAS" in phrases


def test_messages_far_from_the_episode_count_less():
    v = np.array([[1.0, 0.0], [0.9, 0.1], [0.95, 0.05], [0.0, 1.0]])
    w = centrality(v, 4)
    assert w[3] < min(w[:3]) and abs(sum(w) - 4) < 1e-9
    assert centrality(None, 3) == [1.0, 1.0, 1.0]
    assert centrality(np.zeros((2, 2)), 2) == [1.0, 1.0]


def test_a_possessive_is_the_same_word():
    phrases = key_phrases(_msgs("Pixel's food bowl is empty.", "Feed Pixel twice a day; Pixel\u2019s bowl too."))
    assert phrases[0].text == "Pixel" and "pixel's" not in [k for p in phrases for k in p.keys]


@given(st.lists(st.text(max_size=200), min_size=1, max_size=4))
@example(["a000 a000", "a000 a000"])  # a word said twice in a row is no phrase of two words
def test_every_phrase_is_made_of_whole_words_of_the_messages(texts):
    messages = _msgs(*texts)
    phrases = key_phrases(messages)
    known = {key(base(w)) for t in texts for w in words(unicodedata.normalize("NFC", t))}
    for p in phrases:
        assert set(p.keys) <= known, (p, texts)
        assert p.score > 0 and p.text.strip()
    assert len({k for p in phrases for k in p.keys}) == sum(len(p.keys) for p in phrases)


def test_the_phrases_do_not_depend_on_the_process_string_hashing():
    """Ties between phrases starting at the same word ("sunrise", "sunrise last") are broken
    by a fixed order, not a set's: every worker, whatever its PYTHONHASHSEED, titles and
    summarises a segment alike (a retried episode on another worker reads the same)."""
    import json
    import os
    import subprocess
    import sys

    program = (
        "import json; from memq.worker.episodes.key_phrases import key_phrases; "
        "m = [{'role': 'user', 'content': 'Yeah, I painted that lake sunrise last year! Sunrise colours.'}, "
        "{'role': 'assistant', 'content': 'Painting looks like a great outlet. Which lake was it, last summer?'}]; "
        "print(json.dumps([p.text for p in key_phrases(m)]))"
    )
    answers = {
        subprocess.run(
            [sys.executable, "-c", program],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(6)
    }
    assert len(answers) == 1, answers
    assert json.loads(answers.pop())


def test_a_plural_is_its_singular_and_a_phrase_is_shown_as_written():
    phrases = key_phrases(
        _msgs(
            "I want proper backups for 5 nights of photos.",
            "A backup on the NAS and an off-site backup: that covers 5 nights of photos.",
            "ok, two backups then",
        ),
        k=12,
    )
    keys = [k for p in phrases for k in p.keys]
    assert "backup" in keys and "backups" not in keys
    assert "5 nights" in [p.text for p in phrases]


def test_a_capitalised_stop_word_inside_a_name_is_part_of_it():
    messages = _msgs("Back up the MacBook with Time Machine.", "Then Time Machine needs a share.")
    phrases = [p.text for p in key_phrases(messages)]
    assert "Time Machine" in phrases and "Time" not in phrases


def test_a_full_stop_after_a_title_ends_no_sentence():
    phrases = [p.text for p in key_phrases(_msgs("what did dr okafor say?", "Dr. Okafor said to rest the knee."))]
    assert "Okafor" in phrases


@pytest.mark.parametrize(
    ("texts", "phrase", "reads_as_noun"),
    [
        (("The lock is held by the task.", "Release the lock before the await."), "lock", True),
        (("It hangs forever.", "When it hangs, the worker is stuck."), "hangs", False),
        (("That was a huge difference.", "It is huge."), "huge", False),
        (("I'm currently reading.", "Currently, yes."), "currently", False),
    ],
)
def test_a_phrase_carries_cues_that_it_reads_as_a_noun(texts, phrase, reads_as_noun):
    from memq.worker.episodes.key_phrases import candidates

    found = {p.text.lower(): p for p in candidates(_msgs(*texts))}
    assert (found[phrase].noun > 0) is reads_as_noun, found[phrase]


def test_the_phrases_carry_what_a_title_picks_its_subject_by():
    messages = _msgs(
        "I'm planning a trip to Lisbon with my partner Jonas.",
        "Lisbon in May is lovely; Jonas will like the trams.",
        "A photo of the trams, please.",
        "Here is a photo of the trams of Lisbon.",
    )
    found = {p.text: p for p in key_phrases(messages).pool}
    assert found["Lisbon"].held == 3 and found["Lisbon"].opening and found["Lisbon"].last == 1.0
    assert found["Jonas"].companion and not found["Lisbon"].companion
    assert found["photo"].partitive == 1.0
