"""The console log's tracebacks name where an error happened, never what the frames held:
a request's locals carry bearer keys and message text."""

from __future__ import annotations

import logging

import structlog


def test_a_console_traceback_carries_no_local_variable(capsys):
    from memq.shared.logging import configure_logging
    from memq.shared.settings import Settings

    configure_logging(Settings(log_format="console"), force=True)
    try:
        # made at run time: a traceback shows source lines, and these must be seen only as values
        key, words = "-".join(("memq", "abc", "notakey")), " ".join(("the", "user's", "words"))

        def handle(authorization: str) -> None:
            text = words  # noqa: F841 - a local a traceback with locals would print
            raise RuntimeError("boom")

        try:
            handle(f"Bearer {key}")
        except RuntimeError:
            structlog.get_logger("memq.test").exception("failed")
        err = capsys.readouterr().err
        assert "RuntimeError" in err and "handle" in err  # the traceback is there
        assert key not in err and words not in err
    finally:
        logging.getLogger().handlers.clear()
        configure_logging(Settings(), force=True)
