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
