"""The LongMemEval run's report: memq and the baselines side by side in one table (the
field's measures, evidence recall at token budgets, latency), the same per question type,
a JSON file (one object per system) and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from memq_lab.evaluation.locomo.recall import percentile
from memq_lab.evaluation.longmemeval.measures import aggregate, budget_measure
from memq_lab.evaluation.longmemeval.runner import MEMQ, LmeRun

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RANK_COLUMNS = (
    "session_recall_any@5",
    "session_recall_any@10",
    "session_recall_all@5",
    "session_recall_all@10",
    "session_ndcg@10",
    "turn_recall_any@10",
    "turn_recall_all@10",
    "turn_ndcg@10",
)
TYPE_COLUMNS = ("session_recall_any@5", "session_recall_all@10", "session_ndcg@10")
# the targets, against the best baseline of the same run
TARGET_ABOVE_BEST = {"session_recall_all@10": 0.03, "session_ndcg@10": 0.03, "evidence_recall@1000_tokens": 0.10}
TARGET_RECALL_ANY_5 = 0.985


def systems(run: LmeRun) -> list[dict[str, Any]]:
    """One object per system: its ``name``, every measure overall (named as in the table),
    ``per_type``, ``questions`` and its latency."""
    out = []
    for name, results in run.results.items():
        agg = aggregate(results)
        lat = run.latency_ms.get(name, [])
        out.append(
            {
                "name": name,
                **{k: round(v, 4) for k, v in agg.overall.items()},
                "questions": agg.questions,
                "abstentions_left_out": agg.abstentions,
                "per_type": {
                    t: {"questions": agg.type_counts[t], **{k: round(v, 4) for k, v in m.items()}}
                    for t, m in agg.per_type.items()
                },
                "latency_p50_ms": round(percentile(lat, 50), 2),
                "latency_p95_ms": round(percentile(lat, 95), 2),
            }
        )
    return out


def targets(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by = {r["name"]: r for r in rows}
    memq = by.get(MEMQ)
    if memq is None:
        return {}
    base = [r for r in rows if r["name"] != MEMQ]
    out: dict[str, Any] = {}
    best_any = max((r.get("session_recall_any@5", 0.0) for r in base), default=0.0)
    value = memq.get("session_recall_any@5", 0.0)
    out["session_recall_any@5"] = {
        "value": value,
        "target": max(TARGET_RECALL_ANY_5, best_any),
        "met": value >= TARGET_RECALL_ANY_5 and value >= best_any,
    }
    for measure, margin in TARGET_ABOVE_BEST.items():
        best = max((r.get(measure, 0.0) for r in base), default=0.0)
        value = memq.get(measure, 0.0)
        goal = min(1.0, best + margin)  # a baseline at 1.0 can only be matched
        out[measure] = {"value": value, "best_baseline": best, "target": round(goal, 4), "met": value >= goal - 1e-9}
    return out


def to_json(run: LmeRun) -> dict[str, Any]:
    rows = systems(run)
    replay = run.replay
    return {
        "data": str(run.config.data),
        "questions": len(run.questions),
        "types": sorted({q.type for q in run.questions}),
        "budgets": list(run.config.budgets),
        "rank_limit": run.config.rank_limit,
        "detail": run.config.detail,
        "llm": run.llm,
        "systems": rows,
        "targets": targets(rows),
        "episodes": run.episodes,
        "replay": None
        if replay is None
        else {
            "messages": replay.messages,
            "enqueue_s": round(replay.enqueue_s, 2),
            "process_s": round(replay.process_s, 2),
            "messages_per_second": round(replay.messages_per_second, 2),
        },
        "seeded_vectors": run.seeded_vectors,
        "llm_cost_per_1000_messages": {
            stage: {k: round(v, 2) for k, v in figures.items()} for stage, figures in run.llm_cost.items()
        },
        "stages_seconds": {k: round(v, 2) for k, v in run.stages_s.items()},
    }


def write_json(run: LmeRun, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(run), indent=2) + "\n")


def _cell(value: float | None, best: float | None) -> str:
    if value is None:
        return "—"
    text = f"{value:.3f}"
    return f"[bold green]{text}[/]" if best is not None and abs(value - best) < 1e-9 else text


def print_llm_cost(run: LmeRun, console: Console) -> None:
    table = Table(title=f"LLM calls and prompt tokens per 1,000 messages, by stage ({run.llm})")
    table.add_column("stage")
    table.add_column("calls", justify="right")
    table.add_column("prompt tokens", justify="right")
    for stage, figures in run.llm_cost.items():
        table.add_row(stage, f"{figures['calls']:.1f}", f"{figures['prompt_tokens']:,.0f}")
    console.print(table)
    console.print(
        "prompt tokens: the messages' text (tiktoken cl100k), not the JSON schema sent beside them; completion "
        "tokens are not reported: a scripted answer's length says nothing of a real model's"
    )


def print_report(run: LmeRun, console: Console) -> None:
    if run.llm_cost:
        print_llm_cost(run, console)
        _print_run(run, console)
        return
    rows = systems(run)
    budgets = run.config.budgets
    columns = [*RANK_COLUMNS, *(budget_measure(b) for b in budgets)]
    n = rows[0]["questions"] if rows else 0
    table = Table(title=f"LongMemEval_S — {n} questions ({rows[0]['abstentions_left_out']} abstention left out)")
    table.add_column("system")
    for c in columns:
        table.add_column(_short(c), justify="right")
    table.add_column("p50 / p95 ms", justify="right")
    best = {c: max((r[c] for r in rows if c in r), default=None) for c in columns}
    for r in rows:
        cells = [_cell(r.get(c), best[c]) for c in columns]
        table.add_row(r["name"], *cells, f"{r['latency_p50_ms']:.1f} / {r['latency_p95_ms']:.1f}")
    console.print(table)

    types = sorted({t for r in rows for t in r["per_type"]})
    type_columns = (*TYPE_COLUMNS, "turn_ndcg@10", *(budget_measure(b) for b in (250, 1000) if b in budgets))
    per = Table(title="per question type")
    per.add_column("type (questions)")
    per.add_column("system")
    for c in type_columns:
        per.add_column(_short(c), justify="right")
    for t in types:
        present = [r for r in rows if t in r["per_type"]]
        top = {c: max((r["per_type"][t].get(c, -1.0) for r in present), default=None) for c in type_columns}
        for i, r in enumerate(present):
            m = r["per_type"][t]
            label = f"{t} ({m['questions']})" if i == 0 else ""
            per.add_row(
                label, r["name"], *[_cell(m.get(c), top[c]) for c in type_columns], end_section=i == len(present) - 1
            )
    console.print(per)

    _print_run(run, console)
    for measure, t in targets(rows).items():
        mark = "[green]met[/]" if t["met"] else "[red]not met[/]"
        console.print(f"[bold]target[/] {measure}: memq {t['value']:.3f}, target {t['target']:.3f} {mark}")


def _print_run(run: LmeRun, console: Console) -> None:
    e = run.episodes
    console.print(
        f"[bold]episodes[/] {e.get('episodes')} over {e.get('sessions')} sessions "
        f"({e.get('per_session')} a session, {e.get('messages_per_episode')} messages each); LLM {run.llm}"
    )
    if run.replay is not None:
        console.print(
            f"[bold]replay[/] {run.replay.messages} messages in {run.replay.enqueue_s + run.replay.process_s:.0f} s: "
            f"{run.replay.messages_per_second:.1f} messages/s through the producer, workers and database"
        )
    console.print("[bold]stages[/] " + ", ".join(f"{k} {v:.1f} s" for k, v in run.stages_s.items()))


def _short(measure: str) -> str:
    return (
        measure.replace("session_", "s.")
        .replace("turn_", "t.")
        .replace("recall_", "")
        .replace("evidence_recall@", "ev@")
        .replace("_tokens", "")
    )


def chart(run: LmeRun) -> Figure:
    from matplotlib.figure import Figure

    rows = systems(run)
    fig = Figure(figsize=(11, 4.5))
    left, right = fig.subplots(1, 2)
    measures = ("session_recall_any@5", "session_recall_all@10", "session_ndcg@10", "turn_ndcg@10")
    width = 0.8 / max(1, len(rows))
    for i, r in enumerate(rows):
        left.bar(
            [j + i * width for j in range(len(measures))], [r.get(m, 0.0) for m in measures], width, label=r["name"]
        )
        budgets = run.config.budgets
        right.plot(budgets, [r.get(budget_measure(b), 0.0) for b in budgets], marker="o", label=r["name"])
    left.set_xticks([j + 0.4 - width / 2 for j in range(len(measures))], [_short(m) for m in measures])
    left.set_ylim(0, 1)
    left.set_title("LongMemEval_S: the field's measures")
    left.legend(fontsize=7)
    right.set_xscale("log")
    right.set_xticks(list(run.config.budgets), [str(b) for b in run.config.budgets])
    right.set_ylim(0, 1)
    right.set_xlabel("returned tokens")
    right.set_title("evidence-turn recall at a budget")
    fig.tight_layout()
    return fig


def write_chart(run: LmeRun, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    chart(run).savefig(path, dpi=120)
