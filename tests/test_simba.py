"""Simba against its brute-force loop, its multi-start rule, modes and oddities."""

import dask.array as da
import numpy as np
import pytest

from dmargin.relief._simba import Simba, simba_run, simba_score

try:  # tests/ as a package
    from . import reference_boosting as ref
except ImportError:  # tests/ on sys.path
    import reference_boosting as ref


def _scaled(X):
    span = np.ptp(X, axis=0)
    return (X - X.min(0)) / np.where(span > 0, span, 1.0)


@pytest.mark.parametrize("sigmoid", [False, True])
def test_run_equals_brute_force(blobs_multiclass, sigmoid):
    X, y = blobs_multiclass
    X = _scaled(X)
    codes = np.unique(y, return_inverse=True)[1]
    order = np.random.default_rng(0).permutation(len(y))
    order = np.r_[order, order[::-1]]  # two passes
    w = simba_run(X, codes, order, sigmoid, 2.0)
    np.testing.assert_allclose(
        w, ref.brute_simba(X, codes, order, sigmoid, 2.0), rtol=0, atol=1e-10
    )


def test_fit_equals_brute_force_with_the_same_orders(blobs_binary):
    X, y = blobs_binary
    est = Simba(n_starts=3, n_passes=2, random_state=5).fit(X, y)
    Xs = _scaled(X)
    rng = np.random.default_rng(5)
    best = None
    for s in range(3):
        order = np.concatenate([rng.permutation(len(y)) for _ in range(2)])
        w = ref.brute_simba(Xs, y, order)
        w2 = w**2
        w2[np.ptp(Xs, axis=0) == 0] = 0.0  # constant feature: importance 0
        v = w2 / w2.max()
        # linear score: |sum_x (d_m - d_h)| under v, nearest hit/miss by brute force
        m = []
        for n in range(len(y)):
            d = np.sqrt(((Xs - Xs[n]) ** 2 * v**2).sum(1))
            hits = [i for i in range(len(y)) if i != n and y[i] == y[n]]
            miss = [i for i in range(len(y)) if y[i] != y[n]]
            m.append(d[miss].min() - d[hits].min())
        score = abs(sum(m))
        np.testing.assert_allclose(est.scores_[s], score, rtol=1e-12)
        if best is None or score > best[0]:
            best = (score, v, s)
    assert est.best_start_ == best[2]
    np.testing.assert_allclose(est.feature_importances_, best[1], rtol=0, atol=1e-10)


def test_informative_features_rank_first(blobs_binary):
    X, y = blobs_binary
    est = Simba(random_state=0).fit(X, y)
    assert set(np.argsort(-est.feature_importances_)[:2]) == {0, 1}
    assert est.feature_importances_.max() == 1.0
    assert est.feature_importances_[5] == 0.0  # the constant feature


def test_dask_input_is_gathered_once_and_equals_numpy(blobs_multiclass, threaded):
    X, y = blobs_multiclass
    local = Simba(n_starts=2, random_state=1).fit(X, y)
    remote = Simba(n_starts=2, random_state=1).fit(
        da.from_array(X, chunks=(20, X.shape[1])), da.from_array(y, chunks=20)
    )
    np.testing.assert_allclose(
        remote.feature_importances_, local.feature_importances_, rtol=0, atol=1e-12
    )


def test_one_sample_class_and_duplicates_are_skipped(blobs_multiclass):
    X, y = blobs_multiclass  # class "d" has one sample; one row is duplicated
    Xs = _scaled(X)
    codes = np.unique(y, return_inverse=True)[1]
    lone = int(np.flatnonzero(y == "d")[0])
    dup = [i for i in range(len(y)) for j in range(i) if np.array_equal(X[i], X[j])]
    assert dup
    # visiting only the lone sample or a duplicated row changes nothing
    for n in [lone, dup[0]]:
        np.testing.assert_array_equal(simba_run(Xs, codes, np.array([n]), False, 1.0), 1.0)
    assert np.isfinite(simba_score(Xs, codes, np.ones(X.shape[1]), True, 1.0))


def test_bad_input(blobs_binary):
    X, y = blobs_binary
    with pytest.raises(ValueError, match="single class"):
        Simba().fit(X, np.zeros(len(y)))
    Xn = X.copy()
    Xn[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity|NaN"):
        Simba().fit(Xn, y)
    with pytest.raises(ValueError, match="n_starts=0"):
        Simba(n_starts=0).fit(X, y)
