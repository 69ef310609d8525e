import pytest
import regex  # type: ignore[import-untyped]  # no stubs installed (types-regex)
from hypothesis import given
from hypothesis import strategies as st

from memq.worker.episodes.key_phrases import key_phrases
from memq.worker.episodes.words import content_words, is_content, language, specificity, stop_words, surface_words

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
    ("A Synology DS224+ in C++ or a+b", ["Synology", "DS224+", "C++"]),  # a plus sign ends a name, not a sum
    ("B2 or S3 for AI, at 5 PM, OK?", ["B2", "S3", "AI"]),  # acronyms of two characters; not "PM", "OK"
]


@pytest.mark.parametrize(("text", "expected"), WORD_CASES)
def test_key_terms_are_whole_words_in_any_script(text, expected):
    assert surface_words(text) == expected


def test_the_demo_key_terms_keep_accented_names_whole():
    messages = [
        {"role": "user", "content": "We fly to São Tomé and Príncipe at night, Príncipe first."},
        {"role": "assistant", "content": "Príncipe is quieter; São Tomé has the capital."},
    ]
    terms = [p.text for p in key_phrases(messages, k=5)]
    assert "Príncipe" in terms and "São Tomé" in terms and not any("ncipe" in t.replace("Príncipe", "") for t in terms)


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


LANGUAGES = [
    ("Hola, ¿qué tal? Estoy muy bien, pero la casa es para mi madre y los niños.", "es"),
    ("Je pense que le train est très en retard, mais nous avons le temps pour un café.", "fr"),
    ("Ich glaube, der Zug ist nicht pünktlich, aber wir haben auch noch Zeit.", "de"),
    ("I think the train is late, but we have time for a coffee and that is fine.", "en"),
    ("Встреча в Москве завтра в десять", "ru"),
    ("Зустріч у Києві завтра, її перенесли", "uk"),  # noqa: RUF001 - Ukrainian, Cyrillic letters on purpose
    ("東京で会議があります", "ja"),
    ("我们明天在北京开会", "zh"),
    ("Ταξίδι στην Αθήνα αύριο", "el"),
    ("ok", "en"),
    ("", "en"),
]


@pytest.mark.parametrize(("text", "expected"), LANGUAGES)
def test_the_language_of_a_text(text, expected):
    assert language([text]) == expected


def test_stop_words_follow_the_language():
    spanish = "Mañana vamos para la playa con los niños y la abuela."
    assert "para" not in content_words(spanish, stop_words(language([spanish])))
    assert {"playa", "niños", "abuela"} <= set(content_words(spanish, stop_words("es")))
    assert stop_words("xx") == stop_words("en")  # a language with no list: English only


def test_common_words_are_less_specific_than_names_and_jargon():
    assert specificity("time") < specificity("dough") < specificity("Lisbon") == 1.0
    assert specificity("idempotency") == 1.0  # several tokens: rare
    assert 0.09 <= specificity("the") <= specificity("request") <= 1.0


@given(st.text(max_size=200))
def test_any_text_has_a_language_and_its_stop_words(text):
    lang = language([text])
    assert isinstance(lang, str) and stop_words(lang) >= stop_words("en")


@pytest.mark.parametrize(
    "filler",
    ["haha", "Hahaha", "jajaja", "hehe", "hihi", "lol", "LOOL", "lmao", "hmmm", "kkkk", "ugh", "aww", "huh", "omg"],
)
def test_laughter_and_hums_carry_no_content(filler):
    assert not is_content(filler)


@pytest.mark.parametrize("word", ["Hyper", "hike", "hahn", "jeans", "kashi", "Lola", "hummus"])
def test_words_that_begin_like_laughter_still_do(word):
    assert is_content(word)


def test_a_dictionary_word_is_one_token_and_a_name_is_not():
    from memq.worker.episodes.words import dictionary_word

    assert dictionary_word("dough") and dictionary_word("Gut")
    assert not dictionary_word("okafor") and not dictionary_word("Kaltenbrunn")
