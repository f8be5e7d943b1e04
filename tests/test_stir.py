"""STIR p-values on ReliefF (Le, Urbanowicz, Moore & McKinney 2019).

By construction: the engine's t-statistics, p-values and Benjamini-Hochberg
q-values equal a brute-force transcription of the paper's formulas (explicit
hit and miss pairs, each weighted 1/k of its anchor) to 1e-10, for every row as
an anchor and for a sample; STIR's ReliefF score is the weight itself; the
statistics agree across execution modes.  On GAMETES' pure 2-way epistasis the
two predictive SNPs get the smallest p-values.
"""

import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dmargin
from tests import reference as ref
from tests.reference_stir import benjamini_hochberg, stir_reference

#: The attributes a fit without per-feature p-values leaves out.
UNAVAILABLE = ("t_statistics_", "pvalues_", "qvalues_", "global_pvalue_")
GAMETES = (
    Path(__file__).resolve().parent
    / "data"
    / "gametes"
    / "GAMETES_Epistasis_2-Way_20atts_0.4H_EDM-1_1.tsv.gz"
)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.random((160, 7))
    y = np.repeat([0, 1], 80)
    X[:, 2] += 0.5 * y  # informative
    X[:, 5] = 0.25  # constant: t = 0, p = 1
    X[11] = X[12]  # a duplicate row
    return X, y


@pytest.mark.parametrize("k", [1, 10])
@pytest.mark.parametrize("n_anchors", [None, 40])
def test_stir_equals_the_brute_force_formulas(data, k, n_anchors, stir_everywhere):
    X, y = data
    est = dmargin.ReliefF(n_neighbors=k, n_anchors=n_anchors, pvalues=True, random_state=3).fit(
        X, y
    )
    anchors = None if n_anchors is None else est.anchor_indices_
    scaled = ref.minmax_scale(X)
    assert_equals_reference(est, stir_reference(scaled, y, k, anchors), constant=5, informative=2)


