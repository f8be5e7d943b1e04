"""SURF, SURF*, MultiSURF, MultiSURF* on a continuous target (skrebate 0.8.4's endpoint).

- equal to skrebate's own ``feature_importances_`` (1e-10) on GAMETES'
  continuous-endpoint file (0/1/2 SNPs: discrete), on GAMETES' mixed
  (discrete and continuous) and missing-value features with that target, and
  on a synthetic regression set of continuous features; every set has more
  rows than a kernel sub-tile (128), so the diagonal and off-diagonal
  sub-tiles both score;
- equal to ``tests/reference_surf.py`` (plain numpy loops, hits ``|y_a - y_j| <
  std(y, ddof=1)``) on every row and on a sample of anchors (the same
  ``anchor_indices_``);
- the same scores in-process, on threaded dask with several row blocks
  (symmetric and ordered tiles), and in-process on threads over several
  blocks; ``tests/test_modes.py`` adds the 2-process ``LocalCluster``;
- the fitted attributes say which target it was (``target_type_``,
  ``hit_bound_`` or ``classes_``); integer genotypes with a continuous target
  take the float64 path.
"""

import functools
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest

import dmargin
from dmargin._start import start_fit
from dmargin.engine import feature_kinds, threshold_statistic
from dmargin.surf import _terms as surf_terms
from tests import reference_surf as ref
from tests.test_missing import skrebate_scores as skrebate_scores_missing

skrebate = pytest.importorskip("skrebate")

VARIANTS = ["SURF", "SURFstar", "MultiSURF", "MultiSURFstar"]
GAMETES = str(Path(__file__).resolve().parent / "data" / "gametes" / "GAMETES_Epistasis_2-Way_")
CONTINUOUS = GAMETES + "continuous_endpoint_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz"
MIXED = GAMETES + "mixed_attribute_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz"
MISSING = GAMETES + "missing_values_0.1_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz"
ATOL = 1e-10


def _features(path, rows):
    return pd.read_csv(path, sep="\t").drop(columns="Class").to_numpy(np.float64)[rows]


@functools.lru_cache
def dataset(name):
    """``(X, y)`` with a continuous ``y``; each fit by skrebate in about a second."""
    rows = np.sort(np.random.default_rng(0).choice(1600, 300, replace=False))
    y = pd.read_csv(CONTINUOUS, sep="\t")["Class"].to_numpy()[rows]
    if name == "gametes":  # 20 SNPs coded 0/1/2: every feature discrete
        return _features(CONTINUOUS, rows), y
    if name == "gametes-mixed":  # 11 SNPs, 9 continuous features
        return _features(MIXED, rows), y
    if name == "gametes-missing":  # 20 SNPs, 10 % of the cells NaN
        return _features(MISSING, rows), y
    if name == "regression":  # continuous features, a target with outliers and ties
        rng = np.random.default_rng(1)
        X = rng.random((200, 6))
        y = 3 * X[:, 0] - 2 * X[:, 1] * X[:, 2] + 0.3 * rng.standard_t(1.5, 200)
        y[:20] = y[20:40]  # tied targets: differences of exactly 0
        X[50] = X[51]  # duplicate rows
        return X, y
    raise KeyError(name)


@functools.lru_cache
def skrebate_scores(variant, name):
    X, y = dataset(name)
    return getattr(skrebate, variant)(n_jobs=1).fit(X.copy(), y).feature_importances_


# ---------------------------------------------------------------------------
# skrebate 0.8.4
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gametes", "gametes-mixed", "regression"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_equals_skrebate(variant, name):
    X, y = dataset(name)
    est = getattr(dmargin, variant)().fit(X, y)
    assert est.target_type_ == "continuous"
    np.testing.assert_allclose(
        est.feature_importances_, skrebate_scores(variant, name), rtol=0, atol=ATOL
    )
    want = {"gametes": 20, "gametes-mixed": 11, "regression": 0}[name]
    assert est.discrete_features_.sum() == want


