"""STIR p-values on MultiSURF (Le, Urbanowicz, Moore & McKinney 2019).

By construction: ``MultiSURF(pvalues=True)``'s t-statistics, p-values and
q-values equal the brute-force STIR of ``tests/test_stir.py`` (explicit pairs,
dense graph) with MultiSURF's neighbourhoods, for every row as an anchor and
for a sample; the score is MultiSURF's own; every execution path agrees (dask,
compact genotype rows).  The graph's sums over pairs and triangles come from a
sample of rows beyond :data:`dmargin.relief._stir.GRAPH_ROWS`: exact with every row,
a measured estimate beyond.  On null data the p-values are calibrated; on
GAMETES the two predictive SNPs get the smallest.
"""

import dask.array as da
import numpy as np
import pytest
from scipy import stats

import dmargin
from tests import reference as ref
from tests.test_stir import _gametes, assert_equals_reference, stir_reference


def _multisurf_find(X, members, i):
    """MultiSURF's neighbours of anchor ``i``: closer than the mean of its distances
    to every other row minus half their standard deviation (ddof 0)."""
    d = np.abs(X - X[i]).sum(axis=1)
    others = np.delete(d, i)
    return members[d[members] < others.mean() - others.std() / 2]


def multisurf_stir_reference(X, y, anchors=None):
    return stir_reference(ref.minmax_scale(X), y, None, anchors, find=_multisurf_find)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.random((130, 6))
    y = (rng.random(130) < 0.4).astype(int)  # unequal classes
    X[:, 1] += 0.4 * y  # informative
    X[:, 4] = 0.5  # constant: t = 0, p = 1
    X[20] = X[21]  # a duplicate row
    return X, y


@pytest.mark.parametrize("n_anchors", [None, 45])
def test_multisurf_stir_equals_the_brute_force_formulas(data, n_anchors, stir_everywhere):
    X, y = data
    # Every feature continuous (the constant one would be discrete, making mixed data).
    est = dmargin.MultiSURF(
        pvalues=True, discrete_threshold=0, n_anchors=n_anchors, random_state=2
    ).fit(X, y)
    anchors = None if n_anchors is None else est.anchor_indices_
    assert_equals_reference(est, multisurf_stir_reference(X, y, anchors), constant=4, informative=1)
    plain = dmargin.MultiSURF(discrete_threshold=0, n_anchors=n_anchors, random_state=2).fit(X, y)
    # STIR's score is MultiSURF's, unchanged by the p-values' extra sums.
    np.testing.assert_allclose(
        est.feature_importances_, plain.feature_importances_, rtol=1e-13, atol=1e-15
    )
    assert not any(hasattr(plain, name) for name in ("pvalues_", "t_statistics_", "qvalues_"))


@pytest.mark.parametrize("n_anchors", [None, 60])
def test_multisurf_stir_is_the_same_on_dask(data, threaded, n_anchors, stir_everywhere):
    X, y = data
    local = dmargin.MultiSURF(pvalues=True, n_anchors=n_anchors, random_state=1).fit(X, y)
    remote = dmargin.MultiSURF(pvalues=True, n_anchors=n_anchors, random_state=1).fit(
        da.from_array(X, chunks=35), y
    )
    for name in ("feature_importances_", "t_statistics_", "pvalues_", "qvalues_"):
        np.testing.assert_allclose(
            getattr(remote, name), getattr(local, name), rtol=1e-10, atol=1e-13, err_msg=name
        )


@pytest.mark.parametrize("n_anchors", [None, 50])
def test_multisurf_stir_on_compact_genotypes_equals_the_float_path(n_anchors, stir_everywhere):
    rng = np.random.default_rng(3)
    G = rng.integers(0, 3, (160, 40)).astype(np.uint8)
    y = rng.integers(0, 2, 160)
    G[:, 3] = np.where(rng.random(160) < 0.7, y * 2, G[:, 3])  # associated
    compact = dmargin.MultiSURF(pvalues=True, n_anchors=n_anchors, random_state=0).fit(G, y)
    floats = dmargin.MultiSURF(pvalues=True, n_anchors=n_anchors, random_state=0).fit(
        G.astype(float), y
    )
    assert compact.compact_dtype_ == np.uint8 and floats.compact_dtype_ is None
    for name in ("feature_importances_", "t_statistics_", "pvalues_"):
        np.testing.assert_allclose(
            getattr(compact, name), getattr(floats, name), rtol=1e-12, atol=1e-15, err_msg=name
        )
    assert compact.pvalues_.argmin() == 3


