"""The LoCoMo chart, rendered from a small synthetic run: every line drawn differently
and the log budget axis labelled with the budgets as plain numbers."""

import re
from pathlib import Path

import pytest

from memq_lab.evaluation.locomo.data import LocomoConversation, Question
from memq_lab.evaluation.locomo.recall import Found
from memq_lab.evaluation.locomo.report import PALETTE, chart, line_style, write_chart
from memq_lab.evaluation.locomo.runner import ABLATIONS, BASELINES, MAIN, EvalConfig, EvalRun, QuestionResult

pytest.importorskip("matplotlib")  # the lab brings it

BUDGETS = (100, 250, 500, 1000, 2000)


def _run(methods: list[str]) -> EvalRun:
    question = Question("q1", "What is the cat called?", "Tom", 4, ("D1:1",))
    run = EvalRun(
        EvalConfig(data=Path("locomo.json"), budgets=BUDGETS),
        [LocomoConversation("conv-x", ("Ann", "Bo"), [], [question])],
    )
    for i, method in enumerate(methods):
        for j, budget in enumerate(BUDGETS):
            run.results.append(QuestionResult(question, "conv-x", method, budget, Found(min(i + j, 4), 4), budget))
    return run


def _drawn(fig):
    (ax,) = fig.axes
    fig.canvas.draw()  # tick labels are set when drawn
    return ax


def test_every_line_of_the_full_run_has_its_own_colour_and_linestyle():
    methods = [m.name for m in (MAIN, *BASELINES, *ABLATIONS)]  # every line `make eval` can draw
    assert len(methods) > 10  # more than matplotlib's default cycle, which repeated colours
    ax = _drawn(chart(_run(methods)))
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == methods
    styles = [(line.get_color(), line.get_linestyle()) for line in lines]
    assert len(set(styles)) == len(styles)
    first = styles[: len(PALETTE)]  # while the palette lasts, the colours alone differ
    assert len({colour for colour, _ in first}) == len(first)


def test_the_budget_axis_is_labelled_with_plain_numbers():
    ax = _drawn(chart(_run([MAIN.name, "turn"])))
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(b) for b in BUDGETS]
    labels = [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]
    assert all(re.fullmatch(r"\d+", label) for label in labels), labels  # no "3x10^2" between the budgets


def test_past_the_palette_the_linestyle_keeps_lines_apart():
    styles = [line_style(i) for i in range(3 * len(PALETTE))]
    assert len(set(styles)) == len(styles)


def test_write_chart_writes_a_png(tmp_path):
    path = tmp_path / "eval" / "locomo.png"
    write_chart(_run([MAIN.name, "turn"]), path)
    assert path.read_bytes().startswith(b"\x89PNG")
