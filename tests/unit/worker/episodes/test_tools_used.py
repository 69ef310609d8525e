from typing import Any

import pytest

from memq.worker.episodes.tools_used import tools_used


def test_tool_messages_and_tool_calls_deduplicated_in_order():
    messages: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": "searching",
            "metadata": {"tool_calls": [{"name": "web_search"}, {"function": {"name": "weather"}}]},
        },
        {"role": "tool", "content": "result", "metadata": {"tool_name": "web_search"}},
        {"role": "tool", "content": "result", "metadata": {"name": "calculator"}},
        {"role": "tool", "content": "result"},
        {"role": "user", "content": "thanks"},
    ]
    assert tools_used(messages) == ["web_search", "weather", "calculator", "unnamed_tool"]


def test_no_tools():
    assert tools_used([{"role": "user", "content": "hi"}]) == []


@pytest.mark.parametrize(
    "meta, expected",
    [
        ({"tool_calls": [{"function": "search"}]}, []),  # a bare string: crashed with AttributeError before
        (
            {
                "tool_calls": [
                    {"function": ["x"]},
                    {"function": None},
                    {"name": 5},
                    {"name": {"x": 1}},
                    7,
                    "search",
                    None,
                ]
            },
            [],
        ),
        ({"tool_calls": {"name": "search"}}, []),  # not a list
        ({"tool_calls": 5}, []),  # was TypeError: 'int' object is not iterable
        ({"tool_calls": "search"}, []),
        ({"tool_calls": [{"name": "  web\n search "}]}, ["web search"]),
        ({"tool_calls": [{"name": " "}, {"name": "", "function": {"name": "weather"}}]}, ["weather"]),
        ({"tool_calls": [{"type": "tool_use", "name": "calc", "input": {"x": 1}}]}, ["calc"]),
    ],
)
def test_malformed_tool_calls_are_ignored_never_fatal(meta, expected):
    """Messages queued before the validator checked these shapes (or by another
    producer) reach the worker too: a segment must not fail on its metadata."""
    assert tools_used([{"role": "assistant", "content": "x", "metadata": meta}]) == expected


@pytest.mark.parametrize(
    "meta", [{"tool_name": "\r"}, {"tool_name": 5}, {"name": ["x"]}, {"tool_name": None}, None, [], "meta", 5, True]
)
def test_a_tool_message_without_a_usable_name_is_unnamed(meta):
    assert tools_used([{"role": "tool", "content": "r", "metadata": meta}]) == ["unnamed_tool"]


def test_tool_names_are_cut_at_200_characters():
    assert tools_used([{"role": "tool", "content": "r", "metadata": {"tool_name": "x" * 5000}}]) == ["x" * 200]
