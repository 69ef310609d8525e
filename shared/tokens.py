"""Token counting with tiktoken (seed 003), offline.

tiktoken downloads encodings on first use; this machine has no internet, so the
encoding files that litellm ships inside its wheel are used as tiktoken's cache. A
tool result is counted on its first ``tool_result_max_chars`` characters only.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path


def _point_tiktoken_at_bundled_cache() -> None:
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return
    spec = importlib.util.find_spec("litellm")
    if spec and spec.submodule_search_locations:
        bundled = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
        if bundled.is_dir():
            os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)


@functools.lru_cache(maxsize=4)
def _encoding(name: str):
    _point_tiktoken_at_bundled_cache()
    import tiktoken

    return tiktoken.get_encoding(name)


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
