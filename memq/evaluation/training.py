"""Fitting the learned boundary scorer on labelled dialogues (TIAGE train by
default): teacher-forced feature rows, an L2-regularised logistic regression by
Newton's method on standardised features, and thresholds chosen by replaying the
training dialogues through the real segmenter. The regularisation strength is
picked by k-fold cross-validation on the training set only; evaluation sets are
never seen."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memq.evaluation.datasets import Dialogue
from memq.evaluation.metrics import aggregate, score_dialogue
from memq.evaluation.segmenter_replay import segment_dialogue
from memq.shared.settings import Settings
from memq.worker.segmentation.detectors.boundary_features import feature_vector
from memq.worker.segmentation.detectors.learned import LearnedDetector, LinearModel


def rows(dialogues: Sequence[Dialogue], vectors: Sequence[np.ndarray], lookahead: int) -> tuple[np.ndarray, np.ndarray]:
    X, y = [], []
    for d, E in zip(dialogues, vectors):
        for i in range(1, len(d)):
            X.append(
                feature_vector(
                    list(E[max(0, i - 8) : i]),
                    E[i],
                    list(E[i + 1 : i + 1 + lookahead]),
                    d.utterances[i][1],
                    d.utterances[i - 1][1],
                    right=lookahead,
                )
            )
            y.append(1.0 if i in d.boundaries else 0.0)
    return np.array(X, dtype=np.float64), np.array(y, dtype=np.float64)


def fit_logistic(
    X: np.ndarray, y: np.ndarray, c: float, iterations: int = 25
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Minimise sum(log-loss) + ||w||^2 / (2c) on standardised X. Returns mean, scale, w, b."""
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale < 1e-6] = 1.0

    Z = np.hstack([(X - mean) / scale, np.ones((len(X), 1))])
    w = np.zeros(Z.shape[1])
    reg = np.full(Z.shape[1], 1.0 / c)
    reg[-1] = 0.0  # no penalty on the bias
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(Z @ w)))
        grad = Z.T @ (p - y) + reg * w
        hess = (Z * (p * (1 - p))[:, None]).T @ Z + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-6:
            break
    return mean, scale, w[:-1], float(w[-1])


def replay_pk(dialogues, vectors, model: LinearModel, settings: Settings) -> float:
    detector_scores = []
    for d, E in zip(dialogues, vectors):
        hyp = segment_dialogue(d, E, LearnedDetector(model), settings, model.lookahead)
        detector_scores.append(score_dialogue(len(d), set(d.boundaries), hyp))
    return aggregate(detector_scores)["pk"]


@dataclass(frozen=True)
class TrainingResult:
    model: LinearModel
    cv: dict[float, float]  # c -> mean cross-validated Pk


def choose_thresholds(dialogues, vectors, base: LinearModel, settings: Settings) -> tuple[float, float, float]:
    best = (1.0, 0.5, 0.3)
    for high in np.arange(0.2, 0.76, 0.05):
        model = LinearModel(
            base.mean, base.scale, base.weights, base.bias, float(high), float(high) - 0.15, base.lookahead
        )
        pk = replay_pk(dialogues, vectors, model, settings)
        if pk < best[0]:
            best = (pk, float(high), float(high) - 0.15)
    return best


def train(
    dialogues: Sequence[Dialogue],
    vectors: Sequence[np.ndarray],
    settings: Settings,
    *,
    lookahead: int,
    cs: Sequence[float] = (0.0005, 0.001, 0.002, 0.004),
    folds: int = 5,
    progress: Callable[[str], None] = lambda _: None,
    info: dict | None = None,
) -> TrainingResult:
    idx = np.arange(len(dialogues))
    rng = np.random.default_rng(0)
    rng.shuffle(idx)
    parts = np.array_split(idx, folds)
    cv: dict[float, float] = {}
    for c in cs:
        scores = []
        for k in range(folds):
            held = set(parts[k].tolist())
            tr = [int(i) for i in idx if i not in held]
            X, y = rows([dialogues[i] for i in tr], [vectors[i] for i in tr], lookahead)
            mean, scale, w, b = fit_logistic(X, y, c)
            base = LinearModel(mean, scale, w, b, 0.5, 0.35, lookahead)
            _, high, low = choose_thresholds([dialogues[i] for i in tr], [vectors[i] for i in tr], base, settings)
            held_model = LinearModel(mean, scale, w, b, high, low, lookahead)
            scores.append(
                replay_pk([dialogues[i] for i in parts[k]], [vectors[i] for i in parts[k]], held_model, settings)
            )
        cv[c] = float(np.mean(scores))
        progress(f"C={c}: cross-validated Pk {cv[c]:.3f}")
    c = min(cv, key=cv.__getitem__)
    X, y = rows(dialogues, vectors, lookahead)
    mean, scale, w, b = fit_logistic(X, y, c)
    base = LinearModel(mean, scale, w, b, 0.5, 0.35, lookahead)
    train_pk, high, low = choose_thresholds(dialogues, vectors, base, settings)
    meta = {
        "c": c,
        "cv_pk": cv,
        "train_pk": round(train_pk, 4),
        "rows": len(y),
        "positives": int(y.sum()),
        **(info or {}),
    }
    return TrainingResult(LinearModel(mean, scale, w, b, high, low, lookahead, meta), cv)
