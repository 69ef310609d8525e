"""Options shared by memq's commands, validated like every other entry point."""

from __future__ import annotations

import click

from memq.shared.errors import ValidationError
from memq.shared.ids import check_tenant


def _tenant(ctx, param, value):
    if value is None:
        return None
    try:
        return check_tenant(value)
    except ValidationError as exc:
        raise click.BadParameter(str(exc).removeprefix("tenant: ")) from None


tenant_option = click.option("--tenant", callback=_tenant, help="Tenant scope (default MEMQ_TENANT).")


def _user(ctx, param, value):
    if value is None:
        return None
    from memq.shared.ids import check_user_id

    try:
        return check_user_id(value)
    except ValidationError as exc:
        raise click.BadParameter(str(exc).removeprefix("user_id: ")) from None


user_option = click.option(
    "--user", "user_id", callback=_user, metavar="USER_ID", help="Scope to this user's conversations."
)
