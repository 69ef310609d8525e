"""memq.client is part of the thin install (``pip install memq``): importing it loads
nothing beyond the base dependencies (httpx, pydantic), in particular not the API's
FastAPI stack, whose models it shares (``memq.api.models`` imports no FastAPI)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
NOT_THIN = ("fastapi", "starlette", "uvicorn", "mcp", "psycopg", "torch", "numpy", "litellm", "celery", "redis")


def test_importing_the_client_loads_nothing_of_the_api_or_worker_stack():
    code = "import sys, memq.client, memq.client.models; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = {name.split(".")[0] for name in out.stdout.split()}
    assert not loaded & set(NOT_THIN), sorted(loaded & set(NOT_THIN))
    assert {"httpx", "pydantic"} <= loaded


def test_httpx_is_a_base_dependency_and_the_package_is_typed():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert any(d.replace(" ", "").startswith("httpx") for d in project["project"]["dependencies"])
    assert (ROOT / "memq" / "py.typed").is_file()
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["memq"]
