"""Producer commands: ``memq send``, ``memq replay FILE.jsonl``, ``memq flush``,
``memq status``."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memq.cli.options import tenant_option
from memq.producer.client import NO_WORKER, Producer
from memq.producer.replay import batches, count_lines
from memq.shared.errors import ValidationError


@click.command("send")
@click.argument("conversation_id")
@click.argument("role")
@click.argument("content")
@click.option("--timestamp", help="ISO-8601 with timezone (default: now).")
@click.option("--message-id", help="Idempotency key: a repeat is accepted once.")
@click.option("--metadata", help="JSON object.")
@tenant_option
@click.option(
    "--user",
    "user_id",
    metavar="USER_ID",
    help="The user the conversation belongs to (set by its first message naming one; another is refused).",
)
def send_cmd(conversation_id, role, content, timestamp, message_id, metadata, tenant, user_id) -> None:
    """Queue one message."""
    meta = None
    if metadata:
        try:
            meta = json.loads(metadata)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"--metadata is not valid JSON ({exc.msg})", field="metadata") from None
    result = Producer().add_message(
        conversation_id, role, content, timestamp, message_id, meta, tenant=tenant, user_id=user_id
    )
    click.echo(f"{result.status} message_id={result.message_id}")


def _queued(through: int) -> str:
    if not through:
        return "Nothing was queued"
    return (
        f"Lines 1-{through} were queued (replaying the fixed file stores them once: their ids are kept, or "
        "derived from what each line is)"
    )


def replay_file(
    producer: Producer,
    path: Path,
    *,
    conversation_id: str | None,
    batch_size: int,
    quiet: bool = False,
    tenant: str | None = None,
) -> tuple[dict[str, int], set[str]]:
    """Queue a JSONL file; return counts by status and the conversation ids seen."""
    total = count_lines(path)
    counts = {"accepted": 0, "clamped": 0, "duplicate": 0}
    conversations: set[str] = set()
    queued_through = 0  # the last line of the batches queued so far
    with Progress(
        TextColumn("[bold]replay[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=quiet,
    ) as progress:
        task = progress.add_task(path.name, total=total)
        read = batches(path, batch_size, conversation_id)
        while True:
            try:
                batch = next(read, None)
            except ValidationError as exc:  # a line that is not a JSON object, or not UTF-8
                raise ValidationError(f"{exc}. {_queued(queued_through)}; it and the lines after it were not") from None
            if batch is None:
                break
            try:
                results = producer.add_messages([item for _, item in batch], tenant=tenant)
            except ValidationError as exc:
                line = batch[exc.index][0] if exc.index is not None else "?"
                raise ValidationError(
                    f"{path}:{line}: {exc}. {_queued(queued_through)}; lines {batch[0][0]}-{batch[-1][0]} (this "
                    "line's batch) and the rest were not"
                ) from None
            queued_through = batch[-1][0]
            for r in results:
                counts[r.status] += 1
                conversations.add(r.conversation_id)
            progress.advance(task, len(batch))
    return counts, conversations


@click.command("replay")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--conversation-id", help="Override the file's conversation ids.")
@click.option("--batch-size", default=100, show_default=True, help="Messages per Redis round trip.")
@click.option("--flush/--no-flush", default=False, help="Close open events afterwards.")
@tenant_option
def replay_cmd(path: Path, conversation_id, batch_size: int, flush: bool, tenant: str | None) -> None:
    """Queue every message of a JSON Lines file, in order, with a progress bar."""
    producer = Producer()
    counts, conversations = replay_file(
        producer, path, conversation_id=conversation_id, batch_size=batch_size, tenant=tenant
    )
    click.echo(", ".join(f"{k}={v}" for k, v in counts.items()) + f", conversations={len(conversations)}")
    if flush:
        for cid in sorted(conversations):
            producer.flush(cid, tenant=tenant)


@click.command("flush")
@click.argument("conversation_id")
@click.option("--wait/--no-wait", default=False, help="Block until every message is in an episode.")
@click.option("--timeout", default=300.0, show_default=True)
@tenant_option
def flush_cmd(conversation_id: str, wait: bool, timeout: float, tenant: str | None) -> None:
    """Close the conversation's open event into an episode once its inbox is drained."""
    producer = Producer()
    had_work = producer.flush(conversation_id, tenant=tenant)
    click.echo("flush requested" if had_work else "nothing to flush")
    if had_work and not producer.worker_answers():
        click.echo(f"warning: {NO_WORKER}", err=True)
    if wait and had_work:
        producer.wait_idle(conversation_id, tenant=tenant, timeout=timeout)
        click.echo("idle: every accepted message is in an episode")


