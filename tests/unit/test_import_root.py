"""One import root: ``shared/``, ``worker/`` and ``producer/`` are imported as ``memq.shared``,
``memq.worker`` and ``memq.producer`` only, and each module has one path, its real file
(what tracebacks, coverage and the debugger name is the file people edit)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("layer", ["shared", "worker", "producer"])
def test_every_module_of_a_layer_loads_from_its_real_folder(layer):
    package = importlib.import_module(f"memq.{layer}")
    assert package.__path__ == [str(ROOT / layer)]
    # every submodule, imported or not yet (found by the loader, not imported: some need the worker's extras)
    for info in pkgutil.walk_packages(package.__path__, prefix=f"memq.{layer}."):
        spec = importlib.util.find_spec(info.name)
        assert spec is not None and spec.origin is not None
        origin = Path(spec.origin)
        assert origin.is_relative_to(ROOT / layer), f"{info.name} loads from {origin}"
        assert not origin.is_relative_to(ROOT / "memq" / layer), f"{info.name} loads through the link: {origin}"


@pytest.mark.parametrize("name", ["shared", "worker.app", "producer"])
def test_the_folder_names_are_not_a_second_root(name):
    with pytest.raises(ImportError, match="one import root"):
        importlib.import_module(name)


def test_the_migrations_are_found_where_the_package_installs_them():
    from memq.shared.db.migrate import MIGRATIONS

    assert MIGRATIONS == ROOT / "migrations"
    assert (ROOT / "memq" / "migrations").resolve() == MIGRATIONS  # the link the wheel is built through
    assert (MIGRATIONS / "alembic.ini").is_file() and any((MIGRATIONS / "versions").glob("0001_*.py"))
