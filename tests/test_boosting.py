"""AdaBoost with stumps, margin fraction, SBS-MF, AdaBoost-CR and BDSFS.

Against the brute-force loops of ``reference_boosting.py``, the paper's
identities (Theorem 3.1, sum of MF = 1), synthetic ground truth, execution
modes (in-process = threaded dask = 2-process LocalCluster) and bad input.
"""

import dask
import dask.array as da
import numpy as np
import pytest

from dmargin.boosting._boosting import BDSFS, SBSMF, AdaBoostCR, AdaBoostStumps
from dmargin.boosting._stumps import best_stump
from dmargin.engine import binning, blocks
from dmargin.engine.kernels import hist

try:  # tests/ as a package
    from . import reference_boosting as ref
except ImportError:  # tests/ on sys.path
    import reference_boosting as ref


def _data(n=80, a=6, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, a))
    X[:, 1] += 1.5 * y
    X[:, 3] -= 1.0 * y
    X[:, 4] = np.round(X[:, 4])  # few distinct values
    return X, y


def _stumps(est):
    return list(
        zip(
            est.stump_features_,
            est.stump_thresholds_,
            est.stump_polarities_,
            est.estimator_weights_,
        )
    )


def _assert_same_run(est, expected, X, ys):
    assert est.n_estimators_ == len(expected)
    f, th, s, a = (np.array(c) for c in zip(*expected))
    np.testing.assert_array_equal(est.stump_features_, f)
    np.testing.assert_array_equal(est.stump_polarities_, s)
    np.testing.assert_allclose(est.stump_thresholds_, th, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.estimator_weights_, a, rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        est.margins(X, (ys > 0).astype(int)), ref.margins(X, ys, expected), rtol=0, atol=1e-10
    )


# ---------------------------------------------------------------------------
# Against the brute force
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stump_search_equals_brute_force(seed):
    X, y = _data(seed=seed)
    rng = np.random.default_rng(seed)
    D = rng.random(len(y))
    D /= D.sum()
    binned = binning.bin_rows(X, y, 256, rng, use_dask=False)
    assert binned.exact.all()
    feats = np.arange(X.shape[1])
    H = hist.TWINS[0](binned.rows.X, binned.rows.codes, D, feats, int(binned.n_bins.max()))
    k, b, edge, total = best_stump(H, binned.n_bins)
    thresholds = [ref.exact_thresholds(X[:, j]) for j in range(X.shape[1])]
    f, bb, r = ref.brute_stump(X, 2 * y - 1, D, thresholds)
    assert (k, b) == (f, bb)
    assert binned.threshold(k, b) == thresholds[f][bb]
    assert abs(total - 1.0) < 1e-12
    assert abs(edge / total - r) < 1e-12
    assert abs((1 - abs(edge)) / 2 - (1 - abs(r)) / 2) < 1e-12  # weighted error


@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_adaboost_equals_brute_force(class_weight):
    X, y = _data(n=70, seed=3)
    y = np.r_[np.zeros(40, int), np.ones(30, int)]  # skewed, for "balanced"
    ys = 2.0 * y - 1
    est = AdaBoostStumps(n_estimators=15, class_weight=class_weight).fit(X, y)
    counts = np.bincount(y)
    D1 = np.ones(len(y)) if class_weight is None else 1.0 / counts[y]
    thresholds = [ref.exact_thresholds(X[:, j]) for j in range(X.shape[1])]
    expected = ref.brute_adaboost(X, ys, 15, thresholds, D1)
    _assert_same_run(est, expected, X, ys)
    np.testing.assert_allclose(
        est.margin_fractions_, ref.margin_fractions(X, ys, expected, X.shape[1]), atol=1e-12
    )
    np.testing.assert_allclose(
        est.contribution_ratios_, ref.contribution_ratios(expected, X.shape[1]), atol=1e-12
    )


def test_quantile_binning_equals_brute_force_on_binned_thresholds():
    X, y = _data(n=90, seed=4)
    est = AdaBoostStumps(n_estimators=12, max_bins=8).fit(X, y)
    ys = 2.0 * y - 1
    thresholds = [
        ref.quantile_thresholds(X[:, j], 8)
        if np.unique(X[:, j]).size > 8
        else ref.exact_thresholds(X[:, j])
        for j in range(X.shape[1])
    ]
    assert all(len(t) <= 7 for t in thresholds)
    expected = ref.brute_adaboost(X, ys, 12, thresholds, np.ones(len(y)))
    _assert_same_run(est, expected, X, ys)