def test_sample_graph_sums_with_every_row_are_the_dense_graphs():
    from dmargin.engine import thresholds

    rng = np.random.default_rng(4)
    n = 50
    D = rng.random((n, n))
    D = D + D.T
    y = rng.integers(0, 2, n)
    finders = np.column_stack(
        [rng.random(n) * 1.2, 1 / rng.integers(1, 9, n), 1 / rng.integers(1, 9, n)]
    )
    finders[::7, 0] = -np.inf  # rows that are not anchors
    found = (D < finders[:, :1]) & ~np.eye(n, dtype=bool)
    same = y[:, None] == y
    W = np.where(found, np.where(same, -finders[:, 1:2], finders[:, 2:3]), 0.0)
    W = W + W.T
    C = W.sum(axis=1)
    i, j = np.triu_indices(n, 1)
    w = W[i, j]
    W2 = W @ W
    want = [
        (w * C[i] * C[j]).sum(),
        (w**2 * (C[i] + C[j])).sum(),
        np.trace(W2 @ W),
        (w**4).sum(),
        ((W**2) * W2).sum(),
        np.trace(W2 @ W2),
    ]
    np.testing.assert_allclose(
        thresholds.sample_graph_sums(D, y, finders, C, np.ones(n)), want, rtol=1e-12
    )


def test_graph_sample_takes_both_strata_and_weighs_them():
    from dmargin.relief._stir import graph_sample

    index, v = graph_sample(500, 10)
    np.testing.assert_array_equal(index, np.arange(500))
    np.testing.assert_array_equal(v, 1.0)
    anchors = np.sort(np.random.default_rng(0).choice(50_000, 3_000, replace=False))
    index, v = graph_sample(50_000, 10, anchors)
    is_anchor = np.isin(index, anchors)
    assert np.all(np.diff(index) > 0) and index.size == 1000 and is_anchor.sum() == 500
    np.testing.assert_allclose(v[is_anchor], 3_000 / 500)
    np.testing.assert_allclose(v[~is_anchor], 47_000 / 500)
    index, v = graph_sample(50_000, 10, anchors[:100])  # few anchors: all of them
    assert np.isin(anchors[:100], index).all() and index.size == 1000


@pytest.mark.parametrize("n_anchors", [None, 400])
def test_the_graph_sample_estimates_the_exact_graph(monkeypatch, n_anchors, stir_everywhere):
    # 1,200 rows: the sums over pairs and triangles from 300 of them against all.
    # Every row as an anchor: one graph sample, within 5 % of the exact sums.  With
    # 400 anchors the graph sample holds them, so it moves with the draw: over
    # random_state 0-19 and 100-105 the relative errors averaged 4.5 % (triangles)
    # and 5.7 % (closed walks), with a spread of about 4 % a draw and 15.6 % at most.
    # The bounds (a mean of six draws under 11 %, about three standard errors above
    # that average; each draw under 25 %) are checked on six other draws.
    from dmargin.relief import _stir

    rng = np.random.default_rng(5)
    X, y = rng.random((1200, 8)), rng.integers(0, 2, 1200)
    X[:, 0] += 0.3 * y
    seen = []
    from_sums = _stir.graph_from_sums
    monkeypatch.setattr(
        dmargin.surf._surf,
        "graph_from_sums",
        lambda *a: seen.append(from_sums(*a)[1]) or from_sums(*a),
    )
    errors = []
    for seed in [0] if n_anchors is None else range(200, 206):
        seen.clear()
        fits = []
        for rows in (2000, 300):
            monkeypatch.setattr(_stir, "GRAPH_ROWS", rows)
            est = dmargin.MultiSURF(pvalues=True, n_anchors=n_anchors, random_state=seed)
            fits.append(est.fit(X, y))
        exact, sampled = seen
        exact_terms = [0, 1, 2, 3, 8]  # from every row's pass
        np.testing.assert_allclose(sampled[exact_terms], exact[exact_terms], rtol=1e-12)
        for term in (6, 10):  # the triangles and the closed walks of four
            assert sampled[term] != exact[term]
        errors.append([abs(sampled[t] / exact[t] - 1) for t in (6, 10)])
        np.testing.assert_allclose(fits[1].t_statistics_, fits[0].t_statistics_, rtol=1e-12)
        p0, p1 = fits[0].pvalues_, fits[1].pvalues_
        np.testing.assert_allclose(p1[p0 > 1e-12], p0[p0 > 1e-12], rtol=0.02)
    errors = np.array(errors)
    if n_anchors is None:
        assert errors.max() < 0.05
    else:
        assert errors.mean(axis=0).max() < 0.11 and errors.max() < 0.25


