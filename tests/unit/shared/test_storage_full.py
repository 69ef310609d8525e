"""Which errors mean a server has no room: Redis' own replies, as raised directly and from
inside a script (wrapped), and PostgreSQL's by SQLSTATE or, for a file-size limit, message."""

from __future__ import annotations

import pytest
import redis

from memq.shared.storage_full import (
    POSTGRES_DISK_FULL,
    REDIS_CANNOT_PERSIST,
    REDIS_OUT_OF_MEMORY,
    storage_full_cause,
    storage_full_text,
)


class _PgError(Exception):
    """What memq reads of a psycopg error: its message and its ``sqlstate`` (psycopg's own
    classes take it from the server's answer)."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    "exc, cause",
    [
        (redis.exceptions.OutOfMemoryError("command not allowed when used memory > 'maxmemory'."), REDIS_OUT_OF_MEMORY),
        (
            redis.ResponseError(
                "Error running script (call to f_6bcc): @user_script:99: @user_script: 99: "
                "-OOM command not allowed when used memory > 'maxmemory'."
            ),
            REDIS_OUT_OF_MEMORY,
        ),
        (redis.ResponseError("MISCONF Errors writing to the AOF file: File too large"), REDIS_CANNOT_PERSIST),
        (
            redis.ResponseError(
                "Error running script (call to f_1): @user_script:3: -MISCONF Errors writing to the AOF"
            ),
            REDIS_CANNOT_PERSIST,
        ),
        (  # a pipeline's command, as redis-py reports it
            redis.ResponseError(
                "Command # 1 (HSET memq:{s54}:t/c:vectors m-12 ...) of pipeline caused error: "
                "MISCONF Errors writing to the AOF file: File too large"
            ),
            REDIS_CANNOT_PERSIST,
        ),
        (_PgError('could not extend file "base/16384/2619": No space left on device', "53100"), POSTGRES_DISK_FULL),
        (_PgError('could not extend file "base/16384/16400": File too large', "XX000"), POSTGRES_DISK_FULL),
        (redis.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value"), None),
        (redis.ConnectionError("Connection refused"), None),
        (_PgError("duplicate key value violates unique constraint", "23505"), None),
        (ValueError("OOM in a message someone typed"), None),
    ],
)
def test_the_cause_of_a_refused_write(exc, cause):
    assert storage_full_cause(exc) == cause


def test_each_cause_is_said_in_words():
    for cause in (REDIS_OUT_OF_MEMORY, REDIS_CANNOT_PERSIST, POSTGRES_DISK_FULL):
        assert len(storage_full_text(cause)) > 30
