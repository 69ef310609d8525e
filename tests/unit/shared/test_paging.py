"""Pages read with a cursor (``memq.shared.paging``): the conversations' and the activity
log's."""

from __future__ import annotations

import pytest

from memq.shared.errors import ValidationError
from memq.shared.paging import PAGE_MAX, check_limit, cut


def test_a_page_and_the_cursor_of_the_next():
    assert cut(["a", "b", "c"], 2, str.upper) == (["a", "b"], "B")  # one more was read: another page follows
    assert cut(["a", "b"], 2, str.upper) == (["a", "b"], None)  # the last page
    assert cut([], 2, str.upper) == ([], None)


def test_the_limit_of_a_page():
    assert check_limit(1) == 1 and check_limit(PAGE_MAX) == PAGE_MAX
    for bad in (0, PAGE_MAX + 1, True, "5", 2.0):
        with pytest.raises(ValidationError, match=f"limit: must be a whole number from 1 to {PAGE_MAX}"):
            check_limit(bad)
