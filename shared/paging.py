"""Lists read a page at a time with a cursor: at most ``limit`` items (1 to ``PAGE_MAX``)
after the cursor, and the cursor of the next page (None on the last). The tenant's
conversations (``GET /v1/conversations``) and its activity log (``GET /v1/activity``) page
this way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from memq.shared.errors import ValidationError

PAGE_MAX = 500
PAGE_DEFAULT = 100

T = TypeVar("T")


def check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= PAGE_MAX:
        raise ValidationError(f"must be a whole number from 1 to {PAGE_MAX}", field="limit")
    return limit


def cut(items: Sequence[T], limit: int, cursor: Callable[[T], str]) -> tuple[list[T], str | None]:
    """The page of ``items`` (what was read after the cursor, in the list's order: ``limit``
    + 1 of them tell whether another page follows) and the next page's cursor."""
    page = list(items[:limit])
    return page, (cursor(page[-1]) if len(items) > limit and page else None)
