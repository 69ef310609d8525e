"""``memq eval [DATA]``: segmentation quality of every detector profile (Pk,
WindowDiff, boundary F1) next to trivial baselines, per labelled file; ``memq
eval-locomo`` and ``memq eval-longmemeval``: retrieval quality through the real pipeline.

DATA is the folder of the public data sets (``memq_lab.eval_data``), else
``MEMQ_EVAL_DATA``; without either, each command says which sets it needs and where to get
them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click
from rich.console import Console
from rich.table import Table

from memq_lab import eval_data

# DATA: the public data sets' folder (or file), else MEMQ_EVAL_DATA
data_argument = click.argument("data", type=click.Path(path_type=Path), required=False, envvar=eval_data.ENV)


def _required(data: Path | None, command: str) -> Path:
    if data is None:
        raise click.UsageError(eval_data.missing(command))
    return data


@click.command("eval")
@data_argument
@click.option("--profile", "profiles", multiple=True, help="Profiles to score (default: all).")
@click.option("--lookahead", type=int, default=None, help="Look-ahead messages (default MEMQ_LOOKAHEAD_MESSAGES).")
@click.option("--file", "files", multiple=True, help="Only these files of the data directory.")
@click.option("--list", "list_profiles", is_flag=True, help="List the detector profiles and exit.")
@click.option(
    "--train",
    "train_files",
    multiple=True,
    metavar="FILE",
    help="Instead of scoring: fit the learned boundary scorer on FILE of DATA (e.g. tiage_train.json; "
    "repeat for several domains) and write worker/segmentation/detectors/models/<name>.json.",
)
@click.option(
    "--features",
    type=click.Choice(["embedding", "general", "style"]),
    default="embedding",
    show_default=True,
    help="With --train: the feature set (embedding: the TIAGE models; general: the cross-domain model; "
    "style: general and the conversation's style, for --model trees).",
)
@click.option(
    "--model",
    "model_kind",
    type=click.Choice(["logistic", "trees", "blend"]),
    default="logistic",
    show_default=True,
    help="With --train: logistic regression, gradient-boosted trees (fixed capacity, no C), or both "
    "averaged (blend: the logistic part reads the general features, with --c).",
)
@click.option(
    "--stitch",
    type=int,
    default=0,
    show_default=True,
    help="With --train: also fit on this many streams per FILE stitched from 3 of its dialogues.",
)
@click.option(
    "--c",
    "c",
    type=float,
    default=None,
    help="With --train: this regularisation strength instead of choosing one by 5-fold cross-validation.",
)
@click.option(
    "--model-name", default=None, help="With --train: model name (default tiage_w<look-ahead> / general_w<look-ahead>)."
)
@click.option("--width", type=int, default=150, show_default=True, help="Table width.")
def eval_cmd(
    data: Path | None,
    profiles: tuple[str, ...],
    lookahead: int | None,
    files: tuple[str, ...],
    list_profiles: bool,
    train_files: tuple[str, ...],
    features: str,
    model_kind: str,
    stitch: int,
    c: float | None,
    model_name: str | None,
    width: int,
) -> None:
    """Score detector profiles on topic-segmentation sets (TIAGE-style JSON and
    [BOUNDARY]-marked JSONL files in DATA/segmentation or DATA; DATA defaults to
    MEMQ_EVAL_DATA)."""
    from memq.shared.embeddings import get_embedder
    from memq.shared.settings import get_settings
    from memq.worker.segmentation.detectors.registry import PROFILES, build_detector
    from memq_lab.evaluation.runner import evaluate

    settings = get_settings()
    console = Console(width=width)
    if train_files:
        right = 2 if lookahead is None else lookahead
        name = model_name or f"{'blend' if model_kind == 'blend' else _PREFIX[features]}_w{right}"
        cs = (c or 0.0,) if c or model_kind == "trees" else _CS[features]
        data = _required(data, "memq eval --train")
        _train(data, train_files, right, features, model_kind, stitch, cs, name, settings, console)
        return
    if list_profiles:
        for name, p in PROFILES.items():
            console.print(f"[bold]{name:13}[/] {p.description}")
        return
    data = _required(data, "memq eval")
    chosen = list(profiles) or list(PROFILES)
    if lookahead is not None:
        settings = settings.model_copy(update={"lookahead_messages": lookahead})
    w = "profile's own" if settings.lookahead_messages is None else settings.lookahead_messages

    def embed_text(text):
        return get_embedder(settings).embed([text])[0]

    llm = f"LLM {settings.llm_model}" if settings.llm_enabled else "no LLM"
    console.print(
        f"[bold]memq eval[/] data={data} profiles={', '.join(chosen)} look-ahead={w} {llm} "
        f"embeddings={settings.embedding_model}"
    )
    rows = evaluate(
        data,
        settings,
        chosen,
        embedder_factory=lambda: get_embedder(settings),
        build=lambda name: build_detector(settings, name, embed_text),
        progress=lambda msg: console.print(f"[dim]… {msg}[/]"),
        files=files or None,
    )
    for file in dict.fromkeys(r.file for r in rows):
        table = Table(title=file)
        for col in ("method", "Pk ↓", "WinDiff ↓", "P", "R", "F1", "bounds/dlg", "gold/dlg", "dialogues", "s"):
            table.add_column(col, justify="left" if col == "method" else "right")
        file_rows = [r for r in rows if r.file == file]
        best = min(r.pk for r in file_rows)
        for r in file_rows:
            pk = f"[bold green]{r.pk:.3f}[/]" if r.pk == best else f"{r.pk:.3f}"
            table.add_row(
                r.method,
                pk,
                f"{r.windowdiff:.3f}",
                f"{r.precision:.3f}",
                f"{r.recall:.3f}",
                f"{r.f1:.3f}",
                f"{r.boundaries:.2f}",
                f"{r.gold:.2f}",
                str(r.dialogues),
                f"{r.seconds:.1f}",
            )
        console.print(table)


_PREFIX = {"embedding": "tiage", "general": "general", "style": "style"}
# Regularisation grids: the embedding model has ~1,550 weights, the general one ~30.
_CS = {
    "embedding": (0.0005, 0.001, 0.002, 0.004),
    "general": (0.003, 0.03, 0.3, 3.0),
    "style": (0.003, 0.03, 0.3, 3.0),
}


def _train(
    data: Path,
    train_files: tuple[str, ...],
    lookahead: int,
    features: str,
    model_kind: str,
    stitch: int,
    cs: tuple[float, ...],
    name: str,
    settings,
    console: Console,
) -> None:
    from memq.shared.embeddings import get_embedder
    from memq.worker.segmentation.detectors.learned import MODELS
    from memq_lab.evaluation.datasets import load_directory
    from memq_lab.evaluation.runner import dialogue_embeddings
    from memq_lab.evaluation.training import train

    sets = load_directory(data / "segmentation" if (data / "segmentation").is_dir() else data)
    missing = [f for f in train_files if f not in sets]
    if missing:
        raise click.ClickException(f"{', '.join(missing)} not labelled files in {data}; found: {', '.join(sets)}")
    cache = settings.data_path / "cache" / "eval-embeddings"
    embedder = get_embedder(settings)
    domains = [(sets[f], dialogue_embeddings(sets[f], embedder, cache)) for f in train_files]
    console.print(
        f"training {model_kind} on {features} features on {', '.join(train_files)} "
        f"({', '.join(str(len(d)) for d, _ in domains)} dialogues; {stitch} stitched streams per file), "
        f"look-ahead {lookahead}, "
        + ("fixed capacity" if model_kind == "trees" else f"C={cs[0]}" if len(cs) == 1 else "5-fold CV over C")
    )
    result = train(
        domains,
        settings,
        lookahead=lookahead,
        features=features,
        model=model_kind,
        cs=cs,
        stitched=stitch,
        progress=lambda m: console.print(f"[dim]… {m}[/]"),
        info={
            "trained_on": train_files[0] if len(train_files) == 1 else list(train_files),
            **({"stitched_per_file": stitch} if stitch else {}),
            "embedding_model": settings.embedding_model,
        },
    )
    path = MODELS / f"{name}.json"
    path.write_text(result.model.to_json() + "\n")
    m = result.model
    fitted = f"C={m.info['c']} " if "c" in m.info else ""
    console.print(f"wrote {path}: {fitted}high={m.high:.2f} low={m.low:.2f} train Pk={m.info['train_pk']}")


T = TypeVar("T")


def with_progress(console: Console, work: Callable[[Callable[[str, int, int], None], Callable[[str], None]], T]) -> T:
    """Run ``work(progress, note)`` under progress bars, one per label (``progress(label,
    done, total)``), with ``note(text)`` printed dim above them; a missing data file or a
    refused argument is a one-line error."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    tasks: dict[str, TaskID] = {}
    try:
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        ) as bars:

            def progress(label: str, done: int, total: int) -> None:
                if label not in tasks:
                    tasks[label] = bars.add_task(label, total=total)
                bars.update(tasks[label], completed=done, total=total)

            return work(progress, lambda m: bars.console.print(f"[dim]… {m}[/]"))
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


