"""The embedded PostgreSQL runs with memq's settings (``memq.conf``), not PostgreSQL's defaults."""

import pytest

from memq.shared.embedded.postgres_server import machine_memory, running_shared_buffers_mb


def test_the_embedded_server_runs_with_shared_buffers_sized_to_the_machine(settings, db):
    from memq.shared.embedded.services import embedded_postgres

    server = embedded_postgres(settings)
    if not server.running() or server.folder.as_posix() not in str(settings.database_url):
        pytest.skip("the suite runs against an external PostgreSQL (DATABASE_URL)")
    wanted = server.buffers_mb
    assert running_shared_buffers_mb(db) == wanted, (
        "the embedded server was started before memq.conf existed or changed: `memq services down` and `up`"
    )
    assert wanted > 128 or machine_memory() < 1024**3, "this machine has memory enough for more than the default"
