"""The one-machine fleet (``memq up``): the deployment's roles, each a real memq command."""

from __future__ import annotations

import click
import pytest

from memq.cli import COMMANDS, main
from memq.fleet import fleet


def _plan(**overrides):
    args = {"workers": 3, "concurrency": 2, "host": "127.0.0.1", "api_port": 8765, "flower_port": 5555}
    return fleet(**{**args, **overrides})


def test_the_fleet_has_the_deployments_roles():
    roles = _plan()
    assert [r.name for r in roles] == ["api", "worker1", "worker2", "worker3", "beat", "flower"]
    assert roles[0].url == "http://127.0.0.1:8765" and roles[-1].url == "http://127.0.0.1:5555"
    names = [r.argv[r.argv.index("-n") + 1] for r in roles if r.name.startswith("worker")]
    assert len(set(names)) == 3, "each worker needs its own node name"
    assert [r.name for r in _plan(api=False, flower=False, workers=1)] == ["worker1", "beat"]


@pytest.mark.parametrize("role", _plan(), ids=lambda r: r.name)
def test_every_role_is_a_real_memq_command_with_valid_options(role):
    assert role.argv[1:3] == ("-m", "memq")
    name, *args = role.argv[3:]
    assert name in COMMANDS
    command = main.get_command(click.Context(main), name)
    assert command is not None
    command.make_context(name, list(args))  # raises on an unknown option or a bad value
