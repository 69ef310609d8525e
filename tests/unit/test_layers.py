"""Layers run one way: shared <- producer, worker <- memq (the application package).

Checked on the source (every import statement, including those inside functions), so a
lazy import cannot hide a dependency that points the wrong way.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FORBIDDEN = {
    "shared": {"producer", "worker", "memq"},
    "producer": {"worker", "memq"},
    "worker": {"producer", "memq"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_the_layers_above_it(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = _imports(path) & FORBIDDEN[package]
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {', '.join(sorted(bad))}")
    assert not offenders, "\n".join(offenders)