def test_prediction_and_decision_function():
    X, y = _data(n=100, seed=5)
    est = AdaBoostStumps(n_estimators=25).fit(X, y)
    F = est.decision_function(X)
    expected = sum(a * np.where(X[:, f] > th, s, -s) for f, th, s, a in _stumps(est))
    np.testing.assert_allclose(F, expected, atol=1e-12)
    np.testing.assert_array_equal(est.predict(X), np.where(F > 0, 1, 0))
    assert (est.predict(X) == y).mean() > 0.85


# ---------------------------------------------------------------------------
# The paper's identities and claims
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 6])
def test_theorem_3_1_and_margin_fractions_sum_to_one(seed):
    X, y = _data(seed=seed)
    est = AdaBoostStumps(n_estimators=30).fit(X, y)
    rho = est.margins(X, y)
    rho_f = est.feature_margins(X, y)
    np.testing.assert_allclose(rho_f @ est.contribution_ratios_, rho, rtol=0, atol=1e-12)
    assert abs(est.margin_fractions_.sum() - 1.0) < 1e-12
    assert abs(est.contribution_ratios_.sum() - 1.0) < 1e-12  # alphas are positive
    # MF_f = Gamma_f mean(rho_f) / mean(rho) (eq. 10, first line)
    np.testing.assert_allclose(
        est.margin_fractions_, est.contribution_ratios_ * rho_f.mean(0) / rho.mean(), atol=1e-12
    )
    assert np.all(np.abs(rho) <= 1 + 1e-12)


def test_sbsmf_removes_informative_features_last():
    rng = np.random.default_rng(7)
    n = 300
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, 10))
    X[:, 2] += 2.0 * y
    X[:, 7] -= 1.2 * y
    X[:, 5] += 0.9 * y
    sel = SBSMF(n_features_to_select=1, n_estimators=40).fit(X, y)
    assert sel.n_iter_ == 9
    assert sorted(sel.ranking_) == list(range(1, 11))
    assert np.argsort(sel.ranking_)[:3].tolist() == [2, 7, 5]
    cr = AdaBoostCR(n_features_to_select=2, n_estimators=40).fit(X, y)
    assert set(np.flatnonzero(cr.support_)) == {2, 7}
    bd = BDSFS(n_features_to_select=2).fit(X, y)
    assert bd.order_[0] == 2 and set(bd.order_[:2]) == {2, 7}
    assert bd.transform(X).shape == (n, 2)


@pytest.mark.parametrize(
    "Est, criterion", [(SBSMF, "margin_fractions_"), (AdaBoostCR, "contribution_ratios_")]
)
def test_elimination_scores_equal_a_per_round_recomputation(Est, criterion):
    """Round by round, AdaBoost on the survivors: the removed feature's criterion is its
    elimination score, and the kept feature gets its criterion in the last round."""
    X, y = _data(a=5)
    sel = Est(n_features_to_select=1, n_estimators=15).fit(X, y)
    survivors, expected = list(range(5)), np.full(5, np.nan)
    while len(survivors) > 1:
        crit = getattr(AdaBoostStumps(n_estimators=15).fit(X[:, survivors], y), criterion)
        worst = int(np.argsort(crit, kind="stable")[0])
        expected[survivors] = crit  # kept features: overwritten by the next round
        del survivors[worst]
    np.testing.assert_array_equal(sel.support_, np.isin(np.arange(5), survivors))
    np.testing.assert_allclose(sel.elimination_scores_, expected, rtol=1e-12, atol=0)
    # The first feature removed had the smallest criterion of the full-feature fit.
    full = getattr(AdaBoostStumps(n_estimators=15).fit(X, y), criterion)
    assert sel.elimination_scores_[np.argmax(sel.ranking_)] == pytest.approx(full.min())


def test_elimination_scores_without_a_round_are_nan():
    X, y = _data(a=5)
    sel = SBSMF(n_features_to_select=5, n_estimators=5).fit(X, y)
    assert sel.n_iter_ == 0 and np.isnan(sel.elimination_scores_).all()


def test_step_schedules_follow_rfe_ranking():
    rng = np.random.default_rng(8)
    y = np.repeat([0, 1], 30)
    X = rng.normal(size=(60, 230))
    X[:, 0] += 2 * y
    sel = SBSMF(n_features_to_select=98, step="halving", n_estimators=5).fit(X, y)
    # 230 -> 115 -> 100 -> 99 -> 98 survivors
    assert sel.n_iter_ == 4 and sel.n_features_ == 98
    assert np.bincount(sel.ranking_).tolist() == [0, 98, 1, 1, 15, 115]
    sel = SBSMF(n_features_to_select=0.5, step=0.1, n_estimators=5).fit(X[:, :20], y)
    assert sel.n_features_ == 10 and sel.n_iter_ == 5  # two removed per round
    assert sel.support_[0]


# ---------------------------------------------------------------------------
# Where it runs
# ---------------------------------------------------------------------------


