"""PNG charts of a run: pipeline throughput against worker processes, retrieval latency
against corpus size."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memq_lab.bench.measurement import Measurement


def write_charts(found: Sequence[Measurement], out_dir: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # charts come with the lab (matplotlib)
        return []
    written = []
    workers = sorted(
        ((m.params["workers"], m.value) for m in found if m.name in ("pipeline_1", "pipeline_2")),
    )
    if workers:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([w for w, _ in workers], [v for _, v in workers], marker="o", label="one model thread per process")
        ax.set_xlabel("worker processes")
        ax.set_ylabel("messages/s, inbox to committed episodes")
        ax.set_xticks([w for w, _ in workers])
        ax.grid(alpha=0.3)
        ax.set_title("memq pipeline throughput against workers")
        path = out_dir / "pipeline-workers.png"
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    series: dict[str, list[tuple[int, float]]] = {}
    for m in found:
        if m.unit == "ms" and "corpus_messages" in m.params and m.name.startswith("retrieval"):
            series.setdefault(m.name, []).append((int(m.params["corpus_messages"]), m.value))
    if series:
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, points in sorted(series.items()):
            points.sort()
            ax.plot([p for p, _ in points], [v for _, v in points], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_xlabel("stored messages")
        ax.set_ylabel("p50 ms")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:,.0f}"))
        ax.grid(alpha=0.3)
        ax.legend()
        ax.set_title("memq retrieval latency against corpus size")
        path = out_dir / "retrieval-latency.png"
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written
