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
