"""``memq consolidate`` (drain the semantic-consolidation backlog, e.g. after an LLM was
configured) and ``memq facts`` (a conversation's facts, a search, or one fact's history)."""

from __future__ import annotations

import json

import click

from memq.cli.options import tenant_option, user_option
from memq.cli.output import answer_only_on_stdout, reading
from memq.shared.settings import get_settings


@click.command("consolidate")
@click.argument("conversation_id", required=False)
@tenant_option
def consolidate_cmd(conversation_id: str | None, tenant: str | None) -> None:
    """Consolidate every episode still waiting (of CONVERSATION_ID, else of the tenant):
    the LLM distils lasting facts. Needs MEMQ_LLM_MODEL."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from memq.shared.connections import pg_connect
    from memq.shared.db.migrate import upgrade
    from memq.shared.embeddings import get_embedder
    from memq.shared.ids import check_conversation_id, check_tenant
    from memq.worker.consolidation.job import consolidate

    settings = get_settings()
    if not settings.llm_enabled:
        raise click.ClickException(
            "consolidation needs an LLM: set MEMQ_LLM_MODEL (and MEMQ_LLM_API_BASE / key), see the README's LLM section"
        )
    tenant = check_tenant(tenant or settings.tenant)
    upgrade(settings)
    with answer_only_on_stdout():
        if conversation_id is not None:
            check_conversation_id(conversation_id, settings.conversation_id_max_length)
    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        sql = (
            "SELECT conversation_id, count(*) FROM episodic_memory WHERE tenant_id = %s AND consolidated_at IS NULL"
            + (" AND conversation_id = %s" if conversation_id else "")
            + " GROUP BY conversation_id ORDER BY 1"
        )
        backlog = conn.execute(sql, (tenant, conversation_id) if conversation_id else (tenant,)).fetchall()
        total = sum(n for _, n in backlog)
        if not total:
            click.echo("nothing waiting for consolidation")
            return
        embedder = get_embedder(settings)
        done, failed = 0, 0
        counts: dict[str, int] = {}
        columns = (
            TextColumn("[bold]consolidating[/] {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns) as progress:
            task = progress.add_task("episodes", total=total)
            for conv, _ in backlog:
                progress.update(task, description=conv)
                while True:
                    outcome = consolidate(conn, settings, embedder, tenant, conv)
                    if outcome.status != "done":
                        failed += outcome.episodes if outcome.status == "failed" else 0
                        break
                    done += outcome.episodes
                    for k, v in outcome.counts.items():
                        counts[k] = counts.get(k, 0) + v
                    progress.update(task, completed=done)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "no facts"
    click.echo(f"consolidated {done} of {total} episodes: {summary}")
    if failed:
        raise click.ClickException(
            f"{failed} episodes could not be consolidated (the LLM gave no usable answer); they stay pending: run again"
        )


@click.command("facts")
@click.argument("conversation_id")
@tenant_option
@user_option
@click.option("--query", help="Search the active facts instead of listing them.")
@click.option("--history", "fact_id", metavar="FACT_ID", help="Show one fact and every change to it.")
@click.option("--all", "include_retired", is_flag=True, help="Retired facts too.")
@click.option("--json", "as_json", is_flag=True)
def facts_cmd(
    conversation_id: str,
    tenant: str | None,
    query: str | None,
    fact_id: str | None,
    include_retired: bool,
    as_json: bool,
    user_id: str | None,
) -> None:
    """A conversation's facts (semantic memory); with --query --user: search every
    conversation of the user."""
    from memq.memory.retrieval.facts_section import fact_line
    from memq.shared.ids import check_conversation_id, is_uuid

    found = None
    with reading(tenant) as memory:  # stdout carries the answer only: printed below
        check_conversation_id(conversation_id, memory.settings.conversation_id_max_length)
        if fact_id:
            found = memory.fact(fact_id) if is_uuid(fact_id) else None
        elif query:
            _, searched = memory.facts(query, conversation_id=None if user_id else conversation_id, user_id=user_id)
            facts = [f for f, _, _ in searched]
        else:
            facts = memory.conversation_facts(conversation_id, include_retired=include_retired)
    if fact_id:
        if found is None or found[0].conversation_id != conversation_id:
            raise click.ClickException(f"no fact {fact_id!r} in {conversation_id!r}")
        fact, changes = found
        if as_json:
            click.echo(json.dumps({"fact": fact.to_json(), "history": changes}, indent=2))
        else:
            click.echo(fact_line(fact))
            for h in changes:
                click.echo(f"  {h['at']}  {h['action']}  {json.dumps(h['detail'])}")
        return
    if as_json:
        click.echo(json.dumps([f.to_json() for f in facts], indent=2))
        return
    for f in facts:
        state = "" if f.active else f"  [retired {f.expired_at:%Y-%m-%d}]"
        click.echo(f"{f.id}  {fact_line(f)}{state}")
    if not facts:
        click.echo("no facts")
