"""``memq forget``: a conversation and every trace of it, for good."""

from __future__ import annotations

import click

from memq.cli.options import tenant_option
from memq.cli.output import answer_only_on_stdout
from memq.shared.settings import get_settings


@click.command("forget")
@click.argument("conversation_id")
@tenant_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def forget_cmd(conversation_id: str, tenant: str | None, yes: bool) -> None:
    """Forget a conversation: every episode, message, review note and Redis trace of it."""
    from memq.producer.client import Producer
    from memq.shared.connections import pg_connect
    from memq.shared.errors import Busy
    from memq.shared.forget import forget_conversation
    from memq.shared.ids import check_conversation_id

    settings = get_settings()
    with answer_only_on_stdout():
        check_conversation_id(conversation_id, settings.conversation_id_max_length)
    if not yes:
        click.confirm(
            f"forget conversation {conversation_id!r} of tenant {tenant or settings.tenant!r} for good?", abort=True
        )
    producer = Producer(settings)
    try:
        with pg_connect(settings, autocommit=True) as conn:
            done = forget_conversation(
                producer.redis, conn, producer.keys(conversation_id, tenant), wait_seconds=settings.forget_wait_seconds
            )
    except Busy as exc:
        raise click.ClickException(str(exc)) from None
    if done.existed:
        click.echo(f"forgot {conversation_id}: {done.episodes} episodes, {done.messages} messages")
    else:
        click.echo(f"nothing to forget: no conversation {conversation_id!r}")
