"""``memq eval-longmemeval`` end to end on a small slice of the real LongMemEval file (two
questions, each haystack cut to its evidence sessions and two others, written here; the
data itself is never in the repository): every session goes through the producer to real
worker processes into the question's own tenant, every turn is stored, each question is
asked user-wide through retrieve_memory and the four baselines, and the report, JSON and
chart are written with every measure for every system. No figure is asserted: the slice
is too small to mean anything."""

from __future__ import annotations

import json
import uuid

import cluster_mode
import pytest
from click.testing import CliRunner

from memq.cli import main
from memq_lab import eval_data

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(cluster_mode.enabled(), reason="the evaluation harness runs once"),
]

# The public data sets are never in the repository: MEMQ_EVAL_DATA names their folder.
EVAL_DATA = eval_data.from_env()
DATA = EVAL_DATA / "longmemeval" / "longmemeval_s_dev.json" if EVAL_DATA is not None else None
SYSTEMS = {"memq", "bm25_sessions", "dense_sessions", "dense_turns_best", "hybrid_turns"}


def sliced(item: dict, others: int = 2) -> dict:
    """The question with its evidence sessions and the first ``others`` other sessions, in
    the haystack's order."""
    evidence = set(item["answer_session_ids"])
    plain = [i for i, sid in enumerate(item["haystack_session_ids"]) if sid not in evidence][:others]
    keep = [i for i, sid in enumerate(item["haystack_session_ids"]) if sid in evidence or i in plain]
    return {
        **item,
        **{
            key: [item[key][i] for i in keep] for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions")
        },
    }


@pytest.mark.skipif(DATA is None, reason="MEMQ_EVAL_DATA is not set (the public evaluation data sets)")
def test_eval_longmemeval_replays_a_slice_and_reports_every_measure(service_env, tmp_path, db):
    assert DATA is not None
    if not DATA.is_file():
        pytest.skip(f"no longmemeval/longmemeval_s_dev.json in MEMQ_EVAL_DATA ({EVAL_DATA})")
    items = [x for x in json.loads(DATA.read_text()) if not x["question_id"].endswith("_abs")][:2]
    data = tmp_path / "lme.json"
    data.write_text(json.dumps([sliced(x) for x in items]))
    prefix = f"t{uuid.uuid4().hex[:8]}-"
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "eval-longmemeval",
            str(data),
            "--workers",
            "1",
            "--prefix",
            prefix,
            "--out",
            str(out),
            "--json",
            str(tmp_path / "report.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report == json.loads((out / "longmemeval-report.json").read_text())
    assert (out / "longmemeval.png").stat().st_size > 1000
    assert report["questions"] == 2 and {s["name"] for s in report["systems"]} == SYSTEMS

    for item in items:  # each question's haystack in a tenant of its own, every turn stored
        tenant = prefix + item["question_id"]
        stored = db.execute(
            "SELECT count(DISTINCT conversation_id), count(*) FROM episode_message WHERE tenant_id = %s", (tenant,)
        ).fetchone()
        sessions = sliced(item)["haystack_sessions"]
        assert stored == (len(sessions), sum(len(s) for s in sessions))
        owners = db.execute("SELECT DISTINCT user_id FROM conversation WHERE tenant_id = %s", (tenant,)).fetchall()
        assert owners == [("user",)]  # one user's history

    names = [
        *(f"session_{m}@{k}" for m in ("recall_any", "recall_all", "ndcg") for k in (5, 10)),
        *(f"evidence_recall@{b}_tokens" for b in (250, 500, 1000, 2000)),
    ]
    for system in report["systems"]:
        for name in names:
            assert 0.0 <= system[name] <= 1.0, (system["name"], name)
        assert system["latency_p50_ms"] > 0 and set(system["per_type"]) <= {x["question_type"] for x in items}
    turn_level = {s["name"] for s in report["systems"] if "turn_ndcg@10" in s}
    assert turn_level == {"memq", "dense_turns_best", "hybrid_turns"}  # whole sessions rank no turns
    assert report["replay"]["messages"] > 0 and report["replay"]["messages_per_second"] > 0
    assert "LongMemEval_S" in result.output and "per question type" in result.output
