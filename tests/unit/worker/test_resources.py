"""A worker's pool processes share the CPUs: each sizes its embedding model's threads to its
share, so two processes on two cores do not run four busy threads."""

from memq.worker.resources import threads_per_process


def test_each_pool_process_gets_its_share_of_the_cpus():
    assert [threads_per_process(2, n) for n in (1, 2, 3)] == [2, 1, 1]
    assert [threads_per_process(8, n) for n in (1, 2, 3, 4, 16)] == [8, 4, 2, 2, 1]
    assert threads_per_process(4, 0) == 4  # unknown pool size: the whole machine
