"""``memq forget`` without a terminal cannot ask: it says to pass --yes and forgets nothing."""

from __future__ import annotations

from click.testing import CliRunner

from memq.cli import main


def test_forget_without_a_terminal_says_to_pass_yes():
    for args in (["forget", "some-conversation"], ["forget", "--user", "ada"]):
        out = CliRunner().invoke(main, args, input="y\n")  # piped input is no terminal
        assert out.exit_code == 2, out.output
        assert "there is no terminal to confirm it: pass --yes" in out.output
