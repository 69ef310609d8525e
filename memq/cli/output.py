"""How the read commands answer: only the answer on stdout (``--json`` pipes into jq),
markdown rendered for a terminal or JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markdown import Markdown

from memq.shared.errors import NotFound, ValidationError

if TYPE_CHECKING:
    from memq.memory import Memory


@contextmanager
def answer_only_on_stdout() -> Iterator[None]:
    """While the library works, whatever it prints (structlog's default logger writes to
    stdout when nothing configured it) goes to stderr: stdout carries only the answer, so
    ``--json`` can be piped into jq. A refusal becomes a usage error (exit code 2), something
    this tenant does not know an error (exit code 1)."""
    try:
        with redirect_stdout(sys.stderr):
            yield
    except ValidationError as exc:
        raise click.UsageError(str(exc)) from None
    except NotFound as exc:  # exit code 1, the message says what to check
        raise click.ClickException(str(exc)) from None


@contextmanager
def reading(tenant: str | None) -> Iterator[Memory]:
    """The read side for one command, bound to ``tenant`` (default MEMQ_TENANT), its
    connections closed when the command is done; only the answer on stdout."""
    from memq.memory import Memory
    from memq.shared.settings import get_settings

    with answer_only_on_stdout(), Memory.open(get_settings(), tenant, pool_size=2) as memory:
        yield memory


def _console() -> Console:
    return Console(width=None if sys.stdout.isatty() else 150)


def print_answer(text: str, data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        # Markdown joins consecutive lines into one paragraph; the answer's lines (time,
        # summary, each message, each marker) stand apart, so each ends in a hard break.
        _console().print(Markdown(text.replace("\n", "  \n")))