@click.command("eval-locomo")
@data_argument
@click.option("--tenant", default="eval-locomo", show_default=True, help="Tenant the conversations are replayed into.")
@click.option("--reuse", is_flag=True, help="Keep episodes of an earlier replay when every turn is already stored.")
@click.option(
    "--ablations", is_flag=True, help="Also score memq variants (auto detail, no FSRS, episode legs only, ...)."
)
@click.option("--file", "files", multiple=True, help="Only these LoCoMo files of DATA/locomo.")
@click.option("--workers", type=int, default=2, show_default=True, help="Worker processes for the replay.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Folder for locomo-report.json and locomo-recall.png (default <MEMQ_DATA_DIR>/eval).",
)
def eval_locomo_cmd(
    data: Path | None, tenant: str, reuse: bool, ablations: bool, files: tuple[str, ...], workers: int, out: Path | None
) -> None:
    """Retrieval quality on LoCoMo through the real pipeline: replay each conversation
    through the producer to real workers, ask every question of categories 1-4 through
    retrieve_memory and through single-turn / 8-turn / session baselines, and report
    evidence recall at 250 / 500 / 1,000 / 2,000 returned tokens. DATA (a folder holding
    locomo/, or MEMQ_EVAL_DATA) holds the LoCoMo files."""
    from memq.shared.ids import check_tenant
    from memq.shared.settings import get_settings
    from memq_lab.evaluation.locomo.report import print_report, write_chart, write_json
    from memq_lab.evaluation.locomo.runner import EvalConfig, run

    data = _required(data, "memq eval-locomo")
    settings = get_settings()
    console = Console(width=150)
    folder = out or settings.data_path / "eval"
    config = EvalConfig(
        data=data,
        tenant=check_tenant(tenant),
        reuse=reuse,
        workers=workers,
        ablations=ablations,
        files=files,
        cache_dir=folder / "locomo-embeddings",
    )
    llm = f"LLM {settings.llm_model}" if settings.llm_enabled else "no LLM (extractive titles and summaries)"
    console.print(f"[bold]memq eval-locomo[/] data={data} tenant={tenant} {llm} embeddings={settings.embedding_model}")
    result = with_progress(console, lambda progress, note: run(settings, config, progress, note))
    print_report(result, console)
    write_json(result, folder / "locomo-report.json")
    write_chart(result, folder / "locomo-recall.png")
    console.print(f"wrote {folder / 'locomo-report.json'} and {folder / 'locomo-recall.png'}")


