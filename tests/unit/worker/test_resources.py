"""A worker's pool processes share the CPUs: each sizes its embedding model's threads to its
share, so two processes on two cores do not run four busy threads."""

from memq.worker.resources import threads_per_process


def test_each_pool_process_gets_its_share_of_the_cpus():
    assert [threads_per_process(2, n) for n in (1, 2, 3)] == [2, 1, 1]
    assert [threads_per_process(8, n) for n in (1, 2, 3, 4, 16)] == [8, 4, 2, 2, 1]
    assert threads_per_process(4, 0) == 4  # unknown pool size: the whole machine


def test_the_server_ends_a_statement_or_lock_wait_before_the_soft_limit():
    from memq.shared.celery_config import soft_time_limit
    from memq.shared.settings import Settings
    from memq.worker.resources import database_timeouts

    for hard in (10, 60, 300):
        s = Settings(
            task_time_limit_seconds=hard, visibility_timeout_seconds=max(3600, 2 * hard), drain_max_seconds=hard // 2
        )
        limits = database_timeouts(s)
        assert limits["statement_timeout"] < soft_time_limit(s) * 1000
        assert limits["lock_timeout"] < soft_time_limit(s) * 1000
        assert limits["idle_in_transaction_session_timeout"] == hard * 1000
