"""The one SQL helper the benchmark families share: the single row an aggregate answers."""

from __future__ import annotations

from typing import Any


def one_row(conn: Any, sql: str, args: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """The single row an aggregate query answers."""
    row = conn.execute(sql, args).fetchone()
    if row is None:
        raise RuntimeError(f"no row for {sql!r}")
    return tuple(row)
