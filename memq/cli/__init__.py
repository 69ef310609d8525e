"""The ``memq`` command line: one entry point assembling the commands of each part."""

from __future__ import annotations

import sys

import click

from shared.errors import MemqError


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except MemqError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.version_option(package_name="memq")
def main() -> None:
    """memq: turn live conversations into long-term memory for LLM agents."""
    from shared.logging import configure_logging
    from shared.settings import get_settings

    configure_logging(get_settings())  # MEMQ_LOG_LEVEL / MEMQ_LOG_FORMAT for every command


def _register() -> None:
    from memq.cli.audit import audit_cmd
    from memq.cli.demo import demo_cmd
    from memq.cli.deps import check_deps_cmd
    from memq.cli.episodes import episodes_cmd
    from memq.cli.evaluate import eval_cmd, eval_locomo_cmd
    from memq.cli.memory import consolidate_cmd, facts_cmd
    from memq.cli.producer_commands import flush_cmd, replay_cmd, send_cmd, status_cmd
    from memq.cli.quarantine import quarantine_group
    from memq.cli.reindex import reindex_cmd
    from memq.cli.retrieve import recent_cmd, retrieve_cmd
    from memq.cli.service import api_cmd, context_cmd, forget_cmd, keys_group, manifest_cmd, mcp_cmd
    from memq.cli.services import migrate_cmd, services_group
    from memq.cli.soak import soak_cmd
    from memq.cli.worker_commands import beat_cmd, flower_cmd, worker_alive_cmd, worker_cmd

    for command in (
        services_group,
        migrate_cmd,
        send_cmd,
        replay_cmd,
        flush_cmd,
        status_cmd,
        quarantine_group,
        audit_cmd,
        episodes_cmd,
        worker_cmd,
        worker_alive_cmd,
        beat_cmd,
        flower_cmd,
        demo_cmd,
        eval_cmd,
        eval_locomo_cmd,
        soak_cmd,
        check_deps_cmd,
        retrieve_cmd,
        recent_cmd,
        reindex_cmd,
        api_cmd,
        mcp_cmd,
        keys_group,
        forget_cmd,
        manifest_cmd,
        context_cmd,
        consolidate_cmd,
        facts_cmd,
    ):
        main.add_command(command)


_register()
