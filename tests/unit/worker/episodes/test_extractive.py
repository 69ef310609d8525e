from worker.episodes.extractive import extractive_summary, extractive_title, keywords

CONV = [
    {"role": "user", "content": "My sourdough loaf came out flat and dense again this morning."},
    {"role": "assistant", "content": "A flat loaf usually means the starter is weak or the dough over-proofed. How old is your starter?"},
    {"role": "user", "content": "The starter is five days old and smells like nail polish."},
    {"role": "assistant", "content": "That acetone smell means the starter is hungry; feed it twice a day for a week before baking."},
    {"role": "tool", "content": "irrelevant tool dump " * 50, "metadata": {"tool_name": "web_search"}},
]


def test_title_is_five_to_fifteen_words_from_the_conversation():
    title = extractive_title(CONV)
    assert 5 <= len(title.split()) <= 15
    assert "starter" in title.lower() or "sourdough" in title.lower()


def test_a_tiny_exchange_still_gets_a_title_of_at_least_five_words():
    title = extractive_title([{"role": "user", "content": "ok"}, {"role": "assistant", "content": "fine"}])
    assert 5 <= len(title.split()) <= 15


def test_summary_is_third_person_quotes_in_order_and_names_tools():
    summary = extractive_summary(CONV, max_sentences=3, tools=["web_search"])
    assert summary.startswith("An exchange of 5 messages (2 user, 2 assistant, 1 tool).")
    assert "The user said:" in summary and "The assistant said:" in summary
    assert "Tools used: web_search." in summary
    assert "irrelevant tool dump" not in summary
    quoted = [s for s in ("flat and dense", "five days old", "acetone smell") if s in summary]
    assert quoted == sorted(quoted, key=summary.index)


def test_keywords_ignore_stopwords_and_tool_output():
    assert "starter" in keywords(CONV) and "the" not in keywords(CONV) and "irrelevant" not in keywords(CONV)
