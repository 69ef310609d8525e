"""Embedded services refuse clearly when they cannot run."""

import socket

import pytest

from shared.embedded.redis_server import EmbeddedRedis
from shared.embedded.services import resolve_urls
from shared.errors import ServiceError
from shared.settings import Settings


def test_a_port_held_by_another_program_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ServiceError, match=f"port {port} .* in use by another program.*MEMQ_EMBEDDED_REDIS_PORT"):
            EmbeddedRedis(tmp_path, port).start()


def test_services_not_running_say_how_to_start_them(tmp_path, monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    with pytest.raises(ServiceError, match="memq services up"):
        resolve_urls(Settings(data_dir=tmp_path, redis_url=None, database_url=None))
    with pytest.raises(ServiceError, match="DATABASE_URL is not set"):
        resolve_urls(Settings(data_dir=tmp_path, redis_url="redis://127.0.0.1:1/0", database_url=None))
