"""``memq retrieve CONVERSATION_ID QUERY`` and ``memq recent CONVERSATION_ID``: the read
side from a shell, through the same library the HTTP API and the MCP server call
(``memq.memory.Memory``), so what a user sees here is exactly what an LLM would be handed."""

from __future__ import annotations

import click

from memq.cli.options import tenant_option, user_option
from memq.cli.output import print_answer, reading
from memq.memory.retrieval.request import DETAILS
from memq.shared.review_notes import flush_review_notes


@click.command("retrieve")
@click.argument("conversation_id")
@click.argument("query")
@click.option(
    "--all-conversations", is_flag=True, help="Search every conversation of the tenant, not only CONVERSATION_ID."
)
@click.option("--conversation", "more", multiple=True, metavar="ID", help="Search this conversation too (repeatable).")
@click.option(
    "--detail",
    type=click.Choice(DETAILS),
    default="auto",
    show_default=True,
    help="none: summaries; low: a few messages each; high: as many as fit; auto: high for the best episodes, key "
    "moments and the episodes holding the best message matches.",
)
@click.option("--max-tokens", type=int, help="Token budget of the returned text (default MEMQ_RETRIEVAL_MAX_TOKENS).")
@click.option("--limit", type=int, help="Most memories to return (default MEMQ_RETRIEVAL_LIMIT).")
@click.option("--since", metavar="ISO", help="Only memories that end at or after this time (ISO-8601 with a timezone).")
@click.option("--until", metavar="ISO", help="Only memories that start before this time (ISO-8601 with a timezone).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON with every score instead of markdown.")
@click.option("--no-record", is_flag=True, help="Do not queue what is returned for review (inspection only).")
@tenant_option
@user_option
def retrieve_cmd(
    conversation_id: str,
    query: str,
    all_conversations: bool,
    more: tuple[str, ...],
    detail: str,
    max_tokens: int | None,
    limit: int | None,
    since: str | None,
    until: str | None,
    as_json: bool,
    no_record: bool,
    tenant: str | None,
    user_id: str | None,
) -> None:
    """Recall the memories most relevant to QUERY, as an LLM would receive them. With
    --user: every conversation of the user (or those of --conversation that are the user's)."""
    if all_conversations and more:
        raise click.UsageError("--all-conversations already searches every conversation; drop --conversation")
    scope = None if all_conversations or (user_id and not more) else [conversation_id, *more]
    time_range = (since, until) if since or until else None
    with reading(tenant) as memory:
        result = memory.retrieve(
            query,
            conversation_ids=scope,
            user_id=user_id,
            limit=limit,
            detail=detail,
            max_tokens=max_tokens,
            time_range=time_range,
            record=not no_record,
            asked_in=conversation_id,
        )
        if not flush_review_notes(timeout=10.0):  # a one-shot command: its review note lands before it returns
            click.echo("warning: the review note could not be written (PostgreSQL unreachable?)", err=True)
    print_answer(result.text, result.to_json(), as_json)


@click.command("recent")
@click.argument("conversation_id", required=False)
@click.option("--limit", type=int, help="Most memories to show (default MEMQ_RETRIEVAL_LIMIT).")
@click.option(
    "--days", type=float, default=7.0, show_default=True, help="Only memories that ended within this many days."
)
@click.option("--max-tokens", type=int, help="Token budget of the text (default MEMQ_RETRIEVAL_MAX_TOKENS).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of markdown.")
@tenant_option
@user_option
def recent_cmd(
    conversation_id: str | None,
    limit: int | None,
    days: float,
    max_tokens: int | None,
    as_json: bool,
    tenant: str | None,
    user_id: str | None,
) -> None:
    """The conversation's latest memories (or, with --user and no conversation, the user's),
    newest first: what an agent reads when a session starts."""
    if conversation_id is None and user_id is None:
        raise click.UsageError("give CONVERSATION_ID or --user")
    with reading(tenant) as memory:
        result = memory.recent(conversation_id, user_id=user_id, limit=limit, days=days, max_tokens=max_tokens)
    data = {
        "conversation_id": conversation_id,
        "user_id": user_id,
        "tenant": memory.tenant,
        "days": days,
        "tokens": result.tokens,
        "memories": result.records,
        "text": result.text,
    }
    print_answer(result.text, data, as_json)
