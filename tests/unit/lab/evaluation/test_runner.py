"""The evaluation runner reads any file in the two formats, whatever its name, and
reports each file with baselines computed in the same run."""

import json

from memq.shared.settings import Settings
from memq.worker.segmentation.detectors.registry import build_detector
from memq_lab.evaluation.runner import evaluate


def test_every_labelled_file_is_scored_with_baselines(tmp_path):
    seg = tmp_path / "segmentation"
    seg.mkdir()
    utt = [[f"a long enough utterance number {i} about the garden and its plants", "0"] for i in range(12)]
    utt[0][1] = "-1"
    utt[6][1] = "1"
    (seg / "mine.json").write_text(json.dumps({"d1": utt}))
    lines = "[NEWLINE]".join(
        [
            "user: hello there, how are you doing today",
            "agent: fine, thanks for asking me",
            "[BOUNDARY]",
            "user: new topic about taxes and forms",
            "agent: sure, which form",
        ]
    )
    (seg / "other.jsonl").write_text(json.dumps({"id": "x", "dialogue": lines}) + "\n")
    (seg / "LICENSE").write_text("not data")
    settings = Settings(data_dir=tmp_path / "data")
    rows = evaluate(
        tmp_path,
        settings,
        ["rules"],
        embedder_factory=lambda: None,  # type: ignore[arg-type,return-value]  # rules embed nothing
        build=lambda n: build_detector(settings, n),
    )
    assert sorted({r.file for r in rows}) == ["mine.json", "other.jsonl"]
    methods = [r.method for r in rows if r.file == "mine.json"]
    assert methods == ["baseline: no boundaries", "baseline: every 4th", "baseline: every boundary", "rules"]
    rules = next(r for r in rows if r.method == "rules" and r.file == "mine.json")
    assert rules.boundaries == 0 and rules.gold == 1 and rules.recall == 0.0