def assert_equals_reference(est, reference, constant, informative):
    """The fit's score, t-statistics, p-values and q-values against the brute-force
    STIR (to 1e-10); a constant feature gets t = 0 and p = 1."""
    w, t, p, _ = reference
    varies = np.arange(len(w)) != constant
    np.testing.assert_allclose(est.feature_importances_, w, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.t_statistics_[varies], t[varies], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(est.pvalues_[varies], p[varies], rtol=1e-10, atol=1e-12)
    assert est.t_statistics_[constant] == 0 and est.pvalues_[constant] == 1
    np.testing.assert_allclose(est.qvalues_, benjamini_hochberg(est.pvalues_), rtol=1e-12)
    assert est.pvalues_.argmin() == informative and est.pvalues_[informative] < 1e-3


def test_pvalues_false_gives_the_same_weights_alone(data, stir_everywhere):
    X, y = data
    with_p = dmargin.ReliefF(n_anchors=60, pvalues=True, random_state=4).fit(X, y)
    alone = dmargin.ReliefF(pvalues=False, n_anchors=60, random_state=4).fit(X, y)
    np.testing.assert_allclose(
        alone.feature_importances_, with_p.feature_importances_, rtol=1e-13, atol=1e-15
    )
    assert not any(hasattr(alone, name) for name in UNAVAILABLE)
    permuted = dmargin.ReliefF(pvalues=False, n_permutations=9, random_state=4).fit(X, y)
    assert not hasattr(permuted, "t_statistics_") and permuted.pvalues_.min() == 0.1


def test_stir_is_the_same_on_dask(data, threaded, stir_everywhere):
    X, y = data
    local = dmargin.ReliefF(n_anchors=50, pvalues=True, random_state=1).fit(X, y)
    dask = dmargin.ReliefF(n_anchors=50, pvalues=True, random_state=1).fit(
        da.from_array(X, chunks=40), y
    )
    for name in ("feature_importances_", "t_statistics_", "pvalues_", "qvalues_"):
        np.testing.assert_allclose(
            getattr(dask, name), getattr(local, name), rtol=1e-10, atol=1e-13
        )


@pytest.mark.cluster
def test_stir_on_a_local_cluster_equals_in_process(data, local_cluster, stir_everywhere):
    # ReliefF's and MultiSURF's STIR statistics from the two worker processes,
    # the engine's tasks run there (the p-values are off by default, so
    # test_modes.py's cluster cases no longer reach them).
    from distributed import Client, get_task_stream

    X, y = data
    makers = (
        lambda: dmargin.ReliefF(n_anchors=50, pvalues=True, random_state=1),
        lambda: dmargin.MultiSURF(pvalues=True),
    )
    local = [make().fit(X, y) for make in makers]
    with Client(local_cluster) as client, get_task_stream(client) as stream:
        remote = [make().fit(da.from_array(X, chunks=40), y) for make in makers]
        workers = set(client.scheduler_info()["workers"])
    for a, b in zip(local, remote):
        for name in ("feature_importances_", "t_statistics_", "pvalues_", "qvalues_"):
            np.testing.assert_allclose(
                getattr(b, name), getattr(a, name), rtol=1e-10, atol=1e-13, err_msg=name
            )
    ran = {t["worker"] for t in stream.data if "dmargin-" in str(t["key"])}
    assert ran == workers and len(workers) == 2


def test_stir_counts_a_pair_found_from_both_rows_once_in_its_standard_error(stir_everywhere):
    # Two tight pairs of rows, one per class: each row's nearest hit is its twin,
    # so every hit pair is found from both of its rows (n = 4 slots, 2 draws).
    X = np.array([[0.0, 0.0], [0.01, 0.3], [1.0, 1.0], [1.01, 0.7]])
    y = np.array([0, 0, 1, 1])
    est = dmargin.ReliefF(n_neighbors=1, pvalues=True).fit(X, y)
    _, t, p, _ = stir_reference(ref.minmax_scale(X), y, 1)
    np.testing.assert_allclose(est.t_statistics_, t, rtol=1e-12)
    np.testing.assert_allclose(est.pvalues_, p, rtol=1e-12)


def _null_fits(seed, draws, n_rows, n_features, k):
    """ReliefF fits of ``draws`` null sets: uniform rows, balanced labels at random."""
    rng = np.random.default_rng(seed)
    for _ in range(draws):
        X = rng.random((n_rows, n_features))
        y = rng.permutation(np.repeat([0, 1], n_rows // 2))
        yield dmargin.ReliefF(n_neighbors=k, pvalues=True).fit(X, y)


def test_stir_pvalues_are_calibrated_on_null_data(stir_everywhere):
    # (The law itself: a draw whose p-values make a discovery is one the fit's check
    # of signal declines, so the check is off here.)
    # Uniform rows, balanced labels drawn at random: the p-values of 100 draws
    # x 20 features pass a Kolmogorov-Smirnov test of uniformity (p = 0.75),
    # 5.3 % of them fall under 0.05 and 5 of the draws make a discovery at
    # q = 0.05.  With the paper's test (each pair found from both of its rows
    # counted as two draws, no covariance, no skewness) 10 % fall under 0.05,
    # the KS p-value is 1e-27 and 32 % of the draws make a discovery (400
    # draws; benchmarks/bench_stir.py).
    pvalues, discoveries = [], []
    for est in _null_fits(11, 100, 200, 20, 10):
        pvalues.append(est.pvalues_)
        discoveries.append(bool((est.qvalues_ <= 0.05).any()))
    p = np.concatenate(pvalues)
    assert stats.kstest(p, "uniform").pvalue > 0.01
    assert 0.035 < (p < 0.05).mean() < 0.065
    assert np.mean(discoveries) <= 0.08


def _normal_null_pvalues(method, draws=120, seed=123):
    """p-values of ``draws`` null sets: N = 300 normal rows, A = 50, 150 of each class."""
    rng = np.random.default_rng(seed)
    out, declined = [], 0
    for _ in range(draws):
        X = rng.standard_normal((300, 50))
        y = rng.permutation(np.repeat([0, 1], 150))
        with warnings.catch_warnings(record=True):  # a sample kurtosis over 4: declined
            warnings.simplefilter("always", dmargin.UncalibratedPValuesWarning)
            p = getattr(getattr(dmargin, method)(pvalues=True).fit(X, y), "pvalues_", None)
        if p is None:
            declined += 1
        else:
            out.append(p)
    assert declined <= 2
    return np.array(out)


@pytest.mark.parametrize("method, skew_bound", [("ReliefF", 0.08), ("MultiSURF", 0.15)])
def test_every_term_of_the_law_is_needed_on_normal_null_data(method, skew_bound, stir_everywhere):
    # The p-values as z-scores, z = isf(p): standard normal when the law is right
    # (the law itself: ReliefF declines normal features for its too thin far tail,
    # which shows here as the share under 0.001 near its bound).
    # Each bound fails with one term of the law switched off (the pairs found from
    # both rows counted twice: var z 1.9-2.6, 12-14 % of p under 0.05; no shared-row
    # covariance: var z 0.73-0.78, 2.8-3.2 % under 0.05; no skewness: skewness of z
    # 0.14 (ReliefF) and 0.31 (MultiSURF); no kurtosis: excess kurtosis of z
    # above 0 and 1.5-4x the p-values under 0.001).  Measured with the whole law:
    # 5.7 % / 5.5 % under 0.05, var z 1.08 / 1.09, skewness 0.02 / -0.04,
    # kurtosis -0.04 / -0.25.
    p = _normal_null_pvalues(method).ravel()
    z = stats.norm.isf(p)
    assert 0.04 < (p < 0.05).mean() < 0.065
    assert 0.9 < z.var() < 1.2
    assert abs(stats.skew(z)) < skew_bound
    assert stats.kurtosis(z) < 0.03
    assert (p < 0.001).mean() < 0.0018


def test_stir_takes_missing_values_and_discrete_features(threaded, stir_everywhere):
    # Genotype-like 0/1/2 columns (discrete) beside continuous ones, 5 % missing:
    # finite p-values, the informative feature first, the same on dask (the law's
    # arithmetic: such data are outside where it has been shown calibrated).
    rng = np.random.default_rng(12)
    y = np.repeat([0, 1], 100)
    X = np.hstack([rng.integers(0, 3, (200, 4)).astype(float), rng.random((200, 4))])
    X[:, 5] += 0.6 * y
    X[rng.random(X.shape) < 0.05] = np.nan
    est = dmargin.ReliefF(discrete_threshold=3, pvalues=True).fit(X, y)
    assert est.discrete_features_[:4].all() and not est.discrete_features_[4:].any()
    assert np.all((est.pvalues_ >= 0) & (est.pvalues_ <= 1))
    assert est.pvalues_.argmin() == 5 and est.pvalues_[5] < 1e-6
    on_dask = dmargin.ReliefF(discrete_threshold=3, pvalues=True).fit(
        da.from_array(X, chunks=70), y
    )
    np.testing.assert_allclose(on_dask.pvalues_, est.pvalues_, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(on_dask.t_statistics_, est.t_statistics_, rtol=1e-10, atol=1e-13)


# ---------------------------------------------------------------------------
# Where STIR's p-values are returned
# ---------------------------------------------------------------------------


def _balanced_normal(seed=0, n=300, a=8):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, a)), rng.permutation(np.repeat([0, 1], n // 2))


def test_pvalues_are_not_computed_by_default(data):
    X, y = data
    est = dmargin.ReliefF().fit(X, y)
    assert not any(hasattr(est, name) for name in UNAVAILABLE)
    assert not hasattr(dmargin.MultiSURF().fit(X, y), "pvalues_")


def _skewed(X):
    X = X.copy()
    X[:, 3] = np.exp(2 * X[:, 3])
    return X


def _few_values(X):
    X = X.copy()
    X[:, 6] = np.round(X[:, 6]).clip(-1, 1)
    return X


def _heavy_tails(X):
    # Student t3 values and their mirror images: no skewness, heavy tails.
    X = X.copy()
    half = np.random.default_rng(1).standard_t(3, len(X) // 2)
    X[:, 1] = np.concatenate([half, -half])
    return X


@pytest.mark.parametrize(
    "case, change, reason",
    [
        (
            "unbalanced",
            lambda X, y: (X, (np.arange(len(y)) < 100).astype(int)),
            r"classes of 100 and 200 rows \(the smaller holds 33.3%; shown calibrated from 45%\)",
        ),
        ("three classes", lambda X, y: (X, np.arange(len(y)) % 3), "3 classes"),
        (
            "missing",
            lambda X, y: (np.where(np.eye(*X.shape, dtype=bool), np.nan, X), y),
            "missing values",
        ),
        ("skewed", lambda X, y: (_skewed(X), y), r"skewed feature\(s\), e.g. column 3 of skewness"),
        (
            "few values",
            lambda X, y: (_few_values(X), y),
            r"at most 10 distinct values, e.g. column 6 with 3",
        ),
        ("heavy tails", lambda X, y: (_heavy_tails(X), y), r"column 1 of excess kurtosis"),
    ],
)
@pytest.mark.parametrize("method", ["ReliefF", "MultiSURF"])
def test_outside_the_calibrated_domain_a_warning_and_no_pvalues(case, change, reason, method):
    X, y = change(*_balanced_normal())
    if method == "MultiSURF" and case in ("three classes", "missing"):
        return  # MultiSURF refuses these with an error (test_stir_surf.py)
    est = getattr(dmargin, method)(pvalues=True)
    with pytest.warns(dmargin.UncalibratedPValuesWarning, match=reason) as record:
        est.fit(X, y)
    message = str(record[0].message)
    assert f"{method}(pvalues=True) returns no per-feature p-values" in message
    assert f"{method}(n_permutations=B)" in message and "B + 1 >= 160" in message
    assert "dmargin.KnockoffSelector" in message
    assert record[0].filename == __file__  # points at the user's call
    assert not any(hasattr(est, name) for name in UNAVAILABLE)
    assert np.all(np.isfinite(est.feature_importances_))
    # The permutation p-values the warning names are returned on the same data.
    if case != "missing" or method == "ReliefF":
        permuted = getattr(dmargin, method)(n_permutations=9, random_state=0).fit(X, y)
        assert permuted.pvalues_.shape == (X.shape[1],) and permuted.pvalues_.min() >= 0.1


def test_within_the_calibrated_domain_no_warning():
    # Uniform features (both), normal ones (MultiSURF), classes 45:55: p-values.
    X, y = _balanced_normal()
    rng = np.random.default_rng(3)
    U = rng.random(X.shape)
    unequal = rng.permutation((np.arange(300) < 135).astype(int))
    cases = [
        ("ReliefF", U, y),
        ("ReliefF", U, unequal),
        ("MultiSURF", U, y),
        ("MultiSURF", X, y),
        ("MultiSURF", X, unequal),
    ]
    for method, X_, y_ in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert getattr(dmargin, method)(pvalues=True).fit(X_, y_).pvalues_.shape == (8,)


def test_relieff_declines_normal_features_and_both_decline_1_to_1_5():
    # ReliefF's far tail is too thin on normal features; 1:1.5 is beyond both.
    X, y = _balanced_normal()
    with pytest.warns(
        dmargin.UncalibratedPValuesWarning,
        match="excess kurtosis .* up to 0, lighter than the normal law",
    ):
        assert not hasattr(dmargin.ReliefF(pvalues=True).fit(X, y), "pvalues_")
    unequal = np.random.default_rng(4).permutation((np.arange(300) < 120).astype(int))
    for method in ("ReliefF", "MultiSURF"):
        with pytest.warns(dmargin.UncalibratedPValuesWarning, match="40.0%.* from 45%"):
            getattr(dmargin, method)(pvalues=True).fit(X, unequal)


def test_the_domain_check_reads_the_sampled_rows_where_they_are(threaded):
    # The moment sample's shape from dask blocks equals numpy's: the same warning.
    X, y = _balanced_normal()
    X = _skewed(X)
    for rows in (X, da.from_array(X, chunks=70)):
        with pytest.warns(dmargin.UncalibratedPValuesWarning, match="column 3 of skewness 8.24"):
            dmargin.ReliefF(pvalues=True).fit(rows, y)


def test_feature_shape_by_its_definitions():
    from dmargin.relief._stir import feature_shape

    rng = np.random.default_rng(9)
    X = np.column_stack([rng.exponential(size=500), rng.integers(0, 3, 500), np.ones(500)])
    X[::7, 0] = np.nan
    shape = feature_shape(X)
    x = X[~np.isnan(X[:, 0]), 0]
    np.testing.assert_allclose(shape[:2, 0], [stats.skew(x), stats.kurtosis(x)], rtol=1e-12)
    np.testing.assert_allclose(
        shape[:2, 1], [stats.skew(X[:, 1]), stats.kurtosis(X[:, 1])], rtol=1e-12
    )
    np.testing.assert_array_equal(shape[2], [x.size, 3, 1])
    assert shape[0, 2] == shape[1, 2] == 0  # a constant column


def test_stir_is_only_for_two_classes(data):
    X, _ = data
    with pytest.warns(dmargin.UncalibratedPValuesWarning, match="4 classes"):
        est = dmargin.ReliefF(pvalues=True).fit(X, np.repeat([0, 1, 2, 3], 40))
    assert not any(hasattr(est, name) for name in UNAVAILABLE)


def _gametes():
    frame = pd.read_csv(GAMETES, sep="\t")
    return frame.drop(columns="class"), frame["class"]


def test_gametes_predictive_snps_get_the_smallest_permutation_pvalues():
    # Genotypes are outside STIR's calibrated domain: permutation p-values.  With
    # B = 299 the smallest p-value is 1 / 300 and its q-value among 20 features
    # 0.033 when both SNPs reach it.
    X, y = _gametes()
    with pytest.warns(dmargin.UncalibratedPValuesWarning, match="distinct values"):
        dmargin.ReliefF(pvalues=True).fit(X, y)
    est = dmargin.ReliefF(n_permutations=299, random_state=0).fit(X, y)
    order = X.columns[np.argsort(est.pvalues_, kind="stable")]
    assert set(order[:2]) == {"P1", "P2"}
    assert np.all(est.qvalues_[X.columns.isin(["P1", "P2"])] < 0.05)
    assert np.all(est.qvalues_[~X.columns.isin(["P1", "P2"])] > 0.05)


def test_gametes_predictive_snps_get_the_smallest_stir_pvalues(stir_everywhere):
    # The law's power where it is not vouched for: the two SNPs still come first.
    X, y = _gametes()
    est = dmargin.ReliefF(n_neighbors=100, pvalues=True).fit(X, y)
    best = set(X.columns[np.argsort(est.pvalues_)[:2]])
    assert best == {"P1", "P2"}
    assert np.all(est.qvalues_[X.columns.isin(["P1", "P2"])] < 0.05)


# ---------------------------------------------------------------------------
# Permutation p-values
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("segment", [7, 64, 2**16])
def test_permuted_labels_are_a_permutation_and_do_not_depend_on_the_blocks(segment, monkeypatch):
    from dmargin.engine import permute

    monkeypatch.setattr(permute, "SEGMENT", segment)
    codes = np.repeat([0, 1, 2], [50, 20, 30])
    counts = np.bincount(codes)
    local, (per_segment, seed) = permute.permuted_codes(codes, counts, np.random.default_rng(4))
    assert np.array_equal(np.bincount(local), counts) and not np.array_equal(local, codes)
    for chunk in (9, 33, 100):
        blocks, _ = permute.permuted_codes(
            da.from_array(codes, chunks=chunk), counts, np.random.default_rng(4)
        )
        np.testing.assert_array_equal(blocks.compute(scheduler="sync"), local)
    np.testing.assert_array_equal(permute.labels_of(per_segment, seed, 13, 71), local[13:71])


def test_permuted_labels_are_uniform_over_rows():
    # Each row receives class c with probability N_c / N: over 2,000 draws the
    # counts per (row, class) pass a chi-square test against that expectation.
    from dmargin.engine import permute

    codes = np.repeat([0, 1], [3, 7])
    rng = np.random.default_rng(0)
    hits = sum(permute.permuted_codes(codes, [3, 7], rng)[0] == 0 for _ in range(2000))
    expected = 2000 * 0.3
    squares = (hits - expected) ** 2
    chi2 = (squares / expected + squares / (2000 - expected)).sum()
    assert stats.chi2.sf(chi2, df=9) > 0.001


def _permutation_reference(X, y, k, n_permutations, random_state, n_anchors=None):
    """``(1 + #{W_b >= W}) / (B + 1)`` with ``W_b`` from the brute-force ReliefF on the
    library's permuted labels and anchors."""
    from dmargin.engine import permute

    est = dmargin.ReliefF(n_neighbors=k, n_anchors=n_anchors, random_state=random_state)
    scaled = ref.minmax_scale(X)
    classes, codes = np.unique(y, return_inverse=True)
    w = ref.relieff(
        scaled, codes, k, anchors=None if n_anchors is None else list(est.fit(X, y).anchor_indices_)
    )
    rng = np.random.default_rng(random_state).spawn(1)[0]
    reached = np.zeros(X.shape[1])
    for _ in range(n_permutations):
        permuted, _ = permute.permuted_codes(codes, np.bincount(codes), rng)
        anchors = None
        if n_anchors is not None:
            rows = dmargin.engine.prepare_rows(scaled, permuted, len(classes))
            anchors = list(
                dmargin.engine.sample_anchors(
                    rows, n_anchors, np.random.default_rng(random_state)
                ).index
            )
        reached += ref.relieff(scaled, permuted, k, anchors=anchors) >= w
    return w, (1 + reached) / (1 + n_permutations)


@pytest.mark.parametrize("n_anchors", [None, 30])
def test_permutation_pvalues_equal_the_reference(n_anchors):
    rng = np.random.default_rng(2)
    X = rng.random((90, 5))
    y = np.repeat([0, 1, 2], 30)
    X[:, 1] += 0.3 * y
    est = dmargin.ReliefF(
        n_neighbors=5, n_anchors=n_anchors, n_permutations=19, random_state=8
    ).fit(X, y)
    w, p = _permutation_reference(X, y, 5, 19, 8, n_anchors)
    np.testing.assert_allclose(est.feature_importances_, w, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(est.pvalues_, p)
    assert est.pvalues_[1] == 1 / 20 and not hasattr(est, "t_statistics_")  # three classes
    np.testing.assert_allclose(est.qvalues_, benjamini_hochberg(est.pvalues_), rtol=1e-12)


def test_permutation_pvalues_are_the_same_on_dask(data, threaded):
    X, y = data
    local = dmargin.ReliefF(n_permutations=9, random_state=1).fit(X, y)
    dask = dmargin.ReliefF(n_permutations=9, random_state=1).fit(da.from_array(X, chunks=40), y)
    np.testing.assert_array_equal(dask.pvalues_, local.pvalues_)


def test_permutation_pvalues_are_calibrated_on_null_data():
    # Labels independent of the rows: the p-values of 100 draws are uniform
    # (Kolmogorov-Smirnov, up to the grid of 1 / (B + 1)) and the false
    # discovery rate at q = 0.05 -- under a complete null, the fraction of draws
    # with any discovery -- stays at or under 0.05 on average.  (STIR's p-values
    # fail both on unbalanced classes: benchmarks/bench_stir.py.)
    rng = np.random.default_rng(0)
    pvalues, discoveries = [], []
    for draw in range(100):
        X = rng.random((60, 8))
        y = rng.permutation(np.repeat([0, 1], [36, 24]))  # unbalanced: ReliefF leans
        est = dmargin.ReliefF(n_neighbors=5, n_permutations=99, random_state=draw).fit(X, y)
        pvalues.append(est.pvalues_)
        discoveries.append(bool((est.qvalues_ <= 0.05).any()))
    p = np.concatenate(pvalues)
    jitter = rng.random(p.size) / 100  # spread each grid value over its cell
    assert stats.kstest(p - jitter, "uniform").pvalue > 0.01
    assert np.mean(discoveries) <= 0.05


# ---------------------------------------------------------------------------
# The model behind the p-values (dmargin.relief._stir)
# ---------------------------------------------------------------------------


def _random_graph(rng, n_rows, n_anchors, k):
    """Pair codes of a neighbour graph with mutual pairs and uneven k_a."""
    hit, miss = [], []
    for a in rng.choice(n_rows, n_anchors, replace=False):
        for side, count in ((hit, rng.integers(1, k + 1)), (miss, k)):
            others = rng.choice(np.delete(np.arange(n_rows), a), count, replace=False)
            side.extend((int(a) << 32) | int(j) for j in others)
    return np.array(hit, dtype=np.int64), np.array(miss, dtype=np.int64)


def _graph_reference(hit, miss, n_rows):
    edges = np.zeros((n_rows, n_rows))
    for codes, sign in ((hit, -1.0), (miss, 1.0)):
        anchors, neighbours = codes >> 32, codes & 0xFFFFFFFF
        for a, j in zip(anchors, neighbours):
            edges[a, j] += sign / np.sum(anchors == a)
    W = edges + edges.T
    C = W.sum(axis=1)
    i, j = np.nonzero(np.triu(W, 1))
    w = W[i, j]
    W2 = W @ W
    return np.array(
        [
            (C**2).sum(),
            (w**2).sum(),
            (C**3).sum(),
            (w**3).sum(),
            (w * C[i] * C[j]).sum(),
            (w**2 * (C[i] + C[j])).sum(),
            np.trace(W2 @ W),
            (w**4).sum(),
            (((W**2).sum(axis=1)) ** 2).sum(),
            ((W**2) * W2).sum(),
            np.trace(W2 @ W2),
        ]
    )


def test_pair_graph_sums_equal_the_dense_graph():
    from dmargin.relief import _terms as relief_terms

    rng = np.random.default_rng(3)
    hit, miss = _random_graph(rng, 40, 30, 6)
    assert relief_terms.mutual_pairs(hit) > 0  # some pairs found from both rows
    np.testing.assert_allclose(
        relief_terms.pair_graph_sums(hit, miss),
        _graph_reference(hit, miss, 40),
        rtol=1e-12,
        atol=1e-14,
    )


def test_pair_graph_sums_estimate_the_trace_from_a_sample_of_rows(monkeypatch):
    from dmargin.relief import _terms as relief_terms

    # A neighbour graph: every triangle has one or three hits, so the trace adds up.
    rng = np.random.default_rng(4)
    X, y = rng.random((3000, 5)), rng.integers(0, 2, 3000)
    D = np.abs(X[:, None] - X[None]).sum(axis=-1)
    np.fill_diagonal(D, np.inf)
    rows = np.repeat(np.arange(3000), 10)[:, None]
    hit, miss = (
        (rows[:, 0] << 32) | np.argsort(np.where(same, D, np.inf), axis=1)[:, :10].ravel()
        for same in (y[:, None] == y, y[:, None] != y)
    )
    monkeypatch.setattr(relief_terms, "TRACE_ROWS", 3000)
    exact = relief_terms.pair_graph_sums(hit, miss)
    monkeypatch.setattr(relief_terms, "TRACE_ROWS", 1000)
    sampled = relief_terms.pair_graph_sums(hit, miss)
    np.testing.assert_array_equal(
        sampled[[0, 1, 2, 3, 4, 5, 7, 8]], exact[[0, 1, 2, 3, 4, 5, 7, 8]]
    )
    for term in (6, 10):  # the triangles, the closed walks of four
        assert sampled[term] != exact[term] and abs(sampled[term] / exact[term] - 1) < 0.05
    # A triangle with a side twice: a signed sum whose terms cancel (measured 19 % off),
    # weighing under 0.1 % of the fourth cumulant on uniform rows.
    assert abs(sampled[9] / exact[9] - 1) < 0.3


def test_scored_differences_equal_the_kernels_feature_diff():
    from dmargin.engine.kernels.distance import feature_diff, scored_differences

    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 3, (2, 200, 4)).astype(float)
    a[:, 1:] = rng.random((200, 3))
    a[rng.random((200, 4)) < 0.1] = np.nan
    discrete, ramp = np.array([True, False, False, True]), np.array([np.inf, np.inf, 0.3, np.inf])
    got = scored_differences(a, b, discrete, ramp)
    want = np.array(
        [
            [feature_diff.py_func(a[r, f], b[r, f], discrete[f], ramp[f]) for f in range(4)]
            for r in range(200)
        ]
    )
    np.testing.assert_array_equal(got, want)


def test_pair_moments_of_uniform_values_are_their_closed_forms():
    # phi = |x - x'| on U(0, 1): g(x) = x^2 - x + 1/6, Var g = 1/180, Var phi = 1/18,
    # so E h^2 = 1/18 - 2/180; with u = x - 1/2, g = u^2 - 1/12 and
    # E g^3 = E u^6 - E u^4 / 4 + E u^2 / 48 - 1/1728 = 1/448 - 1/320 + 1/864.
    from dmargin.relief._stir import pair_moments

    x = np.linspace(0, 1, 300)[:, None]
    g2, g3, _, _, h2 = pair_moments(x, np.array([False]), np.array([np.inf]))[:5, 0]
    np.testing.assert_allclose(
        [g2, g3, h2], [1 / 180, 1 / 448 - 1 / 320 + 1 / 864, 1 / 18 - 2 / 180], rtol=0.05
    )


def test_the_model_gives_the_null_scores_variance_and_skewness(monkeypatch, stir_everywhere):
    # 300 null draws of 80 rows with k = 15 (a large k for N: a strongly skewed
    # score): the model's variance and skewness against the scores' own over the
    # draws (6,000 scores; their skewness is known to about +-0.03).  Measured:
    # variance 0.94 of the scores', skewness 0.78 against 0.77.  The paper's count
    # gives 0.58 of the variance, and its t-test no skewness.
    from dmargin.relief import _stir

    gammas = []
    skewness = _stir.skewness
    monkeypatch.setattr(_stir, "skewness", lambda *a: gammas.append(skewness(*a)) or gammas[-1])
    scores, variances = [], []
    for est in _null_fits(6, 300, 80, 20, 15):
        scores.append(est.feature_importances_)
        variances.append((est.feature_importances_ / est.t_statistics_) ** 2)
    scores, variances = np.array(scores), np.array(variances)
    assert 0.9 < scores.var() / variances.mean() < 1.1
    observed, model = stats.skew(scores.ravel()), np.mean(gammas)
    assert observed > 0.5 and abs(model - observed) < 0.1


def test_pair_moments_plain_path_equals_the_general_one():
    # Continuous features without NaN take the sorted-column path for g; a ramp
    # no difference reaches forces the general one.  Ties included.
    from dmargin.relief._stir import pair_moments

    rng = np.random.default_rng(8)
    X = np.hstack([rng.random((120, 3)), rng.integers(0, 4, (120, 2)) / 3.0])
    plain = pair_moments(X, np.zeros(5, bool), np.full(5, np.inf))
    general = pair_moments(X, np.zeros(5, bool), np.full(5, 2.0))
    np.testing.assert_allclose(plain, general, rtol=1e-12, atol=1e-15)
