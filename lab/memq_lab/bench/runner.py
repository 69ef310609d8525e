"""Run the chosen benchmark families, print one table, write JSON and charts."""

from __future__ import annotations

import importlib
import json
import platform
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from memq_lab.bench.context import BenchContext
from memq_lab.bench.measurement import Measurement

# family -> (module, the measurement names it produces at least), in the order they run
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ingest": ("memq_lab.bench.ingest", ("ingest_library", "ingest_http")),
    "pipeline": (
        "memq_lab.bench.pipeline",
        (
            "pipeline",
            "pipeline_1",
            "pipeline_2",
            "scale_out_2",
            "pipeline_live_cpu",
            "redis_commands_per_message",
            "redis_input_bytes_per_message",
            "pg_wal_bytes_per_message",
        ),
    ),
    "retrieval": ("memq_lab.bench.retrieval", ("retrieval_conversation", "retrieval_tenant", "ann_recall")),
    "read_path": ("memq_lab.bench.read_path", ("read_path_library", "read_path_http")),
    "fair_share": ("memq_lab.bench.fair_share", ("fair_share_p99",)),
    "resources": (
        "memq_lab.bench.resources",
        (
            "rss_worker_idle",
            "rss_worker_busy",
            "rss_worker_main",
            "rss_api",
            "pg_bytes_per_message",
            "pg_bytes_per_episode",
            "redis_bytes_per_buffered_message",
            "redis_bytes_idle_conversation",
            "redis_bytes_idle_state",
            "redis_keys_without_ttl",
        ),
    ),
}


def families_for(only: Sequence[str]) -> list[str]:
    """The families to run for ``--only`` values (family or measurement names; none: all)."""
    if not only:
        return list(FAMILIES)
    chosen = []
    for name in only:
        family = name if name in FAMILIES else next((f for f, (_, names) in FAMILIES.items() if name in names), None)
        if family is None:
            known = sorted([*FAMILIES, *(n for _, names in FAMILIES.values() for n in names)])
            raise ValueError(f"--only {name!r}: not a benchmark; choose from {', '.join(known)}")
        chosen.append(family)
    return [f for f in FAMILIES if f in chosen]


def run(ctx: BenchContext, families: Sequence[str]) -> list[Measurement]:
    found: list[Measurement] = []
    for family in families:
        module, _ = FAMILIES[family]
        runner: Callable[[BenchContext], list[Measurement]] = importlib.import_module(module).run
        started = time.monotonic()
        ctx.console.print(f"[bold]{family}[/] ...")
        found += runner(ctx)
        ctx.console.print(f"[bold]{family}[/] done in {time.monotonic() - started:.0f} s")
    return found


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def table(found: Sequence[Measurement], scale: str) -> Table:
    out = Table(title=f"memq bench ({scale}): every figure next to its floor, measured in this run")
    out.add_column("measurement")
    out.add_column("value", justify="right")
    out.add_column("unit")
    out.add_column("floor", justify="right")
    out.add_column("ratio", justify="right")
    out.add_column("target", justify="right")
    out.add_column("params")
    for m in found:
        target = "" if m.target is None else ("≥ " if m.higher_is_better else "≤ ") + _number(m.target)
        met = {True: " [green]met[/]", False: " [red]NOT met[/]", None: ""}[m.met]
        params = ", ".join(f"{k}={v}" for k, v in m.params.items() if not isinstance(v, (list, dict)))
        out.add_row(m.name, _number(m.value), m.unit, _number(m.floor), _number(m.ratio), target + met, params)
    return out


def write(found: Sequence[Measurement], ctx: BenchContext) -> Path:
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    document: dict[str, Any] = {
        "scale": ctx.scale.name,
        "at": stamp,
        "machine": {"cpus": _cpus(), "python": platform.python_version(), "platform": platform.platform()},
        "measurements": [m.to_json() for m in found],
    }
    path = ctx.out_dir / f"bench-{ctx.scale.name}-{stamp}.json"
    text = json.dumps(document, indent=2)
    path.write_text(text)
    (ctx.out_dir / "latest.json").write_text(text)
    return path


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
