"""Fitting the learned boundary scorer on labelled dialogues: teacher-forced feature
rows, an L2-regularised logistic regression by Newton's method on standardised
features, and thresholds chosen by replaying the training dialogues through the real
segmenter. The regularisation strength is picked by k-fold cross-validation on the
training sets only.

Training may span several labelled sets (domains): every domain counts the same when
thresholds and the regularisation are chosen (the mean of the per-domain Pk), however
many dialogues it has, and each cross-validation fold holds out a part of every
domain. ``stitch`` adds self-supervised multi-topic streams made by concatenating
unrelated dialogues (the CSM / DialSTART recipe), whose junctions are boundaries.

``model="trees"`` fits a gradient-boosted tree ensemble instead (scikit-learn's
HistGradientBoostingClassifier, stored as ``TreeModel``; with the ``style`` features it
can behave differently per kind of conversation); its capacity is fixed
(``TREE_PARAMS``), so there is no regularisation to choose."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from memq.shared.settings import Settings
from memq.worker.segmentation.detectors.blend_model import BlendModel
from memq.worker.segmentation.detectors.boundary_features import feature_vector
from memq.worker.segmentation.detectors.general_features import GENERAL_FEATURES, SimilarityStats, general_features
from memq.worker.segmentation.detectors.learned import BoundaryModel, LearnedDetector, LinearModel
from memq.worker.segmentation.detectors.style_features import length_value, style_features
from memq.worker.segmentation.detectors.tree_model import Tree, TreeModel
from memq_lab.evaluation.datasets import Dialogue
from memq_lab.evaluation.metrics import aggregate, score_dialogue
from memq_lab.evaluation.segmenter_replay import as_messages, segment_dialogue

Domain = tuple[Sequence[Dialogue], Sequence[np.ndarray]]

# The tree model's capacity, chosen by the cross-domain validation in docs/evaluation.md.
TREE_PARAMS = {"max_depth": 5, "max_iter": 300, "learning_rate": 0.05, "min_samples_leaf": 50}
BLEND_WEIGHT = 0.5  # of the trees' logit in ``model="blend"`` (the linear general model gets the rest)


def rows(
    dialogues: Sequence[Dialogue], vectors: Sequence[np.ndarray], lookahead: int, features: str = "embedding"
) -> tuple[np.ndarray, np.ndarray]:
    """One row per candidate boundary (utterance 1..n-1), teacher-forced: the event size is
    the count since the previous gold boundary, the similarity statistics run over the
    whole dialogue as the detector keeps them."""
    X, y = [], []
    for d, E in zip(dialogues, vectors):
        roles = [m.role for m in as_messages(d)]
        stats, start = SimilarityStats(), 0
        lengths = SimilarityStats.from_list(SimilarityStats().update(length_value(d.utterances[0][1])).to_list())
        for i in range(1, len(d)):
            recent, ahead = list(E[max(0, i - 8) : i]), list(E[i + 1 : i + 1 + lookahead])
            new_text, prev_text = d.utterances[i][1], d.utterances[i - 1][1]
            if features in ("general", "style"):
                x = general_features(
                    recent,
                    E[i],
                    ahead,
                    new_text,
                    prev_text,
                    right=lookahead,
                    stats=stats,
                    user_new=roles[i] == "user",
                    event_size=i - start,
                )
                with_new = lengths.update(length_value(new_text))
                X.append(np.concatenate([x, style_features(stats, with_new)]) if features == "style" else x)
                # what the detector keeps in the event state between messages (rounded)
                stats = SimilarityStats.from_list(stats.update(float(E[i - 1] @ E[i])).to_list())
                lengths = SimilarityStats.from_list(with_new.to_list())
            else:
                X.append(feature_vector(recent, E[i], ahead, new_text, prev_text, right=lookahead))
            y.append(1.0 if i in d.boundaries else 0.0)
            if i in d.boundaries:
                start = i
    return np.array(X, dtype=np.float64), np.array(y, dtype=np.float64)


def stitch(
    dialogues: Sequence[Dialogue], vectors: Sequence[np.ndarray], count: int, *, parts: int = 3, seed: int = 0
) -> tuple[list[Dialogue], list[np.ndarray]]:
    """``count`` streams, each ``parts`` randomly drawn different dialogues one after another:
    each junction is a boundary, and each dialogue keeps its own gold boundaries."""
    rng = np.random.default_rng(seed)
    out_d: list[Dialogue] = []
    out_v: list[np.ndarray] = []
    for s in range(count):
        chosen = rng.choice(len(dialogues), size=min(parts, len(dialogues)), replace=False)
        utterances: list[tuple[str, str]] = []
        boundaries: set[int] = set()
        for j in chosen:
            d = dialogues[int(j)]
            if utterances:
                boundaries.add(len(utterances))
            boundaries.update(len(utterances) + b for b in d.boundaries)
            utterances.extend(d.utterances)
        out_d.append(Dialogue("stitched", f"stitched-{s}", utterances, frozenset(boundaries)))
        out_v.append(np.concatenate([vectors[int(j)] for j in chosen]))
    return out_d, out_v


def fit_logistic(
    X: np.ndarray, y: np.ndarray, c: float, iterations: int = 25, sample_weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Minimise sum(weight x log-loss) + ||w||^2 / (2c) on standardised X. Returns mean, scale, w, b."""
    sw = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale < 1e-6] = 1.0

    Z = np.hstack([(X - mean) / scale, np.ones((len(X), 1))])
    w = np.zeros(Z.shape[1])
    reg = np.full(Z.shape[1], 1.0 / c)
    reg[-1] = 0.0  # no penalty on the bias
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(Z @ w)))
        grad = Z.T @ (sw * (p - y)) + reg * w
        hess = (Z * (sw * p * (1 - p))[:, None]).T @ Z + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-6:
            break
    return mean, scale, w[:-1], float(w[-1])


