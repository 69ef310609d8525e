"""``memq config``: every setting with its variable, default, bounds and meaning."""

from __future__ import annotations

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
def config_cmd(fmt: str) -> None:
    """Print every setting: its environment variable, default, allowed values and meaning."""
    from memq.configuration import env_file, markdown

    click.echo(markdown() if fmt == "markdown" else env_file(), nl=False)