def _as_dask(X, y, rows=17):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


def _fitted(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def _assert_equal(a, b):
    fa, fb = _fitted(a), _fitted(b)
    assert fa.keys() == fb.keys()
    for k in fa:
        if isinstance(fa[k], np.ndarray) and fa[k].dtype.kind == "f":
            np.testing.assert_allclose(fa[k], fb[k], rtol=0, atol=1e-10, err_msg=k)
        else:
            np.testing.assert_array_equal(fa[k], fb[k], err_msg=k)


MAKERS = [
    lambda: AdaBoostStumps(n_estimators=12, class_weight="balanced"),
    lambda: SBSMF(n_features_to_select=2, n_estimators=6),
    lambda: BDSFS(n_features_to_select=3),
]


@pytest.mark.parametrize("make", MAKERS, ids=["AdaBoostStumps", "SBSMF", "BDSFS"])
def test_threaded_dask_equals_in_process(make, threaded):
    X, y = _data(n=90, seed=9)
    _assert_equal(make().fit(X, y), make().fit(*_as_dask(X, y)))


def test_dask_weights_stay_on_blocks_and_graph_size_is_constant(threaded):
    X, y = _data(n=90, seed=9)
    binned = binning.bin_rows(*_as_dask(X, y), 256, np.random.default_rng(0))
    hist = blocks.WeightedHistograms(binned, np.full(2, 1 / 90))
    local = blocks.WeightedHistograms(
        binning.bin_rows(X, y, 256, np.random.default_rng(0), use_dask=False), np.full(2, 1 / 90)
    )
    feats = np.arange(X.shape[1])
    stump = None
    sizes = []
    for t in range(4):
        H, Hl = hist.histogram(feats, stump), local.histogram(feats, stump)
        np.testing.assert_allclose(H, Hl, rtol=0, atol=1e-15)
        sizes.append(len(hist.w.__dask_graph__()))
        stump = (t, 0, 1.0, 0.3, 1.1)
    assert len(set(sizes)) == 1 and sizes[0] == len(binned.rows.bounds)
    np.testing.assert_allclose(hist.weights(), local.weights(), rtol=0, atol=1e-15)


@pytest.mark.cluster
def test_cluster_equals_in_process(client):
    from distributed import get_task_stream

    X, y = _data(n=90, seed=10)
    local = AdaBoostStumps(n_estimators=8).fit(X, y)
    workers = set(client.scheduler_info()["workers"])
    with get_task_stream(client) as stream:
        remote = AdaBoostStumps(n_estimators=8).fit(*_as_dask(X, y, rows=12))
    _assert_equal(local, remote)
    hist_workers = {t["worker"] for t in stream.data if "dmargin-hist" in str(t["key"])}
    assert hist_workers == workers, "histogram tasks did not run on both workers"


# ---------------------------------------------------------------------------
# Bad input and documented oddities
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("Est", [AdaBoostStumps, SBSMF, BDSFS])
def test_bad_input(Est):
    X, y = _data()
    with pytest.raises(ValueError, match="single class"):
        Est().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="Only binary.*3 classes.*one class against the rest"):
        Est().fit(X, np.arange(len(y)) % 3)
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Est().fit(Xn, y)
    with pytest.raises(ValueError, match="max_bins=1"):
        Est(max_bins=1).fit(X, y)


def test_constant_feature_and_duplicate_rows():
    X, y = _data(n=60, seed=11)
    X[:, 0] = 3.0  # constant: never split, MF = 0, removed first
    X = np.vstack([X, X[:5]])
    y = np.r_[y, y[:5]]
    est = AdaBoostStumps(n_estimators=20).fit(X, y)
    assert 0 not in est.stump_features_
    assert est.margin_fractions_[0] == 0 and est.contribution_ratios_[0] == 0
    # a duplicated row counts twice: the same as weight 2 in the brute force
    thresholds = [ref.exact_thresholds(X[:, j]) for j in range(X.shape[1])]
    _assert_same_run(
        est, ref.brute_adaboost(X, 2.0 * y - 1, 20, thresholds, np.ones(len(y))), X, 2.0 * y - 1
    )
    assert SBSMF(n_features_to_select=5, n_estimators=10).fit(X, y).ranking_[0] == 2
    assert BDSFS().fit(X, y).order_[-1] == 0


def test_all_constant_features_warn_and_predict_constant():
    X = np.ones((20, 3))
    y = np.repeat([0, 1], 10)
    with pytest.warns(RuntimeWarning, match="No stump"):
        est = AdaBoostStumps().fit(X, y)
    assert est.n_estimators_ == 0
    np.testing.assert_array_equal(est.margin_fractions_, 0)
    np.testing.assert_array_equal(est.decision_function(X), 0)


