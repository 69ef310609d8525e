"""The lab's commands (memq bench / soak / eval / eval-locomo / eval-longmemeval): loaded from
memq_lab when it is installed, and otherwise still listed, each saying how to install the lab."""

from __future__ import annotations

import sys

import click
import pytest
from click.testing import CliRunner

from memq.cli import COMMANDS, main

LAB_COMMANDS = ("bench", "soak", "eval", "eval-locomo", "eval-longmemeval")


@pytest.fixture
def no_lab(monkeypatch):
    """The interpreter as if memq-lab were not installed."""
    for name in [m for m in sys.modules if m == "memq_lab" or m.startswith("memq_lab.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "memq_lab", None)


def test_the_lab_commands_are_memq_commands_from_the_lab():
    for name in LAB_COMMANDS:
        assert COMMANDS[name][0].startswith("memq_lab.cli."), name
        command = main.get_command(click.Context(main), name)
        assert command is not None and command.callback is not None
        assert command.callback.__module__.startswith("memq_lab.cli."), name


@pytest.mark.parametrize("name", ["bench", "eval-longmemeval"])
def test_their_help_works(name):
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert f"Usage: main {name}" in result.output or f"Usage: memq {name}" in result.output
    assert "MEMQ_EVAL_DATA" in result.output


def test_without_the_lab_they_are_listed_as_not_installed(no_lab):
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    for name in LAB_COMMANDS:
        (line,) = [line for line in result.output.splitlines() if line.split()[:1] == [name]]
        assert "not installed: pip install -e ./lab" in line, line


@pytest.mark.parametrize("args", [["bench", "--quick"], ["bench", "--help"], ["soak"], ["eval-locomo", "data"]])
def test_without_the_lab_a_lab_command_says_how_to_install_it(no_lab, args):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"`memq {args[0]}` belongs to memq's lab" in result.output
    assert "pip install -e ./lab" in result.output and "make install" in result.output