def test_multisurf_stir_pvalues_are_calibrated_on_null_data(stir_everywhere):
    # (The law itself: the fit's check of signal, which declines a draw with a
    # discovery, is off.)
    # Uniform rows, 75 of each class at random: 40 draws of 150 rows x 30 features.
    rng = np.random.default_rng(9)
    pvalues, discoveries = [], 0
    for _ in range(40):
        X, y = rng.random((150, 30)), rng.permutation(np.repeat([0, 1], 75))
        est = dmargin.MultiSURF(pvalues=True).fit(X, y)
        pvalues.append(est.pvalues_)
        discoveries += bool((est.qvalues_ < 0.05).any())
    p = np.concatenate(pvalues)
    assert stats.kstest(p, "uniform").pvalue > 0.01
    assert 0.03 < (p < 0.05).mean() < 0.07
    assert discoveries <= 5  # expected 2 of 40 at q = 0.05


def test_gametes_predictive_snps_get_the_smallest_multisurf_pvalues():
    # Genotypes are outside STIR's calibrated domain: a warning, and permutation
    # p-values on the compact path (B = 299: smallest p 1 / 300, q 0.033).
    X, y = _gametes()
    with pytest.warns(dmargin.UncalibratedPValuesWarning, match="distinct values"):
        assert not hasattr(dmargin.MultiSURF(pvalues=True).fit(X, y), "pvalues_")
    est = dmargin.MultiSURF(n_permutations=299, random_state=0).fit(X, y)
    assert est.compact_dtype_ == np.uint8  # genotypes 0/1/2: the compact path
    assert set(X.columns[np.argsort(est.pvalues_, kind="stable")[:2]]) == {"P1", "P2"}
    assert np.all(est.qvalues_[X.columns.isin(["P1", "P2"])] < 0.05)
    assert np.all(est.qvalues_[~X.columns.isin(["P1", "P2"])] > 0.05)


def test_gametes_predictive_snps_get_the_smallest_multisurf_stir_pvalues(stir_everywhere):
    X, y = _gametes()
    est = dmargin.MultiSURF(pvalues=True).fit(X, y)
    assert set(X.columns[np.argsort(est.pvalues_)[:2]]) == {"P1", "P2"}
    assert np.all(est.qvalues_[X.columns.isin(["P1", "P2"])] < 0.05)


@pytest.mark.parametrize("n_anchors", [None, 40])
def test_multisurf_permutation_pvalues_equal_refits_on_the_permuted_labels(n_anchors):
    # (1 + #{W_b >= W}) / (B + 1), W_b a MultiSURF fit on the library's permuted
    # labels (and, with a sample, the anchors drawn for them); any number of classes.
    from dmargin.engine import permute

    rng = np.random.default_rng(6)
    X = rng.random((90, 5))
    y = np.repeat([0, 1, 2], 30)
    X[:, 1] += 0.4 * y
    est = dmargin.MultiSURF(n_permutations=9, n_anchors=n_anchors, random_state=5).fit(X, y)
    w = dmargin.MultiSURF(n_anchors=n_anchors, random_state=5).fit(X, y).feature_importances_
    np.testing.assert_array_equal(est.feature_importances_, w)
    stream = np.random.default_rng(5).spawn(1)[0]
    reached = np.zeros(5)
    for _ in range(9):
        permuted, _ = permute.permuted_codes(y, np.bincount(y), stream)
        refit = dmargin.MultiSURF(n_anchors=n_anchors, random_state=5).fit(X, permuted)
        reached += refit.feature_importances_ >= w
    np.testing.assert_array_equal(est.pvalues_, (1 + reached) / 10)
    assert est.pvalues_[1] == 0.1 and not hasattr(est, "t_statistics_")


def test_multisurf_permutation_pvalues_are_the_same_on_dask(data, threaded):
    X, y = data
    local = dmargin.MultiSURF(n_permutations=9, random_state=1).fit(X, y)
    remote = dmargin.MultiSURF(n_permutations=9, random_state=1).fit(da.from_array(X, chunks=40), y)
    np.testing.assert_array_equal(remote.pvalues_, local.pvalues_)


def test_multisurf_pvalues_need_two_classes_and_no_missing_value(data):
    X, y = data
    with pytest.raises(ValueError, match="y has 3 classes.*MultiSURF\\(n_permutations=B\\)"):
        dmargin.MultiSURF(pvalues=True).fit(X, np.arange(130) % 3)
    with pytest.raises(ValueError, match="continuous target.*pvalues=False"):
        dmargin.MultiSURF(pvalues=True).fit(X, X[:, 0] + 0.5)
    Xm = X.copy()
    Xm[3, 2] = np.nan
    with pytest.raises(ValueError, match="missing values \\(feature 2 has 1\\).*impute"):
        dmargin.MultiSURF(pvalues=True).fit(Xm, y)
    with pytest.raises(ValueError, match="pvalues"):
        dmargin.MultiSURF(pvalues="yes").fit(X, y)
    # Without p-values all three fit as before.
    assert not hasattr(dmargin.MultiSURF().fit(Xm, y), "pvalues_")
