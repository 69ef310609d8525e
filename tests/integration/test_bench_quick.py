"""``memq bench --quick`` keeps working: it runs every benchmark family end to end on the
real services and writes every named figure. Only that: the values are the benchmark's to
report, never a test's to assert (no timing assertions in tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cluster_mode
import pytest

from memq_lab.bench.context import SCALES
from memq_lab.bench.runner import FAMILIES

pytestmark = pytest.mark.integration
MEMQ = str(Path(sys.executable).with_name("memq"))
# Real dialogue text from the public data sets when MEMQ_EVAL_DATA names them (the bench's own
# fallback, the shipped sample, otherwise): the command reads the variable itself.


@pytest.mark.skipif(cluster_mode.enabled(), reason="the bench measures the default deployment (one Redis)")
def test_the_quick_bench_writes_every_named_figure(service_env, tmp_path):
    report = tmp_path / "bench.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMQ_MAILBOX_REDIS")}
    # A broker database of its own: the bench's workers never take a task of the tests' (db 15)
    env["REDIS_URL"] = service_env["REDIS_URL"].rsplit("/", 1)[0] + "/12"
    out = subprocess.run(
        [MEMQ, "bench", "--quick", "--json", str(report)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    document = json.loads(report.read_text())
    names = {m["name"] for m in document["measurements"]}
    expected = {name for _, produced in FAMILIES.values() for name in produced}
    assert expected <= names, f"missing: {sorted(expected - names)}"
    for m in document["measurements"]:
        assert set(m) >= {"name", "value", "unit", "floor", "ratio", "params"}
        assert isinstance(m["value"], (int, float)), m
    # each worker shape ran the stream as often as the scale says, every run reported
    runs = {m["name"]: m["params"].get("runs") for m in document["measurements"]}
    for name in ("pipeline", "pipeline_1", "pipeline_2"):
        assert len(runs[name]) == SCALES["quick"].pipeline_repeats, runs
