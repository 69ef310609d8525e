"""The lab's TCP proxy makes the slow and the broken networks of the soak and of the
network timeout tests: it must delay what it forwards, and in a blackhole forward nothing
and reset nothing, then deliver what it held once healed."""

from __future__ import annotations

import select
import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from memq_lab.testing.tcp_proxy import TcpProxy


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = TcpProxy(server.server_address[1]).start()
    yield proxy
    proxy.stop()
    server.shutdown()
    server.server_close()


def _connect(proxy: TcpProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.listen_port), timeout=10)


def _round_trip(sock: socket.socket, data: bytes) -> float:
    started = time.monotonic()
    sock.sendall(data)
    assert sock.recv(4096) == data
    return time.monotonic() - started


def test_a_delay_slows_every_round_trip_both_ways(proxy):
    with _connect(proxy) as sock:
        proxy.delay(0.15)
        assert _round_trip(sock, b"slow") >= 0.3  # 0.15 s each way
        proxy.delay(0)
        assert _round_trip(sock, b"fast") >= 0  # still the same connection, forwarding


def test_a_blackhole_holds_everything_without_a_reset_and_heals(proxy):
    with _connect(proxy) as open_before:
        assert _round_trip(open_before, b"before") >= 0
        proxy.blackhole()
        open_before.sendall(b"held")
        opened_during = _connect(proxy)  # accepted: the path drops packets, it refuses nothing
        opened_during.sendall(b"waiting")
        readable, _, broken = select.select([open_before, opened_during], [], [open_before, opened_during], 0.5)
        assert readable == [] and broken == []  # no byte forwarded, no reset, no close
        proxy.heal()
        assert open_before.recv(4096) == b"held"  # what the path held is delivered, as TCP would retransmit it
        assert opened_during.recv(4096) == b"waiting"
        opened_during.close()
