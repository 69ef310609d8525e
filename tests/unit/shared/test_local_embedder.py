"""The bundled model's adapter: warming it up is not embedding work and changes no vector."""

from __future__ import annotations

import numpy as np

from memq.shared.embeddings import LocalMiniLM
from memq.shared.metrics import metrics

TEXTS = ["hello there", "what did we decide about the trip to Lisbon?", "ok"]


def test_warming_up_counts_no_texts_and_changes_no_vector():
    model = LocalMiniLM(pass_tokens=512, threads=1)
    before = model.embed(TEXTS)
    counted = metrics().embedding_texts._value.get()
    batches = metrics().embedding_batches._value.get()

    model.warm_up()

    assert metrics().embedding_texts._value.get() == counted
    assert metrics().embedding_batches._value.get() == batches
    after = model.embed(TEXTS)
    assert np.array_equal(before, after)
    assert after.shape == (3, model.dim)


def test_bfloat16_arithmetic_gives_the_float32_vectors_to_within_a_small_angle(monkeypatch):
    from memq.shared import embeddings

    exact = LocalMiniLM(threads=1, precision="float32")
    fast = LocalMiniLM(threads=1, precision="bfloat16")  # emulated where the CPU lacks it: slower, same vectors
    assert (exact.precision, fast.precision) == ("float32", "bfloat16")
    long = " ".join(["the flat in Lisbon has a balcony over the tram line"] * 30)  # past 256 word pieces
    a, b = exact.embed([*TEXTS, long]), fast.embed([*TEXTS, long])
    assert b.dtype == np.float32 and np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert (a * b).sum(axis=1).min() > 0.99

    assert embeddings.resolve_precision("float32") == "float32"
    assert embeddings.resolve_precision("bfloat16") == "bfloat16"
    assert embeddings.resolve_precision("auto") in ("float32", "bfloat16")
    monkeypatch.setattr("torch.ops.mkldnn._is_mkldnn_bf16_supported", lambda: False)
    assert embeddings.resolve_precision("auto") == "float32"  # no native bfloat16: float32