@click.command("status")
@click.argument("conversation_id", required=False)
@tenant_option
def status_cmd(conversation_id: str | None, tenant: str | None) -> None:
    """Show a conversation's queue state in Redis, its quarantine and failures; without
    a conversation, the whole mailbox at a glance."""
    producer = Producer()
    if conversation_id is None:
        from memq.shared.mailbox.status import mailbox_overview

        o = mailbox_overview(producer.redis, producer.scripts, producer.settings)
        click.echo(
            f"active_conversations={o.active} drains_queued={o.drains_queued} drains_stalled={o.drains_stalled} "
            f"segments_waiting={o.segments_waiting} segments_stalled={o.segments_stalled} "
            f"conversations_with_quarantine={o.quarantined}"
        )
        if o.quarantined:
            click.echo("see `memq quarantine list --all-tenants`")
        if not producer.worker_answers():
            click.echo(f"warning: {NO_WORKER}", err=True)
        memory = _memory_backlog(producer.settings, tenant, None)
        click.echo(
            f"episodes_unconsolidated={memory[0]} reviews_pending={memory[1]}"
            + (
                ""
                if producer.settings.llm_enabled or not memory[0]
                else " (consolidation waits for an LLM: set MEMQ_LLM_MODEL, then `memq consolidate`)"
            )
        )
        return
    s = producer.status(conversation_id, tenant=tenant)
    memory = _memory_backlog(producer.settings, tenant, conversation_id)
    click.echo(
        f"inbox={s.inbox} open_event={s.buffer} segments_waiting={s.segments} "
        f"drain_queued={s.drain_queued} flush_requested={s.flush_requested} "
        f"messages_accepted={s.accepted} messages_numbered={s.numbered} quarantined={len(s.quarantined)} "
        f"episodes_unconsolidated={memory[0]} reviews_pending={memory[1]}"
    )
    if s.failing:
        click.echo(
            f"failing: message {s.failing['message_id']} failed {s.failing['failures']} time(s): {s.failing['error']}"
        )
    for q in s.quarantined:
        click.echo(f"quarantined {q.kind} {q.id} after {q.failures} failures: {q.error}")
    if not s.idle and not producer.worker_answers():
        click.echo(f"warning: {NO_WORKER}", err=True)


def _memory_backlog(settings, tenant: str | None, conversation_id: str | None) -> tuple[int, int]:
    """(episodes waiting for consolidation, pending reviews) of a conversation, or of a
    tenant (every tenant when neither is given)."""
    from memq.shared.connections import pg_connect, pg_owner_connect

    where, args = "TRUE", []
    if tenant or conversation_id:
        where, args = "tenant_id = %s", [tenant or settings.tenant]
    if conversation_id:
        where += " AND conversation_id = %s"
        args.append(conversation_id)
    scoped = tenant or conversation_id
    connect = (  # every tenant's backlog needs the owner's connection
        (lambda: pg_connect(settings, tenant=tenant or settings.tenant, autocommit=True))
        if scoped
        else (lambda: pg_owner_connect(settings, autocommit=True))
    )
    with connect() as conn:
        episodes_row = conn.execute(
            f"SELECT count(*) FROM episodic_memory WHERE {where} AND consolidated_at IS NULL", args
        ).fetchone()
        reviews_row = conn.execute(
            f"SELECT count(*) FROM pending_review WHERE "
            f"{where.replace('conversation_id', 'coalesce(asked_in, conversation_id)')} "
            "AND consumed_at IS NULL",
            args,
        ).fetchone()
        assert episodes_row is not None and reviews_row is not None  # count(*) always gives a row
        episodes, reviews = episodes_row[0], reviews_row[0]
    return episodes, reviews


__all__ = ["flush_cmd", "replay_cmd", "replay_file", "send_cmd", "status_cmd"]
