"""A command whose Redis or PostgreSQL does not answer says which, and what to do, instead
of a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import redis

from memq.cli import service_down
from memq_lab.testing.tcp_proxy import free_port

MEMQ = str(Path(sys.executable).with_name("memq"))


def test_the_errors_of_unreachable_services_are_recognised():
    with pytest.raises(redis.ConnectionError) as r:
        redis.Redis(port=free_port(), socket_connect_timeout=2).ping()
    assert "Redis does not answer" in (service_down(r.value) or "") and "REDIS_URL" in (service_down(r.value) or "")
    with pytest.raises(psycopg.OperationalError) as p:
        psycopg.connect(f"postgresql://memq@127.0.0.1:{free_port()}/memq", connect_timeout=2)
    assert "PostgreSQL does not answer" in (service_down(p.value) or "")
    assert service_down(ValueError("something else")) is None


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["retrieve", "conv-1", "which seat?", "--no-record"], "PostgreSQL does not answer"),
        (["status"], "Redis does not answer"),
    ],
)
def test_a_command_says_which_service_is_down(args, says):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMQ_MAILBOX_REDIS")}
    env["REDIS_URL"] = f"redis://127.0.0.1:{free_port()}/0"  # nobody listens on either
    env["DATABASE_URL"] = f"postgresql://memq@127.0.0.1:{free_port()}/memq"
    out = subprocess.run([MEMQ, *args], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 1, out.stderr
    assert says in out.stderr and "memq services up" in out.stderr and "Traceback" not in out.stderr
