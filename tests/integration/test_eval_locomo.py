"""``memq eval-locomo`` end to end on a small LoCoMo-format file written here (never the
real data): the conversation goes through the producer to real worker processes, every
turn is stored, every question is asked through retrieve_memory and the baselines, and
the report, JSON and chart are written."""

from __future__ import annotations

import json
import uuid

import cluster_mode
import pytest
from click.testing import CliRunner

from memq.cli import main

pytestmark = [
    pytest.mark.integration,
    # the evaluation's subject is its report; the pipeline over a clustered mailbox is the
    # subject of the cluster pass' own tests
    pytest.mark.skipif(cluster_mode.enabled(), reason="the evaluation harness runs once"),
]

SESSION_1 = [
    ("Ada", "Hi Ben! I just got back from a week in Lisbon with my sister."),
    ("Ben", "Lisbon! How was it? Did you try the custard tarts?"),
    ("Ada", "Every morning. We also rode the old yellow tram up to the castle."),
    ("Ben", "That sounds lovely. Any plans for the summer?"),
    ("Ada", "I signed up for a pottery class that starts in June."),
    ("Ben", "Pottery is great for unwinding after work."),
]
SESSION_2 = [
    ("Ben", "Hey Ada, how is the pottery class going?"),
    ("Ada", "I made a wobbly blue bowl in the first lesson, it is my favourite thing now."),
    ("Ben", "Ha, the first bowl is always wobbly. My dog Pixel chewed my shoes yesterday."),
    ("Ada", "Oh no, Pixel! Is he still a puppy?"),
    ("Ben", "Eight months old and full of energy."),
    ("Ada", "Bring him to the park on Saturday, my kids would love to meet him."),
]


def conversation(sample_id: str) -> dict:
    def turns(session: int, lines):
        return [{"speaker": s, "dia_id": f"D{session}:{i + 1}", "text": t} for i, (s, t) in enumerate(lines)]

    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ada",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns(1, SESSION_1),
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": turns(2, SESSION_2),
            "session_3_date_time": "9:00 am on 1 July, 2023",  # a date with no session: skipped
        },
        "qa": [
            {
                "question": "Which city did Ada visit with her sister?",
                "answer": "Lisbon",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What did Ada make in her first pottery lesson?",
                "answer": "a blue bowl",
                "evidence": ["D2:2"],
                "category": 4,
            },
            {
                "question": "What is the name of Ben's dog?",
                "answer": "Pixel",
                "evidence": ["D2:3", "D2:5"],
                "category": 1,
            },
            {
                "question": "When did Ada sign up for pottery?",
                "answer": "May 2023",
                "evidence": ["D1:5"],
                "category": 2,
            },
            {"question": "Is Ben a cat person?", "adversarial_answer": "no", "evidence": [], "category": 5},
        ],
    }


def test_eval_locomo_runs_the_real_pipeline_and_reports(service_env, tmp_path, db):
    data = tmp_path / "data"
    (data / "locomo").mkdir(parents=True)
    sample = f"conv-{uuid.uuid4().hex[:8]}"
    (data / "locomo" / "mini.json").write_text(json.dumps([conversation(sample)]))
    out = tmp_path / "out"
    tenant = f"eval{uuid.uuid4().hex[:8]}"
    result = CliRunner().invoke(
        main, ["eval-locomo", str(data), "--tenant", tenant, "--workers", "1", "--out", str(out), "--ablations"]
    )
    assert result.exit_code == 0, result.output

    report = json.loads((out / "locomo-report.json").read_text())
    assert (out / "locomo-recall.png").stat().st_size > 1000
    assert report["conversations"] == [sample] and report["turns"] == 12
    assert report["questions"] == 4  # categories 1-4 with evidence
    assert report["episodes"]["episodes"] >= 2  # the 6-week gap between sessions is a time boundary
    assert sum(report["episodes"]["per_conversation"].values()) == report["episodes"]["episodes"]
    stored = db.execute(
        "SELECT count(*) FROM episode_message WHERE tenant_id = %s AND conversation_id = %s", (tenant, sample)
    ).fetchone()[0]
    assert stored == 12
    overall = report["overall"]
    assert {"memq", "turn", "turn · memq query", "window8", "session"} <= set(overall)
    for method, by_budget in overall.items():
        assert by_budget["2000"]["recall"] == 1.0, method  # the whole conversation fits in 2,000 tokens
        assert all(0.0 <= by_budget[b]["recall"] <= 1.0 and by_budget[b]["tokens"] <= int(b) for b in by_budget)
    assert overall["memq"]["250"]["recall"] > 0.5
    assert set(report["per_category"]) == {"multi-hop", "temporal", "single-hop"}
    lat = report["latency_ms"]
    assert lat["queries"] == 4 and lat["retrieve_p50"] > 0 and lat["legs_sql_p50"] > 0
    # measured at the evaluation's limit and at the limit a caller naming none gets
    assert lat["limit"] != lat["limit_default_limit"] and lat["retrieve_p50_default_limit"] > 0
    assert "at the default limit" in result.output
    assert "memq" in result.output and "target vs turn" in result.output

    # the ablations score memq on the episodes of another detector too, replayed by workers
    # running it into a tenant of their own beside the run's
    assert {"memq auto", "memq no-FSRS", "memq · learned episodes"} <= set(overall)
    other = report["other_episodes"]["learned"]
    assert other["episodes"] >= 2 and sum(other["per_conversation"].values()) == other["episodes"]
    beside = db.execute(
        "SELECT count(*) FROM episode_message WHERE tenant_id = %s AND conversation_id = %s",
        (f"{tenant}--learned", sample),
    ).fetchone()[0]
    assert beside == 12
    assert "learned episodes" in result.output
