"""``beside``: two pieces of work at once, the other one always finished before it returns."""

from __future__ import annotations

import threading

import pytest

from memq.shared.retrieval.beside import beside


def test_both_results_and_the_other_runs_on_another_thread() -> None:
    here_thread = threading.get_ident()
    there, here = beside(threading.get_ident, lambda: "here")
    assert here == "here" and there != here_thread


def test_both_run_at_once() -> None:
    """Each waits for the other to have started: run one after the other, they would never finish."""
    started = [threading.Event(), threading.Event()]

    def meet(mine: int) -> int:
        started[mine].set()
        assert started[1 - mine].wait(timeout=30), "the other never started"
        return mine

    assert beside(lambda: meet(0), lambda: meet(1)) == (0, 1)


def test_an_error_here_waits_for_the_other_to_finish_and_wins() -> None:
    """What the other uses (a connection) is handed back only after it is done with it."""
    release = threading.Event()
    finished: list[str] = []

    def there() -> None:
        release.wait(timeout=30)
        finished.append("there")
        raise RuntimeError("there failed too")

    def here() -> None:
        release.set()
        raise ValueError("here failed")

    with pytest.raises(ValueError, match="here failed"):
        beside(there, here)
    assert finished == ["there"]


def test_an_error_there_is_raised_after_here_finishes() -> None:
    def there() -> None:
        raise KeyError("there")

    done: list[str] = []
    with pytest.raises(KeyError):
        beside(there, lambda: done.append("here"))
    assert done == ["here"]
