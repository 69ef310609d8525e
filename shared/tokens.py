"""Token counting with tiktoken (agent-memory), offline.

tiktoken downloads encodings on first use; this machine has no internet, so the
encoding files that litellm ships inside its wheel are used as tiktoken's cache. A
tool result is counted on its first ``tool_result_max_chars`` characters only.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tiktoken import Encoding


def _point_tiktoken_at_bundled_cache() -> None:
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return
    spec = importlib.util.find_spec("litellm")
    if spec and spec.submodule_search_locations:
        bundled = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
        if bundled.is_dir():
            os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)


@functools.lru_cache(maxsize=4)
def _encoding(name: str) -> Encoding:
    _point_tiktoken_at_bundled_cache()
    import tiktoken

    return tiktoken.get_encoding(name)


def encoding(name: str = "cl100k_base") -> Encoding:
    """The tiktoken encoding ``name`` (from litellm's bundled files, offline)."""
    return _encoding(name)


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    return len(_encoding(encoding).encode(text, disallowed_special=()))


def message_tokens(role: str, content: str, *, tool_result_max_chars: int, encoding: str = "cl100k_base") -> int:
    if role == "tool":
        content = content[:tool_result_max_chars]
    return count_tokens(content, encoding)


@functools.lru_cache(maxsize=50_000)
def _count_short(text: str) -> int:
    return count_tokens(text)


def count_tokens_cached(text: str) -> int:
    """``count_tokens`` remembered for repeated short texts (the lines of retrieved
    messages, which come back query after query); long texts are counted afresh, so the
    cache stays small."""
    return _count_short(text) if len(text) <= 2_000 else count_tokens(text)


def count_chunks(chunks: Sequence[str], count: Callable[[str], int] = count_tokens_cached) -> int:
    """The exact token count of ``"".join(chunks)`` from the chunks' own counts, when
    every chunk but the last ends in a line break and the next one starts with a visible
    character; otherwise the joined text is counted.

    Why that is exact: tiktoken splits text with cl100k's pre-tokenizer pattern and
    encodes each piece on its own. No piece runs past a run of line breaks into a visible
    character (letters take no line break before them; punctuation and whitespace
    pieces end where the breaks end), so a boundary there is a piece boundary and the
    pieces on either side are those of the chunks counted alone. Retrieved text is
    mostly the same lines query after query, so ``count`` (cached) makes this a few
    dictionary lookups instead of encoding the whole text again."""
    for i in range(len(chunks) - 1):
        a, b = chunks[i], chunks[i + 1]
        if not a.endswith("\n") or not b or b[0].isspace():
            return count("".join(chunks))
    return sum(count(c) for c in chunks)
