"""The embedded Redis started with SIGXFSZ ignored (``ignore_file_size_signal``, what the
soak's full disk relies on) meets a file-size limit as it meets a full disk: it refuses
writes (MISCONF) while its append-only file cannot grow, and accepts them again by itself
once it can, instead of being killed by the signal."""

from __future__ import annotations

import os

import pytest
import redis
from waiting import wait_until

from memq.shared.embedded.redis_server import EmbeddedRedis
from memq_lab.soak.resource_levers import FileSizeLimit
from memq_lab.testing.tcp_proxy import free_port

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMQ_TEST_REDIS_CLUSTER") == "1", reason="runs its own Redis; once is enough"
)


def test_a_full_disk_makes_it_refuse_writes_and_room_makes_it_accept_them(tmp_path):
    server = EmbeddedRedis(tmp_path, free_port(), ignore_file_size_signal=True)
    server.start()
    client = redis.Redis.from_url(server.url)
    try:
        client.set("before", "x" * 100)
        aof = server.folder / "appendonly.aof"
        wait_until(lambda: aof.stat().st_size > 0, 10, 0.05, "the AOF written")
        pid = server.pid()
        assert pid is not None
        limit = FileSizeLimit(aof.stat().st_size)
        limit.apply([pid])
        try:
            client.set("accepted-then-not-written", "y" * 100)  # its AOF write is the one that fails

            def refused() -> bool:
                try:
                    client.set("probe", "z")
                except redis.ResponseError as exc:
                    return str(exc).startswith("MISCONF")
                return False

            wait_until(refused, 10, 0.05, "writes refused")
            assert server.pid() is not None  # alive: SIGXFSZ ignored
        finally:
            limit.lift()
        wait_until(lambda: client.info("persistence")["aof_last_write_status"] == "ok", 10, 0.1, "the AOF written")
        assert client.set("after", "1")
        assert client.get("accepted-then-not-written") == b"y" * 100
    finally:
        client.shutdown(nosave=True)
