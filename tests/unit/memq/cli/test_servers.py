"""``memq api`` checks its port before anything slow."""

from __future__ import annotations

import socket

from click.testing import CliRunner

from memq.cli import main
from memq.cli.servers import port_free


def test_a_busy_port_stops_memq_api_at_once_with_what_to_do(monkeypatch):
    import memq.shared.embedded.services as services

    def no_services(settings):
        raise AssertionError("services were started although the port is busy")

    monkeypatch.setattr(services, "up", no_services)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert not port_free("127.0.0.1", port)
        out = CliRunner().invoke(main, ["api", "--host", "127.0.0.1", "--port", str(port)])
    assert out.exit_code == 1
    assert f"port {port} on 127.0.0.1 is in use" in out.output and "--port / MEMQ_API_PORT" in out.output
    assert port_free("127.0.0.1", port)  # free again once closed
