"""What an agent is handed at the top of a session: ``memq manifest`` (the episodes by day)
and ``memq context`` (the session context)."""

from __future__ import annotations

import json

import click

from memq.cli.options import tenant_option, user_option
from memq.cli.output import print_answer, reading


@click.command("manifest")
@click.argument("conversation_id")
@tenant_option
@click.option("--depth", type=int, help="Most entries (default MEMQ_MANIFEST_DEPTH).")
@click.option("--timezone", "tz", help="IANA time zone for days and times (default UTC).")
@click.option("--json", "as_json", is_flag=True)
@user_option
def manifest_cmd(
    conversation_id: str, tenant: str | None, depth: int | None, tz: str | None, as_json: bool, user_id: str | None
) -> None:
    """The conversation's episodes (with --user: every conversation of the user's) as a tree
    by day, the open segment marked Active."""
    with reading(tenant) as memory:
        result = memory.manifest(conversation_id, user_id=user_id, depth=depth, timezone=tz)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        click.echo(result.text)


@click.command("context")
@click.argument("conversation_id")
@tenant_option
@click.option("--max-tokens", type=int, help="Budget (default MEMQ_SESSION_MAX_TOKENS).")
@click.option("--timezone", "tz", help="IANA time zone (default UTC).")
@click.option("--json", "as_json", is_flag=True)
@user_option
def context_cmd(
    conversation_id: str, tenant: str | None, max_tokens: int | None, tz: str | None, as_json: bool, user_id: str | None
) -> None:
    """What an agent reads at the top of a new session of the conversation (with --user:
    the summaries and facts of every conversation of the user)."""
    with reading(tenant) as memory:
        result = memory.context(conversation_id, user_id=user_id, max_tokens=max_tokens, timezone=tz)
    print_answer(result.text, result.to_json(), as_json)
