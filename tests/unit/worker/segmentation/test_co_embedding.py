"""Which of other conversations' waiting inbox items ride along in a drain's model call
(``co_embedding.take``, pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memq.shared.mailbox.codec import encode_payload
from memq.shared.mailbox.keys import ConversationKeys
from memq.worker.inbox_fronts import Front
from memq.worker.segmentation.co_embedding import take


def _item(n: int) -> str:
    return f"{1000 + n} {2000 + n} " + encode_payload(f"m{n}", "user", f"text {n}", None, None)


def _front(conv: str, numbers: list[int], broken_at: int | None = None) -> Front:
    raws = [_item(n) for n in numbers]
    if broken_at is not None:
        raws.insert(broken_at, "1 2 {not json")
    return Front(ConversationKeys("p", "t", conv, 4), raws)


def test_items_are_taken_in_order_front_by_front_until_the_budget():
    a, b, c = _front("a", [1, 2, 3]), _front("b", [4, 5]), _front("c", [6])
    chosen = take([a, b, c], budget=4)
    assert [(f.keys.conversation_id, [m.id for _, m in items]) for f, items in chosen] == [
        ("a", ["m1", "m2", "m3"]),
        ("b", ["m4"]),
    ]
    assert all(raw == m.raw for _, items in chosen for raw, m in items)  # the exact inbox items, for the guard


def test_a_front_stops_at_an_item_that_does_not_decode_and_the_next_front_is_still_read():
    chosen = take([_front("a", [1, 2, 3], broken_at=1), _front("b", [4])], budget=10)
    assert [[m.id for _, m in items] for _, items in chosen] == [["m1"], ["m4"]]
    assert take([_front("a", [1], broken_at=0)], budget=10) == []  # nothing before the broken item


@given(st.lists(st.integers(0, 6), max_size=6), st.integers(0, 20))
def test_never_more_than_the_budget_and_nothing_empty(sizes, budget):
    fronts, n = [], 0
    for i, size in enumerate(sizes):
        fronts.append(_front(f"c{i}", list(range(n, n + size))))
        n += size
    chosen = take(fronts, budget)
    assert sum(len(items) for _, items in chosen) == min(budget, n)
    assert all(items for _, items in chosen)
