"""``beside``: jobs shared by two workers, each taking the next when free; the pooled
worker always finished before it returns or raises."""

from __future__ import annotations

import threading

import pytest

from memq.memory.retrieval.beside import beside


def test_results_in_the_jobs_order_each_job_run_once_with_either_resource() -> None:
    ran: list[tuple[int, str]] = []
    lock = threading.Lock()

    def job(i: int):
        def run(resource: str) -> int:
            with lock:
                ran.append((i, resource))
            return i * 10

        return run

    assert beside([job(i) for i in range(7)], "here", "there") == [i * 10 for i in range(7)]
    assert sorted(i for i, _ in ran) == list(range(7))
    assert {resource for _, resource in ran} <= {"here", "there"}


def test_both_workers_run_at_once_on_their_own_resource() -> None:
    """The first two jobs each wait for the other to have started: run one after the
    other, they would never finish."""
    started = {"here": threading.Event(), "there": threading.Event()}
    threads: dict[str, int] = {}

    def meet(resource: str) -> str:
        threads[resource] = threading.get_ident()
        started[resource].set()
        other = "there" if resource == "here" else "here"
        assert started[other].wait(timeout=30), "the other never started"
        return resource

    assert sorted(beside([meet, meet], "here", "there")) == ["here", "there"]
    assert threads["here"] == threading.get_ident() != threads["there"]


def test_a_free_worker_takes_the_next_job_while_the_other_is_busy() -> None:
    """One slow job: the other worker runs every other job meanwhile."""
    release = threading.Event()
    who: dict[int, str] = {}

    def slow(resource: str) -> None:
        who[0] = resource
        assert release.wait(timeout=30)

    def quick(i: int, last: bool):
        def run(resource: str) -> None:
            who[i] = resource
            if last:
                release.set()

        return run

    beside([slow, quick(1, False), quick(2, False), quick(3, True)], "here", "there")
    assert {who[1], who[2], who[3]} == {"here", "there"} - {who[0]}


def test_an_error_here_waits_for_the_other_to_finish_and_wins() -> None:
    """What the other uses (a connection) is handed back only after it is done with it."""
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def job(resource: str) -> None:
        if resource == "there":
            started.set()
            release.wait(timeout=30)
            finished.append("there")
            raise RuntimeError("there failed too")
        assert started.wait(timeout=30)
        release.set()
        raise ValueError("here failed")

    with pytest.raises(ValueError, match="here failed"):
        beside([job, job], "here", "there")
    assert finished == ["there"]


def test_a_worker_whose_job_failed_takes_no_other() -> None:
    runs: dict[str, list[str]] = {"here": [], "there": []}

    def fail(resource: str) -> None:
        runs[resource].append("fail")
        raise KeyError("fails")

    def quick(resource: str) -> None:
        runs[resource].append("quick")

    with pytest.raises(KeyError):
        beside([fail, *[quick] * 50], "here", "there")
    failed_on = "here" if "fail" in runs["here"] else "there"
    assert runs[failed_on][-1] == "fail"


def test_an_error_there_is_raised_after_here_finishes() -> None:
    done: list[str] = []
    gate = threading.Event()

    def job(resource: str) -> None:
        if resource == "there":
            gate.set()
            raise KeyError("there")
        assert gate.wait(timeout=30)
        done.append("here")

    with pytest.raises(KeyError):
        beside([job, job], "here", "there")
    assert done == ["here"]
