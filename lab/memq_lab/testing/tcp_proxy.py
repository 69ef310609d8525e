"""A loopback TCP proxy that can be pointed at another backend while clients stay on its
address: what a service address in front of Redis or PostgreSQL does when the server comes
back on another host or port (a failover, a rescheduled container), and what a slow or
broken network between them does. Used by the soak and the broker restart and network
timeout tests.

It runs in a process of its own (so the proxied traffic never competes with the caller's
GIL) and is steered through a pipe:

- ``retarget(target)`` closes every proxied connection and sends new ones to ``target``, a
  loopback port or the path of a Unix socket (PostgreSQL's embedded server listens on one);
- ``pause()`` refuses nothing but connects nowhere until the next ``retarget`` (a backend
  that is down);
- ``delay(seconds)`` delivers every byte that long after it was read, in both directions
  (a round trip takes twice as long more); ``delay(0)`` ends it;
- ``blackhole()`` forwards nothing any more, in either direction, and connects new clients
  nowhere, while every connection stays open: no reset, no close, what a path that drops
  packets does to a half-open connection; ``heal()`` forwards again what was held, as TCP's
  retransmissions would, and connects the clients that waited.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import socket
import time
from dataclasses import dataclass, field

Target = int | str | None  # a loopback port, a Unix socket's path, or nowhere (paused)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class _Path:
    """What the network between clients and backend does now (shared by every connection)."""

    target: Target
    delay: float = 0.0
    open: asyncio.Event = field(default_factory=asyncio.Event)  # cleared: a blackhole

    def __post_init__(self) -> None:
        self.open.set()


async def _connect(target: Target) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    if isinstance(target, str):
        return await asyncio.open_unix_connection(target)
    if target is None:
        raise OSError("paused")
    return await asyncio.open_connection("127.0.0.1", target)


async def _pipe(path: _Path, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Forward one direction: each chunk is due ``path.delay`` after it was read (a delay
    line: chunks in flight overlap), and held while the path is a blackhole."""
    line: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        try:
            while data := (item := await line.get())[1]:
                if (wait := item[0] - time.monotonic()) > 0:
                    await asyncio.sleep(wait)
                await path.open.wait()
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):  # the other side went: so does this connection
            writer.transport.abort()

    delivery = asyncio.ensure_future(deliver())
    try:
        while True:
            await path.open.wait()  # a blackhole reads nothing: the sender's buffers fill
            data = await reader.read(65536)
            line.put_nowait((time.monotonic() + path.delay, data))
            if not data:
                break
        await delivery
    except (ConnectionError, OSError):
        pass
    finally:
        delivery.cancel()
        writer.close()


async def _serve(listen_port: int, target: Target, control) -> None:
    path = _Path(target)
    open_writers: set[asyncio.StreamWriter] = set()

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        mine = {client_writer}
        open_writers.update(mine)
        try:
            await path.open.wait()  # accepted, and connected nowhere until the path heals
            try:
                backend_reader, backend_writer = await _connect(path.target)
            except OSError:
                client_writer.close()
                return
            mine.add(backend_writer)
            open_writers.add(backend_writer)
            await asyncio.gather(_pipe(path, client_reader, backend_writer), _pipe(path, backend_reader, client_writer))
        except asyncio.CancelledError:  # the proxy is stopping
            for writer in mine:
                writer.transport.abort()
        finally:
            open_writers.difference_update(mine)

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port, reuse_address=True)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def abort_all() -> None:
        for writer in list(open_writers):
            writer.transport.abort()
        open_writers.clear()

    def on_command() -> None:
        command, value = control.recv()
        if command == "stop":
            done.set()
        elif command == "delay":
            path.delay = float(value)
        elif command == "blackhole":
            path.open.clear()
        elif command == "heal":
            path.open.set()
        else:  # retarget / pause: existing connections go, as they do when a backend goes
            path.target = value
            abort_all()
        control.send("ok")

    loop.add_reader(control.fileno(), on_command)
    control.send("ready")
    async with server:
        await done.wait()
        abort_all()


def _main(listen_port: int, target: Target, control) -> None:
    asyncio.run(_serve(listen_port, target, control))


@dataclass
class TcpProxy:
    target_port: Target  # a loopback port, or the path of a Unix socket
    listen_port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._control, child = multiprocessing.get_context("spawn").Pipe()
        self._process = multiprocessing.get_context("spawn").Process(
            target=_main, args=(self.listen_port, self.target_port, child), daemon=True, name="memq-tcp-proxy"
        )

    @property
    def url(self) -> str:
        """A Redis URL of the proxy's address (database 0)."""
        return f"redis://127.0.0.1:{self.listen_port}/0"

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>``, for URLs of other services."""
        return f"127.0.0.1:{self.listen_port}"

    def start(self) -> TcpProxy:
        self._process.start()
        if not self._control.poll(30) or self._control.recv() != "ready":
            raise RuntimeError("the TCP proxy did not start")
        return self

    def _ask(self, command: str, value: Target | float = None) -> None:
        self._control.send((command, value))
        if not self._control.poll(10):
            raise RuntimeError(f"the TCP proxy did not answer {command!r}")
        self._control.recv()

    def retarget(self, target: int | str) -> None:
        """Close every connection; new ones go to ``target`` (a port or a Unix socket's path)."""
        self.target_port = target
        self._ask("retarget", target)

    def pause(self) -> None:
        self._ask("pause", None)

    def delay(self, seconds: float) -> None:
        """Deliver every byte ``seconds`` late, each way (0: no added latency)."""
        self._ask("delay", seconds)

    def blackhole(self) -> None:
        """Forward nothing and connect nobody, keeping every connection open, until ``heal``."""
        self._ask("blackhole")

    def heal(self) -> None:
        """End a blackhole: what was held is forwarded, waiting clients are connected."""
        self._ask("heal")

    def stop(self) -> None:
        if self._process.is_alive():
            with contextlib.suppress(RuntimeError, OSError):
                self._ask("stop")
            self._process.join(5)
            if self._process.is_alive():
                self._process.kill()
