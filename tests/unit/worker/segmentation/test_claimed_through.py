"""How much of a drain's inbox front another conversation's drain took (``claimed_through``)."""

import hashlib

from memq.worker.segmentation.job import claimed_through

RAWS = ['1 2 {"a": 1}', '3 4 {"b": "é"}', '5 6 {"c": 3}']


def _sha(raw: str) -> str:
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()


def test_the_items_up_to_the_mark_are_taken():
    assert claimed_through(RAWS, _sha(RAWS[0])) == 1
    assert claimed_through(RAWS, _sha(RAWS[1])) == 2  # the mark of a non-ASCII item, as Redis hashes it
    assert claimed_through(RAWS, _sha(RAWS[2])) == 3


def test_no_mark_or_a_mark_of_an_item_gone_takes_nothing():
    assert claimed_through(RAWS, None) == 0
    assert claimed_through(RAWS, _sha("an item already segmented")) == 0
    assert claimed_through([], _sha(RAWS[0])) == 0
