"""Layers run one way: memq.shared <- memq.producer, memq.worker <- the application (the rest
of ``memq``: CLI, API, MCP) <- the lab (``memq_lab`` in lab/: benchmarks, evaluation, soak,
test helpers; a distribution of its own, never in memq's wheel).

Checked on the source (every import statement, including those inside functions), so a
lazy import cannot hide a dependency that points the wrong way.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("shared", "producer", "worker")  # top-level folders, installed as memq.<folder>
LAB = "memq_lab"  # lab/memq_lab: it may import memq; memq never imports it...
LAB_REGISTRATION = ROOT / "memq" / "cli" / "__init__.py"  # ... but names its commands here, loaded lazily

FORBIDDEN = {
    "shared": {"producer", "worker", "app"},
    "producer": {"worker", "app"},
    "worker": {"producer", "app"},
}


def _layer(module: str) -> str | None:
    """The layer a module name belongs to (None: not memq's)."""
    parts = module.split(".")
    if parts[0] != "memq":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "app"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _lab_names(path: Path) -> set[str]:
    """The lab's modules ``path`` imports, or names in a string (what importlib would load)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    modules = {s for s in strings if all(part.isidentifier() for part in s.split("."))}
    return {name for name in _imports(path) | modules if name == LAB or name.startswith(LAB + ".")}


def _runtime_sources() -> list[Path]:
    """Every Python file of the runtime package: memq/ (the layers through their real
    folders) and the migrations."""
    return [p for p in _sources() if p.relative_to(ROOT).parts[0] in ("memq", *LAYERS, "migrations")]


def _sources() -> list[Path]:
    """Every Python file of the project (the layers through their real folders, not the
    memq/<layer> links that install them under the namespace)."""
    found = [*ROOT.glob("*.py")]
    for top in ("memq", *LAYERS, "migrations", "tests", "lab"):
        found += [
            p for p in (ROOT / top).rglob("*.py") if not (top == "memq" and p.parts[len(ROOT.parts) + 1] in LAYERS)
        ]
    return sorted(set(found))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_the_layers_above_it(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = {module for module in _imports(path) if _layer(module) in FORBIDDEN[package]}
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {', '.join(sorted(bad))}")
    assert not offenders, "\n".join(offenders)


def test_nothing_imports_the_layers_by_their_folder_names():
    """``shared``, ``producer`` and ``worker`` are importable by those names only from a source
    checkout; installed, they exist only as ``memq.shared`` ... (nothing generic lands at the
    top of site-packages). An import by the folder name would work here and break on install."""
    offenders = []
    for path in _sources():
        bad = {module for module in _imports(path) if module.split(".")[0] in LAYERS}
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {', '.join(sorted(bad))}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("layer", LAYERS)
def test_the_namespace_links_point_at_the_top_level_folders(layer):
    link = ROOT / "memq" / layer
    assert link.is_symlink(), f"memq/{layer} should link to ../{layer}"
    assert link.resolve() == (ROOT / layer).resolve()


def test_the_runtime_package_never_imports_the_lab():
    """memq's wheel holds no lab: a runtime module importing memq_lab would fail on install.
    Only the CLI's registration names it (by string, imported when a lab command is used)."""
    offenders = []
    for path in _runtime_sources():
        bad = _lab_names(path)
        if bad and path != LAB_REGISTRATION:
            offenders.append(f"{path.relative_to(ROOT)} names {', '.join(sorted(bad))}")
    assert not offenders, "\n".join(offenders)


def test_the_cli_loads_the_lab_lazily():
    """The registration names the lab's command modules, and imports none of them itself."""
    assert {m for m in _imports(LAB_REGISTRATION) if m == LAB or m.startswith(LAB + ".")} == set()
    assert {"memq_lab.cli.bench", "memq_lab.cli.soak", "memq_lab.cli.evaluate"} <= _lab_names(LAB_REGISTRATION)


def test_the_lab_is_a_package_of_its_own_beside_memq():
    lab = ROOT / "lab" / LAB
    assert (lab / "__init__.py").is_file() and (ROOT / "lab" / "pyproject.toml").is_file()
    for gone in ("bench", "evaluation", "soak", "testing"):
        assert not (ROOT / "memq" / gone).exists(), f"memq/{gone} is the lab's: lab/memq_lab/{gone}"
        assert (lab / gone / "__init__.py").is_file()
