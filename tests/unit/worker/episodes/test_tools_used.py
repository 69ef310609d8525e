from worker.episodes.tools_used import tools_used


def test_tool_messages_and_tool_calls_deduplicated_in_order():
    messages = [
        {"role": "assistant", "content": "searching", "metadata": {"tool_calls": [{"name": "web_search"}, {"function": {"name": "weather"}}]}},
        {"role": "tool", "content": "result", "metadata": {"tool_name": "web_search"}},
        {"role": "tool", "content": "result", "metadata": {"name": "calculator"}},
        {"role": "tool", "content": "result"},
        {"role": "user", "content": "thanks"},
    ]
    assert tools_used(messages) == ["web_search", "weather", "calculator", "unnamed_tool"]


def test_no_tools():
    assert tools_used([{"role": "user", "content": "hi"}]) == []
