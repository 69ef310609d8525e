"""``memq config``: every setting with its variable, default, bounds and meaning."""

from __future__ import annotations

import os
import sys

import click


@click.command("config")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "env"]),
    default="markdown",
    show_default=True,
    help="markdown: the reference (docs/configuration.md); env: an env file of the defaults.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Instead: check this environment's MEMQ_ variables, and fail on any that is no setting "
    "(misspelt or removed; the settings ignore such a variable).",
)
def config_cmd(fmt: str, check: bool) -> None:
    """Print every setting: its environment variable, default, allowed values and meaning
    (whatever the environment holds), or check the environment's (``--check``)."""
    if check:
        _check()
        return
    from memq.configuration import env_file, markdown

    click.echo(markdown() if fmt == "markdown" else env_file(), nl=False)
    _say_openings()


def _say_openings() -> None:
    """On stderr, below the listing: what this environment opens that is closed by default
    (nothing when its settings are invalid: ``--check`` says what is wrong)."""
    from memq.shared.errors import ConfigError
    from memq.shared.settings import get_settings
    from memq.shared.settings.environment import openings

    try:
        settings = get_settings()
    except ConfigError:
        return
    for line in openings(settings):
        click.secho(f"note: this environment's {line}", fg="yellow", err=True)


def _check() -> None:
    """Validate the settings (a ``ConfigError`` says what is wrong), then say which MEMQ_
    variables are set and whether any is no setting."""
    from memq.shared.settings import get_settings
    from memq.shared.settings.environment import setting_variables, unrecognised

    get_settings()
    variables = set(setting_variables())
    found = unrecognised(os.environ, variables)
    used = sorted(name for name in os.environ if name.upper() in variables)
    for item in found:
        click.secho(f"error: {item}", fg="red", err=True)
    if found:
        click.echo("`memq config` lists every setting; unset or rename these.", err=True)
        sys.exit(1)
    _say_openings()
    click.echo(f"ok: the settings are valid; {len(used)} set here" + (f" ({', '.join(used)})" if used else ""))
