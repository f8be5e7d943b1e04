"""The papers' checkable claims, one test per claim.

Y. Sun, "Iterative RELIEF for Feature Weighting: Algorithms, Theories, and
Applications", IEEE TPAMI 29(6), 2007.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import dmargin


@pytest.fixture(scope="module")
def continuous_binary():
    """Continuous data without distance ties: 2 informative of 5 features."""
    rng = np.random.default_rng(42)
    y = np.repeat([0, 1], 40)
    X = rng.normal(size=(80, 5))
    X[:, 0] += 1.8 * y
    X[:, 3] -= 1.2 * y
    return X, y


def _relief_z(X, y):
    """Relief's z by brute force on [0, 1]-scaled data (eq. 6's vector)."""
    Xs = (X - X.min(0)) / (X.max(0) - X.min(0))
    z = np.zeros(X.shape[1])
    for n in range(len(y)):
        d = np.abs(Xs - Xs[n]).sum(axis=1)
        d[n] = np.inf
        hit = np.argmin(np.where(y == y[n], d, np.inf))
        miss = np.argmin(np.where(y != y[n], d, np.inf))
        z += np.abs(Xs[n] - Xs[miss]) - np.abs(Xs[n] - Xs[hit])
    return z


def test_relief_closed_form_maximises_average_margin(continuous_binary):
    """Eq. (3)-(6): w* = z+/||z+|| maximises w.z over {||w|| = 1, w >= 0}."""
    X, y = continuous_binary
    est = dmargin.Relief().fit(X, y)
    z = _relief_z(X, y)
    np.testing.assert_allclose(est.margin_vector_, z, rtol=0, atol=1e-10)
    w = est.feature_importances_
    assert np.isclose(np.linalg.norm(w), 1.0) and np.all(w >= 0)
    rng = np.random.default_rng(0)
    others = np.abs(rng.normal(size=(5000, z.size)))
    others /= np.linalg.norm(others, axis=1, keepdims=True)
    assert w @ z >= (others @ z).max()


def test_irelief_small_sigma_one_step_is_relief(continuous_binary):
    """Sec. 3.2: as sigma -> 0 (no outlier step), one I-RELIEF step from uniform
    weights uses the hard nearest hit and miss: it is Relief."""
    X, y = continuous_binary
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one = dmargin.IRelief(sigma=1e-7, outliers=False, max_iter=1).fit(X, y)
    relief = dmargin.Relief().fit(X, y)
    np.testing.assert_allclose(
        one.feature_importances_, relief.feature_importances_, rtol=0, atol=1e-10
    )


def test_irelief_large_sigma_converges_in_one_step(continuous_binary):
    """Sec. 3.2: for sigma -> inf, nu (eq. 12) no longer depends on w: the second
    iteration does not move."""
    X, y = continuous_binary
    est = dmargin.IRelief(sigma=1e9, tol=1e-9).fit(X, y)
    assert est.n_iter_ == 2
    assert est.history_[0] > 0.1 and est.history_[1] < 1e-9


def test_irelief_unique_fixed_point_from_any_start(continuous_binary):
    """Theorem 2: with sigma large enough, the solution does not depend on w(0)."""
    X, y = continuous_binary
    ref = dmargin.IRelief(tol=1e-10, max_iter=500).fit(X, y).feature_importances_
    for seed in range(3):
        w = dmargin.IRelief(init="random", random_state=seed, tol=1e-10, max_iter=500)
        np.testing.assert_allclose(w.fit(X, y).feature_importances_, ref, atol=1e-8)
    start = np.zeros(X.shape[1])
    start[2] = 1.0  # all weight on an irrelevant feature
    w = dmargin.IRelief(init=start, tol=1e-10, max_iter=500).fit(X, y)
    np.testing.assert_allclose(w.feature_importances_, ref, atol=1e-8)


def test_irelief_converges_geometrically(continuous_binary):
    """Theorem 2 / eq. (17): a contraction -- successive changes shrink."""
    X, y = continuous_binary
    h = dmargin.IRelief(tol=1e-12, max_iter=200).fit(X, y).history_
    assert h[-1] < 1e-12
    assert np.all(h[2:] <= h[1:-1] * 1.0001)


def test_online_irelief_approaches_batch_as_passes_grow(continuous_binary):
    """Theorem 4: over repeated fixed-order passes with eta = 1/(a t + 1), a <= 1,
    online I-RELIEF converges to the batch solution."""
    X, y = continuous_binary
    batch = dmargin.IRelief(tol=1e-12, max_iter=500).fit(X, y).feature_importances_
    gaps = []
    for passes in (1, 5, 25):
        est = dmargin.OnlineIRelief(a=1.0, n_passes=passes, tol=0, shuffle=False).fit(X, y)
        gaps.append(np.linalg.norm(est.feature_importances_ - batch))
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 0.2 * gaps[0] and gaps[2] < 5e-4


@pytest.mark.parametrize("multiclass", ["margin", "relieff"])
def test_multiclass_irelief_finds_the_informative_features(multiclass):
    """Sec. 4: I-RELIEF-1 and -2 on 4 classes rank the 3 informative features first,
    also with 30 noise features."""
    rng = np.random.default_rng(7)
    y = np.repeat(np.arange(4), 40)
    centres = np.array([[0, 0, 0], [3, 0, 0], [0, 3, 0], [0, 0, 3]], dtype=float)
    X = np.column_stack([centres[y] + rng.normal(size=(160, 3)), rng.normal(size=(160, 30))])
    w = dmargin.IRelief(multiclass=multiclass).fit(X, y).feature_importances_
    assert set(np.argsort(-w)[:3]) == {0, 1, 2}
    assert w[:3].min() > 3 * w[3:].max()


def test_multiclass_modes_coincide_for_two_classes(continuous_binary):
    """Sec. 4: with two classes the multiclass margins are the binary one."""
    X, y = continuous_binary
    a = dmargin.IRelief(multiclass="margin").fit(X, y).feature_importances_
    b = dmargin.IRelief(multiclass="relieff").fit(X, y).feature_importances_
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_outlier_step_resists_label_noise():
    """Sec. 3.1 / Table 2: with 15% mislabelled samples, the outlier probabilities
    keep the informative features ahead by a wider margin."""
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 100)
    X = rng.normal(size=(200, 12))
    X[:, :2] += 2.0 * y[:, None]
    noisy = y.copy()
    flip = rng.choice(200, 30, replace=False)
    noisy[flip] = 1 - noisy[flip]
    with_o = dmargin.IRelief(outliers=True).fit(X, noisy).feature_importances_
    without = dmargin.IRelief(outliers=False).fit(X, noisy).feature_importances_
    ratio = lambda w: w[:2].min() / max(w[2:].max(), 1e-12)  # noqa: E731
    assert set(np.argsort(-with_o)[:2]) == {0, 1}
    assert ratio(with_o) >= ratio(without)