def fit_trees(
    X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray, params: dict | None = None
) -> tuple[tuple[Tree, ...], float]:
    """A HistGradientBoostingClassifier of ``params`` (default ``TREE_PARAMS``), as numpy trees and a baseline logit."""
    from sklearn.ensemble import HistGradientBoostingClassifier  # training only: scoring needs numpy alone

    est = HistGradientBoostingClassifier(random_state=0, **(params or TREE_PARAMS)).fit(
        X, y, sample_weight=sample_weight
    )
    trees = []
    for (predictor,) in est._predictors:
        nodes = predictor.nodes
        leaf = nodes["is_leaf"].astype(bool)
        trees.append(
            Tree(
                np.where(leaf, -1, nodes["feature_idx"]).astype(np.int64),
                nodes["num_threshold"].astype(np.float64),
                nodes["left"].astype(np.int64),
                nodes["right"].astype(np.int64),
                np.where(leaf, nodes["value"], 0.0),
            )
        )
    return tuple(trees), float(np.ravel(est._baseline_prediction)[0])


def replay_pk(dialogues, vectors, model: BoundaryModel, settings: Settings) -> float:
    detector_scores = []
    for d, E in zip(dialogues, vectors):
        hyp = segment_dialogue(d, E, LearnedDetector(model), settings, model.lookahead)
        detector_scores.append(score_dialogue(len(d), set(d.boundaries), hyp))
    return aggregate(detector_scores)["pk"]


@dataclass(frozen=True)
class TrainingResult:
    model: BoundaryModel
    cv: dict[float, float]  # c -> mean cross-validated Pk


def with_thresholds(base: BoundaryModel, high: float, low: float, info: dict | None = None) -> BoundaryModel:
    return replace(base, high=high, low=low, info=info or {})


def choose_thresholds(domains: Sequence[Domain], base: BoundaryModel, settings: Settings) -> tuple[float, float, float]:
    """The ``high`` (``low`` = high - 0.15) with the lowest mean per-domain replayed Pk."""
    best = (1.0, 0.5, 0.3)
    for high in np.arange(0.2, 0.76, 0.05):
        model = with_thresholds(base, float(high), float(high) - 0.15)
        pk = float(np.mean([replay_pk(d, v, model, settings) for d, v in domains]))
        if pk < best[0]:
            best = (pk, float(high), float(high) - 0.15)
    return best


