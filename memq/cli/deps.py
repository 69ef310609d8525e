"""``memq check-deps``: known vulnerabilities in the installed packages.

Uses PyPI's JSON API, whose ``vulnerabilities`` field is the advisory data pip-audit's
default service reads. This machine's package mirror answers the per-package document
(``/pypi/<name>/json``, which describes the newest release) but not the per-version
one pip-audit asks for, so pip-audit itself reports every package "not found". Here:
the per-version document when the index has it, else the per-package one when the
installed version is the newest; anything else is listed as not checked, never as safe.
"""

from __future__ import annotations

import concurrent.futures
import importlib.metadata
import json
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import click

INDEX = "https://pypi.org/pypi"


@dataclass
class Checked:
    name: str
    version: str
    status: str  # "ok" | "vulnerable" | "unchecked"
    detail: str = ""
    advisories: list[str] = field(default_factory=list)


def _get(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=20) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def check(name: str, version: str) -> Checked:
    try:
        doc = _get(f"{INDEX}/{name}/{version}/json")
        if doc is None:
            latest = _get(f"{INDEX}/{name}/json")
            if latest is None:
                return Checked(name, version, "unchecked", "not on PyPI")
            if latest["info"]["version"] != version:
                return Checked(
                    name,
                    version,
                    "unchecked",
                    f"the index describes only the newest release ({latest['info']['version']})",
                )
            doc = latest
    except (OSError, ValueError) as exc:
        return Checked(name, version, "unchecked", f"index unreachable: {exc}")
    found = [v.get("id", "?") for v in doc.get("vulnerabilities") or [] if not v.get("withdrawn")]
    return Checked(name, version, "vulnerable" if found else "ok", advisories=found)


@click.command("check-deps")
@click.option("--strict", is_flag=True, help="Also fail when some package could not be checked.")
def check_deps_cmd(strict: bool) -> None:
    """Check every installed package against PyPI's vulnerability advisories."""
    dists = {
        d.metadata["Name"].lower(): d.version
        for d in importlib.metadata.distributions()
        if d.metadata["Name"] and d.metadata["Name"].lower() != "memq"  # ourselves
    }
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = sorted(pool.map(lambda item: check(*item), dists.items()), key=lambda c: c.name)
    vulnerable = [c for c in results if c.status == "vulnerable"]
    unchecked = [c for c in results if c.status == "unchecked"]
    for c in vulnerable:
        click.secho(f"VULNERABLE {c.name} {c.version}: {', '.join(c.advisories)}", fg="red")
    for c in unchecked:
        click.echo(f"not checked {c.name} {c.version}: {c.detail}")
    ok = len(results) - len(vulnerable) - len(unchecked)
    click.echo(
        f"{len(results)} packages: {ok} without known vulnerabilities, {len(vulnerable)} vulnerable, "
        f"{len(unchecked)} not checked"
    )
    if vulnerable or (strict and unchecked):
        sys.exit(1)