def test_perfect_stump_stops_boosting():
    X = np.c_[np.arange(20.0), np.zeros(20)]
    y = (np.arange(20) >= 10).astype(int)
    est = AdaBoostStumps(n_estimators=50).fit(X, y)
    assert est.n_estimators_ == 1 and est.stump_thresholds_[0] == 9.5
    np.testing.assert_allclose(est.estimator_weights_, 0.5 * np.log((2 - 1e-10) / 1e-10))
    assert est.margin_fractions_.tolist() == [1.0, 0.0]


# ---------------------------------------------------------------------------
# Speed: the committee of a round whose removed features had no stump
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "Est, criterion", [(SBSMF, "margin_fractions_"), (AdaBoostCR, "contribution_ratios_")]
)
def test_elimination_reuses_a_committee_without_the_removed_features(Est, criterion, monkeypatch):
    """Features without a stump (constant, or never the best) are removed without boosting
    again, a committee resumes before the first stump on a removed feature, and the fit
    equals AdaBoost recomputed on the survivors of every round."""
    import dmargin.boosting._boosting as boosting

    X, y = _data(n=120, a=6, seed=12)
    X = np.c_[X, np.full((120, 3), 2.0)]  # constant: never split
    runs, passes = [], []
    real_boost, real_hist = boosting.boost, blocks.WeightedHistograms.histogram

    def counted(binned, features, *args, resume=None):
        runs.append((len(features), 0 if resume is None else resume[1]))
        return real_boost(binned, features, *args, resume=resume)

    def counted_hist(self, *args):
        passes.append(1)
        return real_hist(self, *args)

    monkeypatch.setattr(boosting, "boost", counted)
    monkeypatch.setattr(blocks.WeightedHistograms, "histogram", counted_hist)
    sel = Est(n_features_to_select=1, n_estimators=10).fit(X, y)
    assert sel.n_iter_ == 8
    assert len(runs) < sel.n_iter_ and runs[0] == (9, 0)  # constant ones: no boosting
    assert any(t > 0 for _, t in runs)  # resumed after t stumps
    assert len(passes) < 10 * len(runs)
    survivors, expected, ranking = list(range(9)), np.full(9, np.nan), np.ones(9, int)
    while len(survivors) > 1:
        crit = getattr(AdaBoostStumps(n_estimators=10).fit(X[:, survivors], y), criterion)
        worst = int(np.argsort(crit, kind="stable")[0])
        expected[survivors] = crit
        ranking[survivors[worst]] = len(survivors)
        del survivors[worst]
    np.testing.assert_array_equal(sel.ranking_, ranking)
    np.testing.assert_allclose(sel.elimination_scores_, expected, rtol=1e-12, atol=0)


def test_histogram_of_a_feature_does_not_depend_on_the_features_searched():
    """Wide searches run in groups of features; a feature's sums are the same bits in any
    group and any feature list (what lets SBS-MF keep a committee), and equal np.add.at."""
    rng = np.random.default_rng(13)
    n, a, n_bins = 4 * 4096 * 2, 150, 4096  # two row partitions, groups of 64 features
    bins = np.asfortranarray(rng.integers(0, 300, (n, a)).astype(np.uint16))
    y = rng.integers(0, 2, n)
    w = rng.random(n)
    for kernel in hist.TWINS:
        full = kernel(bins, y, w, np.arange(a), n_bins)
        some = np.array([3, 70, 71, 149])
        np.testing.assert_array_equal(kernel(bins, y, w, some, n_bins), full[some])
        np.testing.assert_array_equal(
            kernel(bins, y, w, some[::-1].copy(), n_bins), full[some[::-1]]
        )
        for j in (0, 64, 149):
            ref_h = np.zeros((n_bins, 2))
            np.add.at(ref_h, (bins[:, j], y), w)
            np.testing.assert_allclose(full[j], ref_h, rtol=1e-12, atol=1e-12)


def test_small_dask_blocks_are_merged_for_the_rounds(threaded):
    """Twenty row blocks of 10 become four of 50 (column-major), and the committee is the
    in-process one."""
    X, y = _data(n=200, seed=14)
    binned = binning.bin_rows(*_as_dask(X, y, rows=10), 256, np.random.default_rng(0))
    assert binned.rows.bounds == [(0, 50), (50, 100), (100, 150), (150, 200)]
    assert binned.rows.X.chunks[0] == (50,) * 4 and binned.rows.codes.chunks[0] == (50,) * 4
    assert all(b.flags.f_contiguous for b in dask.compute(*binned.rows.X.to_delayed().ravel()))
    make = MAKERS[0]
    _assert_equal(make().fit(X, y), make().fit(*_as_dask(X, y, rows=10)))
