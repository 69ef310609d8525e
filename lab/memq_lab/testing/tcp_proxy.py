"""A loopback TCP proxy that can be pointed at another backend while clients stay on its
address: what a service address in front of Redis does when Redis comes back on another
host or port (a failover, a rescheduled container). Used by the soak and the broker
restart tests.

It runs in a process of its own (so the proxied traffic never competes with the caller's
GIL) and is steered through a pipe: ``retarget(port)`` closes every proxied connection
and sends new ones to the new port; ``pause()`` refuses nothing but connects nowhere
until the next ``retarget`` (a backend that is down).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import socket
from dataclasses import dataclass, field


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _serve(listen_port: int, target_port: int, control) -> None:
    state = {"target": target_port}
    open_writers: set[asyncio.StreamWriter] = set()

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        target = state["target"]
        if target is None:
            client_writer.close()
            return
        try:
            backend_reader, backend_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_writer.close()
            return
        pair = {client_writer, backend_writer}
        open_writers.update(pair)
        try:
            await asyncio.gather(_pipe(client_reader, backend_writer), _pipe(backend_reader, client_writer))
        except asyncio.CancelledError:  # the proxy is stopping
            for writer in pair:
                writer.transport.abort()
        finally:
            open_writers.difference_update(pair)

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port, reuse_address=True)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def on_command() -> None:
        command, value = control.recv()
        if command == "stop":
            done.set()
        else:  # retarget / pause: existing connections go, as they do when a backend goes
            state["target"] = value
            for writer in list(open_writers):
                writer.transport.abort()
        control.send("ok")

    loop.add_reader(control.fileno(), on_command)
    control.send("ready")
    async with server:
        await done.wait()
        for writer in list(open_writers):
            writer.transport.abort()


def _main(listen_port: int, target_port: int, control) -> None:
    asyncio.run(_serve(listen_port, target_port, control))


@dataclass
class TcpProxy:
    target_port: int
    listen_port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._control, child = multiprocessing.get_context("spawn").Pipe()
        self._process = multiprocessing.get_context("spawn").Process(
            target=_main, args=(self.listen_port, self.target_port, child), daemon=True, name="memq-tcp-proxy"
        )

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.listen_port}/0"

    def start(self) -> TcpProxy:
        self._process.start()
        if not self._control.poll(30) or self._control.recv() != "ready":
            raise RuntimeError("the TCP proxy did not start")
        return self

    def _ask(self, command: str, value: int | None = None) -> None:
        self._control.send((command, value))
        if not self._control.poll(10):
            raise RuntimeError(f"the TCP proxy did not answer {command!r}")
        self._control.recv()

    def retarget(self, port: int) -> None:
        self.target_port = port
        self._ask("retarget", port)

    def pause(self) -> None:
        self._ask("pause", None)

    def stop(self) -> None:
        if self._process.is_alive():
            with contextlib.suppress(RuntimeError, OSError):
                self._ask("stop")
            self._process.join(5)
            if self._process.is_alive():
                self._process.kill()
