"""The embedded PostgreSQL's own settings (``memq.conf``): memory sized to the machine."""

from pathlib import Path

import pytest

from memq.shared.embedded.postgres_server import (
    CONFIG_FILE,
    MIB,
    EmbeddedPostgres,
    config_text,
    server_settings,
    shared_buffers_mb,
)
from memq.shared.settings import Settings

GIB = 1024 * MIB


@pytest.mark.parametrize(
    ("memory", "expected"),
    [
        (0, 128),  # the platform does not say: PostgreSQL's own default
        (256 * MIB, 128),  # never below the default
        (2 * GIB, 512),  # a quarter
        (8 * GIB, 2048),
        (24 * GIB, 4096),  # at most 4 GiB on a developer's machine
        (512 * GIB, 4096),
    ],
)
def test_shared_buffers_are_a_quarter_of_memory_between_the_default_and_4_gib(memory, expected):
    assert shared_buffers_mb(memory) == expected


def test_a_configured_size_wins():
    assert shared_buffers_mb(24 * GIB, 300) == 300
    assert EmbeddedPostgres(Path("unused"), "memq", shared_buffers_mb=300).buffers_mb == 300
    assert server_settings(300) == {"shared_buffers": "300MB"}


def test_the_setting_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("MEMQ_EMBEDDED_POSTGRES_SHARED_BUFFERS_MB", "640")
    assert Settings().embedded_postgres_shared_buffers_mb == 640
    monkeypatch.setenv("MEMQ_EMBEDDED_POSTGRES_SHARED_BUFFERS_MB", "8")
    with pytest.raises(ValueError, match="greater than or equal to 16"):
        Settings()


def test_the_config_is_written_and_included_once(tmp_path):
    folder = tmp_path / "postgres"
    folder.mkdir()
    (folder / "postgresql.conf").write_text("max_connections = 100\n")
    server = EmbeddedPostgres(tmp_path, "memq", shared_buffers_mb=300)
    server.write_config()
    server.write_config()
    main = (folder / "postgresql.conf").read_text()
    assert main.startswith("max_connections = 100\n")
    assert main.count(f"include_if_exists = '{CONFIG_FILE}'") == 1
    written = (folder / CONFIG_FILE).read_text()
    assert written == config_text({"shared_buffers": "300MB"})
    assert "shared_buffers = '300MB'" in written.splitlines()

    EmbeddedPostgres(tmp_path, "memq", shared_buffers_mb=500).write_config()
    assert "shared_buffers = '500MB'" in (folder / CONFIG_FILE).read_text().splitlines()