@click.command("eval-longmemeval")
@data_argument
@click.option("--limit", type=int, default=None, help="Only the first N questions (after --types).")
@click.option(
    "--types",
    default=None,
    help="Only these question types, comma-separated (single-session-user, single-session-assistant, "
    "single-session-preference, multi-session, temporal-reasoning, knowledge-update).",
)
@click.option("--reuse", is_flag=True, help="Ask again without replaying the haystacks already stored.")
@click.option("--workers", type=int, default=2, show_default=True, help="Worker processes for the replay.")
@click.option(
    "--prefix",
    default=None,
    help="Each question is replayed into the tenant PREFIX<question id> (default lme-; lmellm- with --scripted-llm).",
)
@click.option(
    "--scripted-llm",
    is_flag=True,
    help="Instead: replay with a scripted LLM on 127.0.0.1 (and an agent's retrieval at the start of each session) "
    "and report the LLM calls and prompt tokens per 1,000 messages by stage; no questions are asked.",
)
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Write the report here too.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Folder for longmemeval-report.json and longmemeval.png (default <MEMQ_DATA_DIR>/eval).",
)
def eval_longmemeval_cmd(
    data: Path | None,
    limit: int | None,
    types: str | None,
    reuse: bool,
    workers: int,
    prefix: str | None,
    scripted_llm: bool,
    json_path: Path | None,
    out: Path | None,
) -> None:
    """One person's memory across many conversations, on LongMemEval_S: each question's
    haystack replayed as one user's conversations (one per session) through the real
    producer, workers and database into a tenant of its own, then the question asked
    user-wide at its own date through retrieve_memory and through four baselines (BM25
    and embeddings over whole sessions, embeddings over turns, a BM25 + vector hybrid
    over turns); the field's session and turn measures and evidence recall at 250 /
    500 / 1,000 / 2,000 returned tokens, side by side. DATA: a LongMemEval_S file, or a
    folder holding longmemeval/ (default MEMQ_EVAL_DATA)."""
    from memq.shared.ids import check_tenant
    from memq.shared.settings import get_settings
    from memq_lab.evaluation.longmemeval.report import print_report, write_chart, write_json
    from memq_lab.evaluation.longmemeval.runner import LmeConfig, run

    data = _required(data, "memq eval-longmemeval")
    settings = get_settings()
    console = Console(width=200)
    wanted = tuple(t.strip() for t in types.split(",") if t.strip()) if types else None
    folder = out or settings.data_path / "eval"
    prefix = prefix if prefix is not None else ("lmellm-" if scripted_llm else "lme-")
    check_tenant(prefix + "x")
    config = LmeConfig(
        data=data,
        limit=limit,
        types=wanted,
        reuse=reuse,
        workers=workers,
        prefix=prefix,
        cache_dir=folder / "embeddings",
        scripted_llm=scripted_llm,
    )
    llm = f"LLM {settings.llm_model}" if settings.llm_enabled else "no LLM (extractive titles and summaries)"
    if scripted_llm:
        llm = "a scripted LLM on 127.0.0.1 for the workers (its answers mean nothing; what it is asked is counted)"
    console.print(f"[bold]memq eval-longmemeval[/] data={data} {llm} embeddings={settings.embedding_model}")
    result = with_progress(console, lambda progress, note: run(settings, config, progress, note))
    print_report(result, console)
    name = "longmemeval-llm-cost" if scripted_llm else "longmemeval"
    write_json(result, folder / f"{name}-report.json")
    if json_path is not None:
        write_json(result, json_path)
    if not scripted_llm:
        write_chart(result, folder / f"{name}.png")
    console.print(
        f"wrote {folder / f'{name}-report.json'}" + ("" if scripted_llm else f" and {folder / f'{name}.png'}")
    )
