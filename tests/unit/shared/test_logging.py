"""The console log's tracebacks name where an error happened, never what the frames held:
a request's locals carry bearer keys and message text. In a process of its own: logging's
configuration is process-wide, and other tests capture log lines under theirs."""

from __future__ import annotations

import subprocess
import sys

# The secret values are made at run time: a traceback shows source lines, and these must be
# seen only as values (locals), which is what must not be printed.
PROGRAM = """
import structlog
from memq.shared.logging import configure_logging
from memq.shared.settings import Settings

configure_logging(Settings(log_format="console"), force=True)
key, words = "-".join(("memq", "abc", "notakey")), " ".join(("the", "user's", "words"))

def handle(authorization):
    text = words
    raise RuntimeError("boom")

try:
    handle("Bearer " + key)
except RuntimeError:
    structlog.get_logger("memq.test").exception("failed")
"""


def test_a_console_traceback_carries_no_local_variable():
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120, check=True)
    err = done.stderr
    assert "RuntimeError" in err and "handle" in err  # the traceback is there
    assert "memq-abc-notakey" not in err and "the user's words" not in err
