import numpy as np

from memq.evaluation.training import fit_logistic


def test_logistic_regression_separates_a_noisy_linear_rule():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 5))
    y = (X[:, 0] - 2 * X[:, 3] + 0.3 * rng.normal(size=600) > 0).astype(float)
    mean, scale, w, b = fit_logistic(X, y, c=1.0)
    p = 1 / (1 + np.exp(-(((X - mean) / scale) @ w + b)))
    assert ((p > 0.5) == (y == 1)).mean() > 0.95
    assert w[0] > 0 and w[3] < 0 and abs(w[1]) < abs(w[0]) / 5


def test_stronger_regularisation_shrinks_weights():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(float)
    assert np.abs(fit_logistic(X, y, c=0.001)[2]).sum() < np.abs(fit_logistic(X, y, c=10.0)[2]).sum()
