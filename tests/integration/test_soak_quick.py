"""`make soak` in its quick mode, as part of the suite: thousands of messages are for
`make soak`; here every fault runs once, briefly, on the soak's own Redis, PostgreSQL,
workers and scripted LLM (started and stopped by the soak itself), and the verdict is
read from its JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memq_lab.soak.faults import ALL

pytestmark = [pytest.mark.soak, pytest.mark.timeout(900)]


@pytest.mark.skipif(
    os.environ.get("MEMQ_TEST_REDIS_CLUSTER") == "1", reason="the soak runs its own services; once is enough"
)
def test_quick_soak_loses_and_duplicates_nothing(tmp_path, service_env):
    report_path = tmp_path / "soak.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMQ_", "REDIS_URL", "DATABASE_URL"))}
    env["MEMQ_DATA_DIR"] = service_env["MEMQ_DATA_DIR"]
    run = subprocess.run(
        [sys.executable, "-m", "memq", "soak", "--quick", "--json", str(report_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=880,
    )
    assert report_path.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(report_path.read_text())
    phases = {p["fault"]: p for p in report["phases"]}
    assert set(phases) == {f.name for f in ALL}
    for name, p in phases.items():
        assert p["acknowledged"] > 0, name
        assert p["lost"] == 0 and p["duplicated"] == 0, (name, p)
        assert p["recover_seconds"] is not None and not p["harness_error"], (name, p)
        assert not p["slow"] and p["recover_seconds"] <= p["target_seconds"], (name, p)
    # a power loss may take the last second of acknowledged messages, and no more than that
    rate = report["config"]["rate"]
    assert phases["redis_power_loss"]["lost_allowed"] <= 2 * rate, phases["redis_power_loss"]
    assert all(p["lost_allowed"] == 0 for n, p in phases.items() if n not in ("redis_power_loss", "mixed"))
    assert not report["order_violations"] and not report["audit_findings"] and not report["stuck"]
    assert report["quarantined"] == 0
    assert report["worker_stalls"] == 0, "a worker's event loop stalled (worker_stalled in its log)"
    assert report["ok"] and run.returncode == 0, run.stdout[-3000:]
