"""``memq conversations``: which user a conversation belongs to, moving it to another
(audited in ``conversation_user_change``), and a user's conversations."""

from __future__ import annotations

import json

import click

from memq.cli.options import tenant_option
from memq.cli.output import answer_only_on_stdout
from memq.shared.settings import get_settings


@click.group("conversations")
def conversations_group() -> None:
    """Conversations and the users they belong to."""


@conversations_group.command("move")
@click.argument("conversation_id")
@click.option("--user", "user_id", metavar="USER_ID", help="The user it now belongs to.")
@click.option("--no-user", is_flag=True, help="Make it belong to no user.")
@tenant_option
def move_cmd(conversation_id: str, user_id: str | None, no_user: bool, tenant: str | None) -> None:
    """Move CONVERSATION_ID to a user; later messages must name that user (or none)."""
    from memq.shared.connections import mailbox_client, pg_connect
    from memq.shared.users import move_conversation

    if (user_id is None) == (not no_user):
        raise click.UsageError("give --user USER_ID or --no-user")
    settings = get_settings()
    with answer_only_on_stdout(), pg_connect(settings, tenant=tenant or settings.tenant, autocommit=True) as conn:
        moved = move_conversation(
            mailbox_client(settings),
            conn,
            settings,
            tenant=tenant,
            conversation_id=conversation_id,
            user_id=user_id,
            actor="cli",
        )
    if moved.changed:
        click.echo(f"moved {conversation_id}: user {moved.from_user_id or '-'} -> {moved.to_user_id or '-'}")
    else:
        click.echo(f"{conversation_id} already belongs to user {moved.to_user_id or '-'}")


@conversations_group.command("list")
@click.option("--user", "user_id", required=True, metavar="USER_ID", help="The user.")
@click.option("--changes", is_flag=True, help="Also the audited moves from or to the user.")
@click.option("--json", "as_json", is_flag=True)
@tenant_option
def list_cmd(user_id: str, changes: bool, as_json: bool, tenant: str | None) -> None:
    """The user's conversations."""
    from memq.shared.connections import pg_connect
    from memq.shared.ids import check_tenant, check_user_id
    from memq.shared.users import user_changes, user_conversations

    settings = get_settings()
    with answer_only_on_stdout():
        user_id = check_user_id(user_id, settings.conversation_id_max_length)
        tenant = check_tenant(tenant or settings.tenant)
    with pg_connect(settings, tenant=tenant, autocommit=True) as conn:
        owned = user_conversations(conn, tenant, user_id)
        moves = user_changes(conn, tenant, user_id=user_id) if changes else []
    if as_json:
        data: dict[str, object] = {"user_id": user_id, "conversations": owned}
        if changes:
            data["changes"] = moves
        click.echo(json.dumps(data, indent=2))
        return
    for c in owned:
        click.echo(c)
    for m in moves:
        click.echo(f"{m['at']}  {m['conversation_id']}: {m['from_user_id'] or '-'} -> {m['user_id'] or '-'}")
