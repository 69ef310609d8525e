"""``memq forget``: a conversation (or every conversation of a user) and every trace of it, for good."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from memq.cli.actor import command_actor
from memq.cli.options import tenant_option, user_option
from memq.cli.output import answer_only_on_stdout
from memq.shared.settings import Settings, get_settings

if TYPE_CHECKING:
    from memq.producer.client import Producer


@click.command("forget")
@click.argument("conversation_id", required=False)
@tenant_option
@user_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--compact",
    is_flag=True,
    help="Then remove the bytes storage still holds: rewrite the touched PostgreSQL tables (VACUUM FULL: locks "
    "them while it runs), CHECKPOINT, and rewrite Redis' append-only files (docs/api.md, Forget).",
)
def forget_cmd(conversation_id: str | None, tenant: str | None, yes: bool, compact: bool, user_id: str | None) -> None:
    """Forget a conversation: every episode, message, review note and Redis trace of it.
    With --user (and no conversation): every conversation of the user, and its audit rows."""
    from memq.producer.client import Producer
    from memq.shared.connections import pg_connect
    from memq.shared.errors import Busy
    from memq.shared.forget import forget_conversation
    from memq.shared.ids import check_conversation_id

    settings = get_settings()
    if (conversation_id is None) == (user_id is None):
        raise click.UsageError("give CONVERSATION_ID or --user USER_ID (not both)")
    if user_id is not None:
        _forget_user(settings, tenant, user_id, yes)
        if compact:
            _compact(settings, Producer(settings))
        return
    assert conversation_id is not None
    with answer_only_on_stdout():
        check_conversation_id(conversation_id, settings.conversation_id_max_length)
    if not yes:
        _confirm(f"forget conversation {conversation_id!r} of tenant {tenant or settings.tenant!r} for good?")
    producer = Producer(settings)
    try:
        with pg_connect(settings, tenant=tenant or settings.tenant, autocommit=True) as conn:
            done = forget_conversation(
                producer.redis,
                conn,
                producer.keys(conversation_id, tenant),
                wait_seconds=settings.forget_wait_seconds,
                actor=command_actor(),
            )
    except Busy as exc:
        raise click.ClickException(str(exc)) from None
    if done.existed:
        click.echo(f"forgot {conversation_id}: {done.episodes} episodes, {done.messages} messages")
    else:
        click.echo(f"nothing to forget: no conversation {conversation_id!r}")
    if compact:
        _compact(settings, producer)


def _confirm(question: str) -> None:
    """Ask on a terminal; without one (a script, a pipe) nobody can answer: say to pass --yes."""
    if not sys.stdin.isatty():
        raise click.UsageError("forgetting is for good and there is no terminal to confirm it: pass --yes")
    click.confirm(question, abort=True)


def _forget_user(settings: Settings, tenant: str | None, user_id: str, yes: bool) -> None:
    from memq.producer.client import Producer
    from memq.shared.connections import pg_connect
    from memq.shared.errors import Busy
    from memq.shared.users import forget_user

    if not yes:
        _confirm(f"forget every conversation of user {user_id!r} of tenant {tenant or settings.tenant!r} for good?")
    producer = Producer(settings)
    try:
        with pg_connect(settings, tenant=tenant or settings.tenant, autocommit=True) as conn:
            done = forget_user(
                producer.redis,
                conn,
                settings,
                tenant=tenant,
                user_id=user_id,
                wait_seconds=settings.forget_wait_seconds,
                actor=command_actor(),
            )
    except Busy as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"forgot user {user_id}: {len(done.conversations)} conversations, {done.episodes} episodes, "
        f"{done.messages} messages, {done.audit_rows} audit rows"
    )


def _compact(settings: Settings, producer: Producer) -> None:
    import redis

    from memq.shared.client_timeouts import redis_options
    from memq.shared.connections import pg_owner_connect, redis_url
    from memq.shared.forget_compact import compact, redis_servers

    click.echo("compacting: rewriting the touched tables and Redis' append-only files ...")
    broker = redis.Redis.from_url(redis_url(settings), **redis_options(settings))
    with pg_owner_connect(settings, autocommit=True) as conn:  # every tenant's rows: the tables are rewritten
        done = compact(conn, redis_servers(producer.redis, broker))
    click.echo(
        f"compacted {len(done.tables)} tables{', checkpointed' if done.checkpoint else ''}, "
        f"rewrote the append-only file of {done.redis_rewritten} Redis server(s)"
    )
    for note in done.notes:
        click.secho(note, fg="yellow", err=True)