@pytest.mark.parametrize("variant", VARIANTS)
def test_equals_skrebate_with_missing_values(variant, monkeypatch):
    """skrebate run as in ``tests/test_missing.py``: SURF's and SURF*'s mean threshold
    over the symmetric distance matrix (its own leaves the upper triangle 0)."""
    X, y = dataset("gametes-missing")
    assert np.isnan(X).any()
    est = getattr(dmargin, variant)().fit(X, y)
    np.testing.assert_allclose(
        est.feature_importances_,
        skrebate_scores_missing(variant, X, y, monkeypatch),
        rtol=0,
        atol=ATOL,
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_whole_gametes_file_equals_skrebate(variant):
    """All 1,600 rows: 13 sub-tiles a side; the two epistatic SNPs rank first."""
    data = pd.read_csv(CONTINUOUS, sep="\t")
    X, y = data.drop(columns="Class").to_numpy(np.float64), data["Class"].to_numpy()
    est = getattr(dmargin, variant)().fit(X, y)
    peer = getattr(skrebate, variant)(n_jobs=1).fit(X.copy(), y).feature_importances_
    np.testing.assert_allclose(est.feature_importances_, peer, rtol=0, atol=ATOL)
    assert set(np.argsort(-est.feature_importances_)[:2]) == {18, 19}


# ---------------------------------------------------------------------------
# The brute-force reference: every row, and a sample of anchors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_anchors", [None, 23])
@pytest.mark.parametrize("name", ["gametes-mixed", "regression"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_equals_the_reference(variant, name, n_anchors):
    """Every row (of the first 60: the reference is slow), or a sample of anchors
    among all rows with the reference restricted to the same anchors."""
    X, y = dataset(name)
    if n_anchors is None:
        X, y = X[:60], y[:60]
    est = getattr(dmargin, variant)(n_anchors=n_anchors, random_state=3).fit(X, y)
    bound = np.std(y, ddof=1)
    assert est.hit_bound_ == bound
    want = ref.surf_family(X, y, variant, anchors=est.anchor_indices_, bound=bound)
    np.testing.assert_allclose(est.feature_importances_, want, rtol=0, atol=ATOL)
    if n_anchors:  # the sample is not the whole: the scores differ from the exact fit
        assert est.anchor_indices_.shape == (n_anchors,)
        exact = getattr(dmargin, variant)().fit(X, y).feature_importances_
        assert np.abs(est.feature_importances_ - exact).max() > 1e-4


def test_the_hit_bound_decides_hit_and_miss():
    """Another bound gives other scores: the target's split is what is scored."""
    X, y = dataset("regression")
    rows, target = start_fit(dmargin.MultiSURF(), X, y)[1:3]
    kinds = feature_kinds(rows, 10)
    args = (surf_terms.multisurf_thresholds, surf_terms.surf_agg, (surf_terms.FAR_NONE, False))
    bound = np.std(y, ddof=1)
    ours = threshold_statistic(rows, *args, kinds=kinds, target=target, bound=bound) / len(y)
    np.testing.assert_allclose(ours, skrebate_scores("MultiSURF", "regression"), rtol=0, atol=ATOL)
    other = threshold_statistic(rows, *args, kinds=kinds, target=target, bound=bound / 2) / len(y)
    assert np.abs(other - ours).max() > 1e-3
    np.testing.assert_allclose(
        other, ref.surf_family(X, y, "MultiSURF", bound=bound / 2), rtol=0, atol=ATOL
    )


# ---------------------------------------------------------------------------
# Execution: row blocks, both grids, threaded dask, in-process threads
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_anchors", [None, 40])
@pytest.mark.parametrize("rows", [7, 64])
@pytest.mark.parametrize("variant", VARIANTS)
def test_row_blocks_do_not_change_the_scores(variant, rows, n_anchors, threaded):
    X, y = dataset("gametes-mixed")
    make = functools.partial(getattr(dmargin, variant), n_anchors=n_anchors, random_state=0)
    local = make().fit(X, y)
    blocks = make().fit(da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows))
    assert blocks.target_type_ == "continuous" and blocks.hit_bound_ == local.hit_bound_
    np.testing.assert_allclose(
        blocks.feature_importances_, local.feature_importances_, rtol=0, atol=ATOL
    )
    if n_anchors:
        np.testing.assert_array_equal(blocks.anchor_indices_, local.anchor_indices_)


def test_in_process_blocks_on_threads_equal_one_block(monkeypatch):
    """Large work in-process is cut into blocks whose pairs run on threads: the
    CROSS tiles read each block's targets as the single WITHIN tile does."""
    from dmargin.engine import grid

    X, y = dataset("regression")
    rows, target = start_fit(dmargin.MultiSURFstar(), X, y)[1:3]
    args = (surf_terms.multisurf_thresholds, surf_terms.surf_agg, (surf_terms.FAR_SIMILARITY,))
    kw = {"far": True, "target": target, "bound": np.std(y, ddof=1)}
    one = threshold_statistic(rows, *args, **kw)
    monkeypatch.setattr(grid, "use_threads", lambda work, cost=1.0: True)
    monkeypatch.setattr(grid, "n_threads", lambda: 3)
    split = threshold_statistic(rows, *args, **kw)
    np.testing.assert_allclose(split, one, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        one / len(y), skrebate_scores("MultiSURFstar", "regression"), rtol=0, atol=ATOL
    )


# ---------------------------------------------------------------------------
# What the fit says about its target
# ---------------------------------------------------------------------------


def test_target_type_and_refits():
    X, y = dataset("regression")
    est = dmargin.SURF().fit(X, y)
    assert est.target_type_ == "continuous" and not hasattr(est, "classes_")
    labels = (y > np.median(y)).astype(float)  # 0.0 / 1.0: classes, not a continuous target
    est.fit(X, labels)
    assert est.target_type_ == "binary" and not hasattr(est, "hit_bound_")
    np.testing.assert_array_equal(est.classes_, [0.0, 1.0])
    assert dmargin.SURF().fit(X, np.digitize(y, [0, 1, 2])).target_type_ == "multiclass"
    assert dmargin.SURF().fit(X, labels).fit(X, y).target_type_ == "continuous"


def test_integer_genotypes_with_a_continuous_target_take_the_float_path():
    X, y = dataset("gametes")
    est = dmargin.MultiSURFstar().fit(X.astype(np.int8), y)
    assert est.compact_dtype_ is None
    np.testing.assert_allclose(
        est.feature_importances_, skrebate_scores("MultiSURFstar", "gametes"), rtol=0, atol=ATOL
    )
    # The same genotypes with class labels are compact.
    assert dmargin.MultiSURF().fit(X.astype(np.int8), y > np.median(y)).compact_dtype_ == np.uint8


def test_transform_keeps_the_top_features():
    X, y = dataset("gametes")
    est = dmargin.MultiSURF(n_features_to_select=2).fit(X, y)
    assert est.transform(X).shape == (X.shape[0], 2)
