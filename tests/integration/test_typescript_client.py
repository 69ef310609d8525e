"""The TypeScript client (clients/typescript) against a live API: the app served by uvicorn on
a loopback port with a real worker, on the suite's Redis and PostgreSQL, and a key of a
tenant of the test's own. The package is built (npm ci when its node_modules is missing or
older than its lockfile, npm run build), its tests type-checked, its generated types checked
against its OpenAPI snapshot, and Node's test runner run over test/ with MEMQ_URL and
MEMQ_KEY set. The snapshot itself is held against the app's document here.

Skipped when node or npm is not installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from live_api import key_of, served

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "typescript"
SNAPSHOT = PACKAGE / "openapi.json"
REGENERATE = "cd clients/typescript && npm run regenerate"
OPENAPI = (
    "import json; from memq.api.app import create_app; from memq.shared.settings import Settings; "
    "print(json.dumps(create_app(Settings(_env_file=None)).openapi(), indent=2, sort_keys=True))"
)

needs_node = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="node and npm are needed to build and test the TypeScript client (clients/typescript)",
)


def test_openapi_snapshot_is_current() -> None:
    """clients/typescript/openapi.json, which the client's types are generated from, is the
    document the app serves."""
    out = subprocess.run(
        [sys.executable, "-c", OPENAPI],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MEMQ_LOG_LEVEL": "ERROR"},
    )
    assert out.returncode == 0, out.stderr
    current: dict[str, Any] = json.loads(out.stdout)
    snapshot: dict[str, Any] = json.loads(SNAPSHOT.read_text())
    assert current == snapshot, (
        f"{SNAPSHOT.relative_to(ROOT)} is not the app's OpenAPI document; regenerate it and the types "
        f"(`{REGENERATE}`), then check the client against what changed"
    )


@pytest.fixture(scope="module")
def api_url(service_env, settings, worker):
    """The base URL of the app served by uvicorn on a free loopback port, a worker running."""
    from memq.api.app import create_app
    from memq.api.services import Services

    services = Services.start(settings)
    with served(create_app(settings, services=services)) as url:
        yield url
    services.close()


def _npm(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> None:
    _run(["npm", *args], env=env, timeout=timeout)


def _run(command: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> str:
    out = subprocess.run(
        command,
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    output = f"{out.stdout}\n{out.stderr}"
    assert out.returncode == 0, f"`{' '.join(command)}` in clients/typescript failed ({out.returncode}):\n{output}"
    return output


def _install() -> None:
    """npm ci when node_modules is missing or older than the lockfile (CI's clean clone)."""
    installed = PACKAGE / "node_modules" / ".package-lock.json"
    lock = PACKAGE / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        _npm("ci", "--no-audit", "--no-fund")


@needs_node
def test_typescript_client(api_url, settings, tenant) -> None:
    _install()
    _npm("run", "check:generated")  # src/schema.ts is what openapi-typescript makes of openapi.json
    _npm("run", "build")
    _npm("run", "check:tests")  # the tests type-check against the built .d.ts
    output = _run(
        ["node", "--test", "test/"],
        env={"MEMQ_URL": api_url, "MEMQ_KEY": key_of(settings, tenant, "typescript-client-test")},
        timeout=600,
    )
    assert "# fail 0" in output and "# SKIP" not in output, output  # the live suite ran
