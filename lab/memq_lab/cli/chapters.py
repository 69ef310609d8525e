"""``memq eval-chapters [DATA]``: the reader's level (chapters) scored at the joins of
streams stitched from whole labelled dialogues, and on the shipped demo sample against its
ground truth, beside today's default (every event a manifest entry). ``--train`` fits the
chapter scorer instead (on the training files only) and writes its model file."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from memq_lab.cli.evaluate import _required, data_argument

# Fitted on these; what is reported comes from other dialogues.
TRAIN = ("tiage_train.json", "superdialseg_validation.jsonl[:half]")
REPORT = ("tiage_dev.json", "superdialseg_validation.jsonl[half:]")


@click.command("eval-chapters")
@data_argument
@click.option(
    "--streams", type=int, default=None, help="Stitched streams per set (default 200 to score, 600 to --train)."
)
@click.option("--train", "train", is_flag=True, help="Fit the chapter scorer on the training sets and write it.")
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="Also write the rows as JSON here.")
def eval_chapters_cmd(data: Path | None, streams: int | None, train: bool, json_path: Path | None) -> None:
    import json

    from memq.memory.chapters.detector import MODEL_PATH, load_model
    from memq.shared.embeddings import get_embedder
    from memq.shared.settings import get_settings
    from memq.worker.segmentation.detectors.registry import build_detector
    from memq_lab.evaluation.chapters import demo_stream, fit_model, score, stitched
    from memq_lab.evaluation.datasets import load_directory
    from memq_lab.evaluation.runner import dialogue_embeddings

    console = Console()
    data = _required(data, "memq eval-chapters")
    count = streams or (600 if train else 200)
    settings = get_settings()
    embedder = get_embedder(settings)
    detector = build_detector(settings, None, lambda text: embedder.embed([text])[0])
    cache = settings.data_path / "cache" / "eval-embeddings"
    folder = data / "segmentation" if (data / "segmentation").is_dir() else data
    sets = load_directory(folder)

    def streams_of(file: str, part: str | None, seed: int):
        dialogues = sets[file]
        if part is not None:
            half = len(dialogues) // 2
            dialogues = dialogues[:half] if part == "first" else dialogues[half:]
        vectors = dialogue_embeddings(list(dialogues), embedder, cache)
        label = file if part is None else f"{file} ({part} half)"
        console.print(f"[dim]… {label}: {count} streams segmented into events[/]")
        return stitched(label, dialogues, vectors, count, detector, settings, seed=seed)

    if train:
        domains = [streams_of("tiage_train.json", None, 1), streams_of("superdialseg_validation.jsonl", "first", 1)]
        model = fit_model(domains, settings)
        MODEL_PATH.write_text(model.to_json() + "\n")
        load_model.cache_clear()
        console.print(f"wrote {MODEL_PATH} (threshold {model.high}, fit F1 {model.info['fit_f1']})")
        return

    model = load_model()
    rows = []
    rows += score("TIAGE dev", streams_of("tiage_dev.json", None, 2), model, settings)
    rows += score("SuperDialseg val", streams_of("superdialseg_validation.jsonl", "second", 2), model, settings)
    rows += score("demo sample", [demo_stream(embedder.embed, detector, settings)], model, settings)
    table = Table(title="Chapters: boundary P / R / F1 at the gold chapter starts (exact message)")
    for col in ("set", "reading", "P", "R", "F1", "entries", "gold entries", "streams"):
        table.add_column(col, justify="left" if col in ("set", "reading") else "right")
    for r in rows:
        f1 = f"[bold]{r.f1:.3f}[/]" if r.reading == "chapters" else f"{r.f1:.3f}"
        table.add_row(
            r.name,
            r.reading,
            f"{r.precision:.3f}",
            f"{r.recall:.3f}",
            f1,
            f"{r.entries:.1f}",
            f"{r.gold:.1f}",
            str(r.streams),
        )
    console.print(table)
    console.print(
        "[dim]fitted on TIAGE train and the first half of SuperDialseg validation; reported on other dialogues[/]"
    )
    if json_path is not None:
        json_path.write_text(json.dumps([r.__dict__ for r in rows], indent=2))
