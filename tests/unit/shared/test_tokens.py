import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memq.shared.tokens import count_chunks, count_tokens, message_tokens


def test_counts_with_cl100k_offline():
    assert count_tokens("Hello, world!") == 4


def test_tool_results_count_only_their_first_1000_characters():
    text = "word " * 2000
    assert message_tokens("tool", text, tool_result_max_chars=1000) == count_tokens(text[:1000])
    assert message_tokens("user", text, tool_result_max_chars=1000) == count_tokens(text)


# --- counting joined lines from the lines' own counts -------------------------------------------

_line_chars = st.characters(codec="utf-8", exclude_categories=("Cs",))  # type: ignore[arg-type]  # mypy reads a 1-tuple as tuple[str]
_visible_start = st.characters(codec="utf-8", exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc"))


@st.composite
def _chunks(draw) -> list[str]:
    lines = draw(st.lists(st.tuples(_visible_start, st.text(_line_chars, max_size=40)), min_size=1, max_size=8))
    seps = draw(
        st.lists(st.sampled_from(["\n", "\n\n", " \n", ".\n", "\n\n\n"]), min_size=len(lines), max_size=len(lines))
    )
    chunks = [first + rest + sep for (first, rest), sep in zip(lines, seps)]
    chunks[-1] = chunks[-1].rstrip("\n")
    return chunks


@settings(max_examples=400, deadline=None)
@given(_chunks())
def test_joined_lines_count_as_the_whole_text(chunks):
    assert count_chunks(chunks, count_tokens) == count_tokens("".join(chunks))


@pytest.mark.parametrize(
    "chunks",
    [
        ["a.\n", " b"],  # the next chunk starts with whitespace: the break can merge with it
        ["a", "b"],  # no line break at the joint
        ["x\n", ""],
        ["- one: two!\n", "\n- three"],
    ],
)
def test_joints_that_could_merge_are_counted_whole(chunks):
    assert count_chunks(chunks, count_tokens) == count_tokens("".join(chunks))


def test_retrieved_markdown_counts_exactly_line_by_line():
    text = (
        "### 7 May 2023 18:00 UTC (3 days ago) · Career talk\nSummary: Caroline asked …\n…\n- Caroline: I'm keen on "
        "counseling!\n- Melanie: That's great.\n…\n\n"
        "### Hiking\n8 May 2023 09:00 UTC (2 days ago)\nSummary: They hiked."
    )
    lines = text.split("\n")
    chunks = [line + "\n" for line in lines[:-1]] + [lines[-1]]
    assert count_chunks(chunks, count_tokens) == count_tokens(text)
