from shared.tokens import count_tokens, message_tokens


def test_counts_with_cl100k_offline():
    assert count_tokens("Hello, world!") == 4


def test_tool_results_count_only_their_first_1000_characters():
    text = "word " * 2000
    assert message_tokens("tool", text, tool_result_max_chars=1000) == count_tokens(text[:1000])
    assert message_tokens("user", text, tool_result_max_chars=1000) == count_tokens(text)
