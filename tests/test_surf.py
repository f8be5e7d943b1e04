"""SURF, SURF*, MultiSURF, MultiSURF* against skrebate 0.8.4 and a brute-force reference.

- equal to skrebate's own ``feature_importances_`` (1e-10) on real data:
  continuous binary (wdbc), continuous 3-class (wine), discrete binary and
  3-class (GAMETES SNPs, 0/1/2), mixed discrete and continuous (GAMETES), and on
  the corner cases (a one-sample class, duplicate rows, a constant feature);
- equal to ``tests/reference_surf.py`` (plain numpy loops) on every row and on a
  sample of anchors (the reference restricted to the same anchors);
- the same scores in-process, on threaded dask with several row blocks (both
  passes' symmetric and ordered tiles), and on a 2-process ``LocalCluster``
  (``tests/test_modes.py`` covers the estimators' every fitted attribute);
- inside ``TuRF``, equal to skrebate's ``TURF`` around skrebate's estimator.
"""

import functools
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import dmargin
from dmargin.datasets import load_dataset
from dmargin.engine import prepare_rows, threshold_statistic
from dmargin.surf import _terms as surf_terms
from tests import reference_surf as ref

skrebate = pytest.importorskip("skrebate")

VARIANTS = ["SURF", "SURFstar", "MultiSURF", "MultiSURFstar"]
GAMETES = str(Path(__file__).resolve().parent / "data" / "gametes") + "/"
ATOL = 1e-10


def _gametes(name, label, n, seed=0):
    path = GAMETES + name
    frame = pd.read_csv(path, sep="\t").sample(n, random_state=seed)
    return frame.drop(columns=label).to_numpy(np.float64), frame[label].to_numpy()


@functools.lru_cache
def dataset(name):
    """Small real data sets: ``(X, y)``, each fit by skrebate in well under a second."""
    if name == "wdbc":  # continuous, binary
        X, y = load_dataset("wdbc")
        return X.to_numpy()[::5], y.to_numpy()[::5]
    if name == "wine":  # continuous, 3 classes
        from sklearn.datasets import load_wine

        X, y = load_wine(return_X_y=True)
        return X[::2], y[::2]
    if name == "gametes":  # 20 SNPs coded 0/1/2, binary
        return _gametes("GAMETES_Epistasis_2-Way_20atts_0.4H_EDM-1_1.tsv.gz", "class", 120)
    if name == "gametes-3class":  # 20 SNPs, 3 classes
        return _gametes("3Class_Datasets_Loc_2_01.txt", "Class", 120)
    if name == "gametes-mixed":  # 11 SNPs and 9 continuous features, binary
        return _gametes(
            "GAMETES_Epistasis_2-Way_mixed_attribute_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz",
            "Class",
            120,
        )
    if name == "corners":  # a one-sample class, duplicate rows, a constant feature
        X, y = dataset("wine")
        X, y = X[:60].copy(), y[:60].copy()
        y[5] = 7  # a class of one sample
        X[10] = X[11]  # duplicate rows of one class
        X[20] = X[40]  # and of two classes
        X[:, 3] = 2.5  # a constant feature (skrebate: discrete, so the data are mixed)
        return X, y
    raise KeyError(name)


DATASETS = ["wdbc", "wine", "gametes", "gametes-3class", "gametes-mixed", "corners"]


@functools.lru_cache
def skrebate_scores(variant, name):
    X, y = dataset(name)
    return getattr(skrebate, variant)(n_jobs=1).fit(X.copy(), y).feature_importances_


