"""The inspector's search page numbers the memories it shows 1..n in the order returned.
Retrieval's ``rank`` is a memory's place among the candidates ranked before the token
budget chose what is returned, so a candidate that did not fit leaves a gap there (ranks
1-8, then 10); the page says which candidates were left out instead of skipping a number."""

from __future__ import annotations

from memq.api.inspect import _ranked


def _records(*ranks: int) -> list[dict]:
    return [{"rank": r, "id": f"e{r}"} for r in ranks]


def test_ranks_are_consecutive_even_where_a_candidate_did_not_fit():
    ranked, left_out = _ranked(_records(1, 2, 3, 4, 5, 6, 7, 8, 10))
    assert [n for n, _ in ranked] == list(range(1, 10))
    assert [m["id"] for _, m in ranked][-2:] == ["e8", "e10"]  # the order returned is kept
    assert left_out == [9]


def test_nothing_left_out():
    ranked, left_out = _ranked(_records(1, 2, 3))
    assert [n for n, _ in ranked] == [1, 2, 3] and left_out == []
    assert _ranked([]) == ([], [])


def test_several_left_out():
    ranked, left_out = _ranked(_records(2, 3, 6))
    assert [n for n, _ in ranked] == [1, 2, 3] and left_out == [1, 4, 5]


def test_the_page_shows_consecutive_ranks_and_says_what_was_left_out():
    import re
    from types import SimpleNamespace

    from memq.api.inspect.render import render

    scores = {"lexical_rank": 1, "vector_rank": None, "message_lexical_rank": None, "message_vector_rank": 2,
              "rrf": 0.03, "retrievability": 0.9, "time_boost": 1.0, "final": 0.027}  # fmt: skip
    records = [
        {**r, "title": f"episode {r['rank']}", "conversation_id": "c", "start_at": "2025-03-14T07:31:08+00:00",
         "scores": scores, "messages": [{"seq": 1, "role": "user", "speaker": None, "speaker_named": False,
                                         "content": "hi", "relevance": 0.5, "lexical_rank": 1, "vector_rank": None}]}
        for r in _records(1, 2, 4)
    ]  # fmt: skip
    result = SimpleNamespace(records=records, facts=[], tokens=120, named_time=None, participants=[], text="…",
                             timings_ms={"sql": 1.0})  # fmt: skip
    ranked, left_out = _ranked(records)
    page = render(
        "search.html", q="seat", conversation_id="", result=result, ranked=ranked, left_out=left_out,
        settings=SimpleNamespace(retrievability_weight=1.0, rrf_k=60),
    )  # fmt: skip
    html = bytes(page.body).decode()
    table = html.split("<tbody>")[1].split("</tbody>")[0]
    assert re.findall(r'<tr>\s*<td class="num">(\d+)</td>', table) == ["1", "2", "3"]
    assert "(rank 3): 1" in html and "(rank 4)" not in html
    assert "the candidate retrieval ranked 3 did not fit within the token budget and is not returned" in html
