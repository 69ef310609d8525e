"""The soak's file-size lever on a process of the test's own: the soft limit set and lifted
back to the hard one (what makes a disk "full" for one server without root), and how a
process that ignores SIGXFSZ is told apart."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memq.shared.errors import StorageFull
from memq_lab.soak.load import failure_kind
from memq_lab.soak.resource_levers import FileSizeLimit, ignores_file_size_signal

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def _limits(pid: int) -> tuple[str, str]:
    line = next(x for x in Path(f"/proc/{pid}/limits").read_text().splitlines() if "Max file size" in x)
    soft, hard = line.split()[3:5]
    return soft, hard


@pytest.fixture
def sleeper():
    proc = subprocess.Popen(SLEEPER)
    yield proc
    proc.kill()
    proc.wait()


def test_the_soft_limit_is_set_and_lifted_back_to_the_hard_one(sleeper):
    hard = _limits(sleeper.pid)[1]
    limit = FileSizeLimit(16 * 2**20)
    limit.apply([sleeper.pid])
    assert _limits(sleeper.pid) == (str(16 * 2**20), hard)
    limit.lift()
    assert _limits(sleeper.pid) == (hard, hard)
    assert limit.pids == set()


def test_a_process_gone_is_skipped():
    proc = subprocess.Popen(SLEEPER)
    proc.kill()
    proc.wait()
    limit = FileSizeLimit(1024)
    limit.apply([proc.pid])
    assert limit.pids == set()


def test_a_process_started_with_sigxfsz_ignored_is_known(sleeper):
    # Python ignores SIGXFSZ; a child keeps that only when its signals are not restored
    assert not ignores_file_size_signal(sleeper.pid)
    ignoring = subprocess.Popen(SLEEPER, restore_signals=False)
    try:
        assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN
        assert ignores_file_size_signal(ignoring.pid)
    finally:
        ignoring.kill()
        ignoring.wait()


def test_a_failed_send_is_named_by_its_class_and_cause():
    assert failure_kind(StorageFull("no room", cause="redis_out_of_memory")) == "StorageFull(redis_out_of_memory)"
    assert failure_kind(ConnectionError("refused")) == "ConnectionError"