# ---------------------------------------------------------------------------
# skrebate 0.8.4
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_equals_skrebate(variant, name):
    X, y = dataset(name)
    est = getattr(dmargin, variant)().fit(X, y)
    np.testing.assert_allclose(
        est.feature_importances_, skrebate_scores(variant, name), rtol=0, atol=ATOL
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_equals_skrebate_over_several_sub_tiles(variant):
    """All 569 wdbc rows: several of the kernels' sub-tiles, the diagonal ones included."""
    X, y = load_dataset("wdbc")
    X, y = X.to_numpy(), y.to_numpy()
    peer = getattr(skrebate, variant)(n_jobs=1).fit(X.copy(), y).feature_importances_
    ours = getattr(dmargin, variant)().fit(X, y).feature_importances_
    np.testing.assert_allclose(ours, peer, rtol=0, atol=ATOL)


@pytest.mark.parametrize(
    "name,n_discrete", [("wdbc", 0), ("gametes", 20), ("gametes-mixed", 11), ("corners", 1)]
)
def test_feature_kinds_are_skrebates(name, n_discrete):
    X, y = dataset(name)
    est = dmargin.MultiSURF().fit(X, y)
    want = np.array([np.unique(X[:, f]).size <= 10 for f in range(X.shape[1])])
    np.testing.assert_array_equal(est.discrete_features_, want)
    assert est.discrete_features_.sum() == n_discrete


def test_feature_kinds_count_the_whole_column_not_its_first_rows():
    """A column whose first rows repeat few values but whose later ones do not, one
    with more than 10 values from its first rows, one with exactly 10 and one with
    a missing value: each counted over all its rows, as ``np.unique``."""
    rng = np.random.default_rng(3)
    n = 600
    X = np.column_stack(
        [
            np.r_[np.zeros(300), rng.normal(size=300)],  # few values in its head only
            rng.normal(size=n),  # continuous from its first rows
            rng.integers(0, 10, n).astype(float),  # 10 values: discrete
            np.r_[rng.integers(0, 3, n - 1).astype(float), np.nan],  # 3 values, one NaN
            rng.normal(size=n),
        ]
    )
    y = rng.integers(0, 2, n)
    est = dmargin.MultiSURF().fit(X, y)
    np.testing.assert_array_equal(est.discrete_features_, [False, False, True, True, False])


def test_variants_differ_where_the_far_rows_count():
    """Each variant is its own rule: the four score vectors are pairwise different."""
    X, y = dataset("wdbc")
    scores = [getattr(dmargin, v)().fit(X, y).feature_importances_ for v in VARIANTS]
    for i in range(4):
        for j in range(i + 1, 4):
            assert np.abs(scores[i] - scores[j]).max() > 1e-3, (VARIANTS[i], VARIANTS[j])


def test_a_distance_at_the_threshold_is_neither_near_nor_far():
    """Binary SNP-like rows whose mean distance (2 of 4 features) is attained by 16
    pairs: those are neither neighbours nor far rows (strict < and >, as skrebate)."""
    X = np.array(
        [
            [0, 0, 0, 0],
            [1, 1, 0, 1],
            [1, 0, 1, 0],
            [1, 1, 1, 1],
            [0, 1, 1, 0],
            [0, 0, 1, 0],
            [0, 0, 0, 1],
            [1, 1, 0, 1],
        ],
        dtype=np.float64,
    )
    y = np.repeat([0, 1], 4)
    for variant in ("SURF", "SURFstar"):
        got = getattr(dmargin, variant)().fit(X, y).feature_importances_
        peer = getattr(skrebate, variant)(n_jobs=1).fit(X.copy(), y).feature_importances_
        np.testing.assert_allclose(got, peer, rtol=0, atol=ATOL)
        np.testing.assert_allclose(got, ref.surf_family(X, y, variant), rtol=0, atol=ATOL)


# ---------------------------------------------------------------------------
# The brute-force reference: every row, and a sample of anchors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["corners", "gametes-mixed"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_equals_the_reference(variant, name):
    X, y = dataset(name)
    X, y = X[:50], y[:50]
    est = getattr(dmargin, variant)().fit(X, y)
    np.testing.assert_allclose(
        est.feature_importances_, ref.surf_family(X, y, variant), rtol=0, atol=ATOL
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_sampled_anchors_equal_the_reference_over_them(variant):
    X, y = dataset("corners")
    est = getattr(dmargin, variant)(n_anchors=17, random_state=3).fit(X, y)
    assert est.anchor_indices_.shape == (17,)
    want = ref.surf_family(X, y, variant, anchors=est.anchor_indices_)
    np.testing.assert_allclose(est.feature_importances_, want, rtol=0, atol=ATOL)
    # The sample is not the whole: the scores differ from the exact fit.
    exact = getattr(dmargin, variant)().fit(X, y).feature_importances_
    assert np.abs(est.feature_importances_ - exact).max() > 1e-4


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_row_as_anchor_is_the_exact_fit_bit_for_bit(variant):
    X, y = dataset("wine")
    exact = getattr(dmargin, variant)().fit(X, y)
    full = getattr(dmargin, variant)(n_anchors=len(y)).fit(X, y)
    assert full.anchor_indices_ is None
    np.testing.assert_array_equal(full.feature_importances_, exact.feature_importances_)


def test_discrete_threshold_zero_makes_every_feature_continuous():
    X, y = dataset("gametes")
    est = dmargin.MultiSURF(discrete_threshold=0).fit(X, y)
    assert not est.discrete_features_.any()
    want = ref.surf_family(X[:, :], y, "MultiSURF", discrete_threshold=0)
    np.testing.assert_allclose(est.feature_importances_, want, rtol=0, atol=ATOL)
    assert np.abs(est.feature_importances_ - skrebate_scores("MultiSURF", "gametes")).max() > 1e-4


# ---------------------------------------------------------------------------
# Execution: row blocks, both grids, threaded dask
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("rows", [7, 31, 64])
@pytest.mark.parametrize("variant", VARIANTS)
def test_row_blocks_do_not_change_the_scores(variant, rows, threaded):
    X, y = dataset("gametes-mixed")
    local = getattr(dmargin, variant)().fit(X, y)
    blocks = getattr(dmargin, variant)().fit(
        da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)
    )
    np.testing.assert_allclose(
        blocks.feature_importances_, local.feature_importances_, rtol=0, atol=ATOL
    )
    np.testing.assert_array_equal(blocks.discrete_features_, local.discrete_features_)


@pytest.mark.parametrize("variant", VARIANTS)
def test_sampled_anchors_on_dask_equal_in_process(variant, threaded):
    X, y = dataset("wdbc")
    local = getattr(dmargin, variant)(n_anchors=40, random_state=0).fit(X, y)
    blocks = getattr(dmargin, variant)(n_anchors=40, random_state=0).fit(
        da.from_array(X, chunks=(29, X.shape[1])), da.from_array(y, chunks=29)
    )
    np.testing.assert_array_equal(blocks.anchor_indices_, local.anchor_indices_)
    np.testing.assert_allclose(
        blocks.feature_importances_, local.feature_importances_, rtol=0, atol=ATOL
    )


def test_in_process_blocks_on_threads_equal_one_block(monkeypatch):
    """In-process, large work is cut into blocks whose pairs run on threads: the
    symmetric grid's CROSS tiles give the scores of the single WITHIN tile."""
    from dmargin.engine import grid

    X, y = dataset("wdbc")
    data = dmargin.MultiSURFstar().fit(X, y)
    codes = np.unique(y, return_inverse=True)[1]
    Xs = (X - X.min(0)) / (X.max(0) - X.min(0))
    rows = prepare_rows(Xs, codes, 2)
    args = (surf_terms.multisurf_thresholds, surf_terms.surf_agg, (surf_terms.FAR_SIMILARITY,))
    one = threshold_statistic(rows, *args, far=True)
    monkeypatch.setattr(grid, "use_threads", lambda work, cost=1.0: True)
    monkeypatch.setattr(grid, "n_threads", lambda: 3)
    split = threshold_statistic(rows, *args, far=True)
    np.testing.assert_allclose(split, one, rtol=0, atol=1e-12)
    np.testing.assert_allclose(one / len(y), data.feature_importances_, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------
# Inside TuRF
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["SURF", "MultiSURFstar"])
def test_turf_around_surf_equals_skrebates_turf(variant):
    from skrebate.turf import TURF

    X, y = dataset("wdbc")
    ours = dmargin.TuRF(getattr(dmargin, variant)(), pct=0.5, keep=5).fit(X, y)
    peer = TURF(getattr(skrebate, variant)(n_jobs=1), pct=0.5, num_scores_to_return=5)
    peer.fit(X.copy(), y)
    np.testing.assert_allclose(
        ours.feature_importances_, peer.feature_importances_, rtol=0, atol=ATOL
    )


# ---------------------------------------------------------------------------
# The estimator contract and bad input
# ---------------------------------------------------------------------------


def test_selects_the_gametes_pair():
    """GAMETES' two predictive SNPs (the last two columns) are MultiSURF's top two."""
    X, y = _gametes("GAMETES_Epistasis_2-Way_20atts_0.4H_EDM-1_1.tsv.gz", "class", 800)
    est = dmargin.MultiSURF(n_features_to_select=2).fit(X, y)
    np.testing.assert_array_equal(np.flatnonzero(est.get_support()), [18, 19])
    assert est.transform(X).shape == (800, 2)


@pytest.mark.parametrize(
    "bad,match",
    [
        ({"discrete_threshold": -1}, "discrete_threshold"),
        ({"discrete_threshold": 2.5}, "discrete_threshold"),
        ({"scale": "standard"}, "scale"),
        ({"n_anchors": 0}, "n_anchors"),
    ],
)
def test_bad_parameters_are_named(bad, match):
    X, y = dataset("wine")
    with pytest.raises(ValueError, match=match):
        dmargin.MultiSURF(**bad).fit(X, y)


def test_infinite_values_are_refused_nan_is_missing():
    """NaN are missing values (tests/test_missing.py); infinity is named and refused."""
    X, y = dataset("wine")
    X = X.copy()
    X[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinite values in column 2"):
        dmargin.SURF().fit(X, y)


# The family at its defaults is checked with every estimator (tests/test_sklearn.py);
# here a configuration those do not reach: a sample of anchors.
@parametrize_with_checks([dmargin.MultiSURFstar(n_anchors=0.5, random_state=0)])
def test_sklearn_compatible_with_sampled_anchors(estimator, check):
    check(estimator)