def _fit(
    domains: Sequence[Domain], lookahead: int, features: str, c: float, stitched: int = 0, model: str = "logistic"
) -> BoundaryModel:
    """Each domain (with ``stitched`` streams made from its own dialogues) weighs the same
    in the fit, however many rows it has."""
    parts = []
    for k, (d, v) in enumerate(domains):
        extra_d, extra_v = stitch(d, v, stitched, seed=k) if stitched else ([], [])
        parts.append(rows([*d, *extra_d], [*v, *extra_v], lookahead, features))
    X = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    weight = np.concatenate([np.full(len(p[1]), len(y) / (len(parts) * len(p[1]))) for p in parts])
    info = {"rows": len(y), "positives": int(y.sum())}
    if model in ("trees", "blend"):
        trees, baseline = fit_trees(X, y, weight)
        tree_model = TreeModel(trees, baseline, 0.5, 0.35, lookahead, {"trees": TREE_PARAMS}, features)
        if model == "trees":
            return replace(tree_model, info={**info, **tree_model.info})
        k = len(GENERAL_FEATURES)
        mean, scale, w, b = fit_logistic(X[:, :k], y, c, sample_weight=weight)
        linear = LinearModel(mean, scale, w, b, 0.5, 0.35, lookahead, {"c": c}, "general")
        return BlendModel(linear, tree_model, k, BLEND_WEIGHT, 0.5, 0.35, lookahead, info, features)
    mean, scale, w, b = fit_logistic(X, y, c, sample_weight=weight)
    return LinearModel(mean, scale, w, b, 0.5, 0.35, lookahead, info, features)


def _split(domain: Domain, held: set[int]) -> tuple[Domain, Domain]:
    d, v = domain
    keep = [i for i in range(len(d)) if i not in held]
    out = sorted(held)
    return ([d[i] for i in keep], [v[i] for i in keep]), ([d[i] for i in out], [v[i] for i in out])


def train(
    domains: Sequence[Domain],
    settings: Settings,
    *,
    lookahead: int,
    features: str = "embedding",
    cs: Sequence[float] = (0.0005, 0.001, 0.002, 0.004),
    folds: int = 5,
    stitched: int = 0,
    progress: Callable[[str], None] = lambda _: None,
    info: dict | None = None,
    model: str = "logistic",
) -> TrainingResult:
    """Fit on every domain (each with ``stitched`` streams of its training dialogues, for
    fitting only; thresholds are chosen on the real dialogues); C by ``folds``-fold
    cross-validation holding out a part of every domain."""
    splits = []
    for d, _ in domains:
        idx = np.arange(len(d))
        np.random.default_rng(0).shuffle(idx)
        splits.append(np.array_split(idx, folds))
    cv: dict[float, float] = {}
    for c in cs if len(cs) > 1 else ():  # one C given: nothing to choose
        scores = []
        for k in range(folds):
            pairs = [_split(dom, set(parts[k].tolist())) for dom, parts in zip(domains, splits)]
            base = _fit([p[0] for p in pairs], lookahead, features, c, stitched, model)
            _, high, low = choose_thresholds([p[0] for p in pairs], base, settings)
            held_model = with_thresholds(base, high, low)
            scores.append(float(np.mean([replay_pk(d, v, held_model, settings) for d, v in (p[1] for p in pairs)])))
        cv[c] = float(np.mean(scores))
        progress(f"C={c}: cross-validated Pk {cv[c]:.3f}")
    c = min(cv, key=cv.__getitem__) if cv else cs[0]
    base = _fit(domains, lookahead, features, c, stitched, model)
    train_pk, high, low = choose_thresholds(domains, base, settings)
    fitted = {"c": c, "cv_pk": cv} if model != "trees" else {}
    meta = {**fitted, "train_pk": round(train_pk, 4), **base.info, **(info or {})}
    return TrainingResult(with_thresholds(base, high, low, meta), cv)
