"""Embedded services refuse clearly when they cannot run."""

import socket

import pytest
from pydantic import ValidationError as PydanticValidationError

from memq.shared.embedded.redis_server import EmbeddedRedis
from memq.shared.embedded.services import database_url, redis_url, resolve_urls, up
from memq.shared.errors import ServiceError
from memq.shared.settings import Settings


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


def test_a_producer_needs_only_redis(tmp_path):
    """A backend that enqueues sets REDIS_URL only: resolving Redis never asks for PostgreSQL."""
    settings = Settings(data_dir=tmp_path, redis_url="redis://redis.internal:6379/0", database_url=None)
    assert redis_url(settings) == "redis://redis.internal:6379/0"
    with pytest.raises(ServiceError, match="DATABASE_URL is not set"):
        database_url(settings)


@pytest.mark.parametrize(("unset", "setting"), [("redis_url", "REDIS_URL"), ("database_url", "DATABASE_URL")])
def test_production_never_starts_or_uses_an_embedded_server(tmp_path, unset, setting):
    urls = {"redis_url": "redis://redis.internal:6379/0", "database_url": "postgresql://memq@db.internal/memq"}
    settings = Settings(data_dir=tmp_path, env="production").model_copy(update={**urls, unset: None})
    with pytest.raises(ServiceError, match=f"{setting} is not set and MEMQ_ENV=production.*Set {setting}"):
        up(settings)
    with pytest.raises(ServiceError, match=f"{setting} is not set and MEMQ_ENV=production"):
        resolve_urls(settings)
    assert not (tmp_path / "redis").exists() and not (tmp_path / "postgres").exists(), "nothing was started"


def test_production_with_both_urls_resolves_them(tmp_path):
    urls = {"redis_url": "redis://redis.internal:6379/0", "database_url": "postgresql://memq@db.internal/memq"}
    resolved = resolve_urls(Settings(data_dir=tmp_path, env="production").model_copy(update=urls))
    assert (resolved.redis_url, resolved.database_url) == (urls["redis_url"], urls["database_url"])
    assert not resolved.redis_embedded and not resolved.database_embedded


def test_env_is_validated(monkeypatch):
    monkeypatch.setenv("MEMQ_ENV", "prod")
    with pytest.raises(PydanticValidationError, match=r"development.*production"):
        Settings()


def test_stop_never_shuts_down_another_server_on_its_port(tmp_path):
    """The folder's server started on one port; the settings now name another, where another
    server runs: stopping stops ours (by its pid) and leaves the other one alone."""
    from memq_lab.testing.tcp_proxy import free_port

    ours = EmbeddedRedis(tmp_path / "ours", free_port())
    other = EmbeddedRedis(tmp_path / "other", free_port())
    ours.start()
    other.start()
    try:
        assert EmbeddedRedis(tmp_path / "ours", other.port).stop()
        assert ours.pid() is None
        assert other.ping()
    finally:
        ours.stop()
        other.stop()


def test_a_folder_whose_server_runs_on_another_port_is_not_given_a_second_server(tmp_path):
    """Two servers in one folder would write one append-only file, each over the other's."""
    from memq_lab.testing.tcp_proxy import free_port

    first = EmbeddedRedis(tmp_path, free_port())
    first.start()
    try:
        with pytest.raises(ServiceError, match=r"does not answer on port .*started on another port.*MEMQ_DATA_DIR"):
            EmbeddedRedis(tmp_path, free_port()).start()
        assert first.ping() and first.start() == first.url  # the running one is still reused
    finally:
        first.stop()


def test_each_port_but_the_default_has_a_folder_of_its_own(tmp_path, monkeypatch):
    from memq.shared.embedded.services import embedded_redis

    monkeypatch.delenv("MEMQ_EMBEDDED_REDIS_PORT", raising=False)  # the default, whatever the shell set
    default = embedded_redis(Settings(data_dir=tmp_path))
    other = embedded_redis(Settings(data_dir=tmp_path, embedded_redis_port=6411))
    assert default.folder == tmp_path / "redis" and other.folder == tmp_path / "redis-6411"
