"""LoCoMo reading and evidence recall, without services."""

import json
from datetime import UTC, datetime, timedelta

from memq_lab.evaluation.locomo.data import find_files, load_locomo, normalise_evidence, render_text
from memq_lab.evaluation.locomo.recall import Found, evidence_found, percentile, summarise
from memq_lab.evaluation.locomo.units import fill, make_units


def _write(tmp_path):
    data = [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted  a cat."},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a photo of a cat"},
                ],
                "session_2_date_time": "9:00 am on 20 May, 2023",
                "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "The cat is called Tom."}],
                "session_3_date_time": "9:00 am on 25 May, 2023",  # a date with no session: skipped
            },
            "qa": [
                {"question": "What is the cat called?", "answer": "Tom", "evidence": ["D2:1"], "category": 4},
                {"question": "Two facts?", "answer": "x", "evidence": ["D1:1; D2:1", "D:1:2", "D9:9"], "category": 1},
                {"question": "Trick?", "adversarial_answer": "none", "evidence": [], "category": 5},
            ],
        }
    ]
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "dev.json").write_text(json.dumps(data))
    (folder / "notes.json").write_text(json.dumps({"not": "locomo"}))
    return folder / "dev.json"


def test_sessions_become_timed_turns_with_captions_and_real_gaps(tmp_path):
    _write(tmp_path)
    assert [p.name for p in find_files(tmp_path)] == ["dev.json"]
    (conv,) = load_locomo(tmp_path / "locomo" / "dev.json", turn_seconds=30)
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conv.turns[0].at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert conv.turns[1].at - conv.turns[0].at == timedelta(seconds=30)
    assert conv.turns[2].at == datetime(2023, 5, 20, 9, 0, tzinfo=UTC)
    assert conv.turns[0].text == "I adopted a cat."
    assert conv.turns[1].text == "Nice! [shares a photo of a cat]"
    assert set(conv.sessions) == {1, 2}


def test_evidence_is_normalised_and_unknown_ids_are_counted(tmp_path):
    (conv,) = load_locomo(_write(tmp_path))
    assert conv.questions[1].evidence == ("D1:1", "D2:1", "D1:2")
    assert conv.dropped_evidence == 1  # D9:9 names no turn
    assert conv.questions[2].answer == "none"
    assert normalise_evidence(["D30:05"]) == ["D30:5"]
    assert normalise_evidence("D8:6; D9:17") == ["D8:6", "D9:17"]


def test_render_text_without_caption():
    assert render_text({"text": " a \n b "}) == "a b"
    assert render_text({"text": "", "blip_caption": "a dog"}) == "[shares a dog]"


def test_evidence_found_ignores_whitespace_and_needs_the_whole_turn():
    found = evidence_found("- Ann: I adopted\n a cat.\n- Bo: hi", ["I adopted a cat.", "The cat is called Tom."])
    assert (found.found, found.total, found.recall, found.complete) == (1, 2, 0.5, False)
    assert evidence_found("The cat is called", ["The cat is called Tom."]).found == 0


def test_summary_means_and_percentiles():
    s = summarise([(Found(1, 2), 100), (Found(2, 2), 300)])
    assert (s.questions, s.recall, s.all_found, s.tokens) == (2, 0.75, 0.5, 200)
    assert summarise([]).questions == 0
    assert percentile([5, 1, 3, 2, 4], 50) == 3
    assert percentile(list(range(1, 101)), 99) == 99


def test_units_and_budget_fill(tmp_path):
    (conv,) = load_locomo(_write(tmp_path))
    assert [len(u.turns) for u in make_units(conv, "turn")] == [1, 1, 1]
    assert [len(u.turns) for u in make_units(conv, "session")] == [2, 1]
    assert [len(u.turns) for u in make_units(conv, "window8")] == [2, 1]
    units = make_units(conv, "turn")

    def count(text):
        return len(text.split())

    text = fill(units, 12, count)  # "[08 May 2023 13:56]" + "- Ann: I adopted a cat." is 10 words
    assert count(text) <= 12 and "I adopted a cat." in text and "Nice!" not in text
    assert fill(units, 1, count) == ""
