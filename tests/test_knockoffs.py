"""The knockoff filter (``dmargin.KnockoffSelector``): its threshold, e-BH and e-values
against brute-force references, the antisymmetry of its statistic, its false discovery
rate on a partial null, the same answer in every execution mode, and its errors."""

import math
import sys

import dask
import dask.array as da
import numpy as np
import pytest

import dmargin
from dmargin.knockoffs._filter import (
    KnockoffSelector,
    ebh,
    knockoff_evalues,
    knockoff_statistic,
    knockoff_threshold,
)
from dmargin.knockoffs._sampler import KnockoffSampler
from tests import reference_knockoffs as ref

pytest.importorskip("knockpy")


# ---------------------------------------------------------------------------
# The filter's arithmetic against the references
# ---------------------------------------------------------------------------


def _statistics_cases():
    """W vectors with ties, zeros, all-negative and all-positive entries."""
    rng = np.random.default_rng(38)
    cases = [
        np.zeros(10),
        -np.arange(1, 21, dtype=float),
        np.arange(1, 31, dtype=float),
        np.array([3.0, 3.0, 3.0, -3.0, 0.0, 1.0, -1.0, 2.0, 2.0, 0.0]),
    ]
    for _ in range(60):
        a = int(rng.integers(1, 80))
        w = rng.normal(0.3 * rng.uniform(), 1.0, a)
        if rng.uniform() < 0.5:  # ties and zeros, as integer-valued statistics have
            w = np.round(w * 3) / 3
        cases.append(w)
    return cases


@pytest.mark.parametrize("q", [0.01, 0.05, 0.1, 0.2, 0.5, 0.9])
@pytest.mark.parametrize("offset", [0, 1])
def test_the_threshold_is_the_brute_force_knockoff_plus_threshold(q, offset):
    for w in _statistics_cases():
        assert knockoff_threshold(w, q, offset) == ref.knockoff_threshold(w, q, offset), w


def test_the_threshold_selects_nothing_below_ceil_offset_over_q():
    # Knockoff+ needs (1 + #neg) / #pos <= q: at least ceil(1 / q) positives.
    assert math.isinf(knockoff_threshold(np.arange(1.0, 10.0), 0.1))  # 9 positives
    assert knockoff_threshold(np.arange(1.0, 11.0), 0.1) == 1.0  # 10 positives
    assert knockoff_threshold(np.arange(1.0, 10.0), 0.1, offset=0) == 1.0
    assert math.isinf(knockoff_threshold(-np.arange(1.0, 50.0), 0.5))


@pytest.mark.parametrize("q", [0.05, 0.1, 0.2, 0.5])
def test_ebh_is_the_brute_force_ebh(q):
    rng = np.random.default_rng(5)
    cases = [np.zeros(8), np.full(10, 10.0), np.array([50.0, 50.0, 0.0, 20.0, 20.0, 1.0])]
    for _ in range(80):
        a = int(rng.integers(1, 60))
        e = rng.exponential(2.0, a) * (rng.uniform(size=a) < 0.5) * rng.integers(1, 40)
        if rng.uniform() < 0.5:
            e = np.round(e)
        cases.append(e)
    for e in cases:
        np.testing.assert_array_equal(ebh(e, q), ref.ebh(e, q), err_msg=str(e))


@pytest.mark.parametrize("q", [0.05, 0.1, 0.2])
def test_the_evalues_are_ren_and_barbers(q):
    for w in _statistics_cases():
        np.testing.assert_array_equal(knockoff_evalues(w, q), ref.evalues(w, q))


def test_the_statistic_is_features_minus_knockoffs():
    imp = np.arange(8.0) ** 2
    np.testing.assert_array_equal(knockoff_statistic(imp, 4), imp[:4] - imp[4:])
    with pytest.raises(ValueError, match="gave 7 importances; 8 expected"):
        knockoff_statistic(np.ones(7), 4)


# ---------------------------------------------------------------------------
# Antisymmetry: swapping a feature with its knockoff flips its statistic only
# ---------------------------------------------------------------------------


def _augmented(n=160, a=6, seed=0):
    """``[F, F~]`` on the copula scale: uniform features (two informative) and uniform
    knockoffs, with labels."""
    rng = np.random.default_rng(seed)
    F = rng.uniform(size=(n, a))
    y = (F[:, 0] + F[:, 1] + rng.normal(0, 0.2, n) > 1.0).astype(int)
    return np.hstack([F, rng.uniform(size=(n, a))]), y


@pytest.mark.parametrize(
    "make",
    [
        lambda: dmargin.ReliefF(n_neighbors=5),
        lambda: dmargin.MultiSURF(),
        lambda: dmargin.IRelief(max_iter=5, tol=0),
    ],
    ids=["ReliefF", "MultiSURF", "IRelief"],
)
def test_swapping_a_feature_with_its_knockoff_flips_its_statistic(make):
    a = 6
    aug, y = _augmented(a=a)
    selector = KnockoffSelector(make())
    W, _ = selector._statistics(aug, y)
    assert W[0] != 0 and W[1] != 0  # the informative features (I-RELIEF zeroes noise)
    for swap in ([0], [1], [3], [0, 4, 5]):
        swapped = aug.copy()
        for j in swap:
            swapped[:, [j, a + j]] = swapped[:, [a + j, j]]
        V, _ = selector._statistics(swapped, y)
        flip = np.ones(a)
        flip[swap] = -1
        np.testing.assert_allclose(V, flip * W, rtol=0, atol=1e-10, err_msg=str(swap))


def test_the_fit_uses_the_tested_statistic_on_the_samplers_knockoffs():
    aug, y = _augmented(n=200, a=12, seed=1)
    X = aug[:, :12]
    sel = KnockoffSelector(dmargin.ReliefF(n_neighbors=5), q=0.5, random_state=3).fit(X, y)
    sampler = KnockoffSampler().fit(X)
    seed = sel._seeds()[0]
    W, _ = sel._statistics(sampler.augment(X, seed), y)
    np.testing.assert_allclose(sel.statistics_, W, rtol=0, atol=1e-12)
    assert sel.knockoffs_ == "copula"
    np.testing.assert_array_equal(
        sel.selected_, np.flatnonzero(W >= ref.knockoff_threshold(W, 0.5))
    )
    np.testing.assert_array_equal(sel.get_support(indices=True), sel.selected_)
    assert sel.selected_.size > 0 and sel.transform(X).shape == (200, sel.selected_.size)
    np.testing.assert_array_equal(sel.feature_importances_, sel.statistics_)


# ---------------------------------------------------------------------------
# Calibration on a partial null
# ---------------------------------------------------------------------------


def _partial_null(seed, n=300, a=40, k=5, noise=0.1):
    """``k`` informative uniform features among ``a``; the rest independent noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, a))
    y = (X[:, :k].sum(axis=1) + rng.normal(0, noise, n) > k / 2).astype(int)
    return X, y, np.arange(k)


def _fdp_power(selected, informative):
    selected = set(int(j) for j in selected)
    false = len(selected - set(informative))
    return false / max(1, len(selected)), len(selected & set(informative)) / len(informative)


@pytest.mark.slow
def test_the_fdr_holds_on_a_partial_null_where_the_positive_statistics_do_not():
    q, draws = 0.2, 40
    fdp, power, naive = [], [], []
    for seed in range(1000, 1000 + draws):
        X, y, informative = _partial_null(seed)
        sel = KnockoffSelector(dmargin.ReliefF(), q=q, random_state=seed).fit(X, y)
        f, p = _fdp_power(sel.selected_, informative)
        fdp.append(f)
        power.append(p)
        naive.append(_fdp_power(np.flatnonzero(sel.statistics_ > 0), informative)[0])
    fdr, se = np.mean(fdp), np.std(fdp, ddof=1) / np.sqrt(draws)
    assert fdr <= q + 2 * se, (fdr, se)
    assert np.mean(power) > 0.5, np.mean(power)
    # The same statistics without the threshold: about half the noise features have
    # W > 0, so that rule's false discovery proportion is far above q.
    assert np.mean(naive) > q + 2 * se + 0.1, np.mean(naive)


# ---------------------------------------------------------------------------
# Derandomised knockoffs
# ---------------------------------------------------------------------------


def test_derandomised_knockoffs_average_the_draws_evalues():
    X, y, _ = _partial_null(7, n=200, a=20, k=6, noise=0.3)
    sel = KnockoffSelector(dmargin.ReliefF(n_neighbors=5), q=0.2, n_draws=3, random_state=0).fit(
        X, y
    )
    assert sel.statistics_.shape == (3, 20) and sel.threshold_.shape == (3,)
    want = np.mean([ref.evalues(w, 0.1) for w in sel.statistics_], axis=0)
    np.testing.assert_allclose(sel.evalues_, want, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(sel.selected_, ref.ebh(want, 0.2))
    np.testing.assert_allclose(sel.feature_importances_, sel.statistics_.mean(axis=0))
    again = KnockoffSelector(dmargin.ReliefF(n_neighbors=5), q=0.2, n_draws=3, random_state=0).fit(
        X, y
    )
    np.testing.assert_array_equal(again.statistics_, sel.statistics_)
    other = KnockoffSelector(dmargin.ReliefF(n_neighbors=5), q=0.2, n_draws=3, random_state=1).fit(
        X, y
    )
    assert not np.allclose(other.statistics_, sel.statistics_)
    # each draw's knockoffs differ
    assert not np.allclose(sel.statistics_[0], sel.statistics_[1])


# ---------------------------------------------------------------------------
# The same answer everywhere
# ---------------------------------------------------------------------------


def _assert_same_fit(a, b):
    np.testing.assert_allclose(a.statistics_, b.statistics_, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(a.selected_, b.selected_)
    assert a.threshold_ == b.threshold_ or abs(a.threshold_ - b.threshold_) <= 1e-10


def _small():
    X, y, _ = _partial_null(11, n=240, a=12, k=5, noise=0.3)
    return X, y


def _selector(**kw):
    return KnockoffSelector(dmargin.ReliefF(n_neighbors=5), **{"q": 0.2, "random_state": 4, **kw})


@pytest.mark.parametrize("chunks", [60, (50, 100, 90)])
def test_threaded_dask_with_any_chunking_gives_the_numpy_fit(chunks):
    X, y = _small()
    local = _selector().fit(X, y)
    with dask.config.set(scheduler="threads"):
        lazy = _selector().fit(
            da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=(chunks,))
        )
    _assert_same_fit(local, lazy)


@pytest.mark.cluster
def test_a_local_cluster_gives_the_numpy_fit_and_a_refit_is_never_reused(client):
    X, y = _small()
    dX, dy = da.from_array(X, chunks=(80, -1)), da.from_array(y, chunks=(80,))
    for kw in ({}, {"random_state": 9}, {"q": 0.5}):
        local = _selector(**kw).fit(X, y)
        remote = _selector(**kw).fit(dX, dy)
        _assert_same_fit(local, remote)
    local = KnockoffSelector(dmargin.MultiSURF(), q=0.2, random_state=4).fit(X, y)
    remote = KnockoffSelector(dmargin.MultiSURF(), q=0.2, random_state=4).fit(dX, dy)
    _assert_same_fit(local, remote)


@pytest.mark.spark
def test_spark_gives_the_numpy_fit(spark):
    import pandas as pd

    from dmargin.spark import fit as spark_fit

    X, y = _small()
    names = [f"f{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names).assign(label=y, row=np.arange(len(y)))
    df = spark.createDataFrame(frame).repartitionByRange(3, "row").sortWithinPartitions("row")
    remote = spark_fit(_selector(), df, "label", features=names)  # the rows in their order
    _assert_same_fit(_selector().fit(X, y), remote)
    # group knockoffs: the groups come from the same correlation
    X, y, _ = _correlated_noise(7, n=240)
    names = [f"f{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names).assign(label=y, row=np.arange(len(y)))
    df = spark.createDataFrame(frame).repartitionByRange(3, "row").sortWithinPartitions("row")
    remote = spark_fit(_selector(groups="auto"), df, "label", features=names)
    local = _selector(groups="auto").fit(X, y)
    _assert_same_fit(local, remote)
    np.testing.assert_array_equal(remote.groups_, local.groups_)
    np.testing.assert_array_equal(remote.selected_groups_, local.selected_groups_)


# ---------------------------------------------------------------------------
# Errors and cost
# ---------------------------------------------------------------------------


def test_an_estimator_without_feature_importances_is_refused():
    X, y = _small()
    with pytest.raises(
        ValueError,
        match=r"KnockoffSelector: parameter estimator=LDM\(\).*"
        "feature_importances_",
    ):
        KnockoffSelector(dmargin.LDM()).fit(X, y)


@pytest.mark.parametrize("q", [0, 1, 1.5, -0.1])
def test_q_outside_zero_one_is_refused(q):
    X, y = _small()
    with pytest.raises(
        ValueError,
        match=rf"parameter q={q} is not valid; it must be a float "
        r"in \(0, 1\)",
    ):
        KnockoffSelector(dmargin.ReliefF(), q=q).fit(X, y)


def test_settings_that_treat_features_differently_are_refused():
    X, y = _small()
    with pytest.raises(ValueError, match=r"estimator__init=.*each feature its own value"):
        KnockoffSelector(dmargin.IRelief(init=np.ones(12))).fit(X, y)


def test_discrete_features_surface_the_samplers_message():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(200, 6)).astype(float)
    y = rng.integers(0, 2, 200)
    with pytest.raises(ValueError) as selector_error:
        KnockoffSelector(dmargin.ReliefF()).fit(X, y)
    with pytest.raises(ValueError) as sampler_error:
        KnockoffSampler().fit(X)
    assert str(selector_error.value) == str(sampler_error.value)
    assert "independent" in str(selector_error.value)


def test_without_knockpy_the_error_names_the_install_line(monkeypatch):
    X, y = _small()
    monkeypatch.setitem(sys.modules, "knockpy", None)
    monkeypatch.setitem(sys.modules, "knockpy.smatrix", None)
    with pytest.raises(ImportError, match=r"dmargin\[knockoffs\]"):
        KnockoffSelector(dmargin.ReliefF()).fit(X, y)


def test_nothing_selected_is_an_empty_selection_without_error():
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(150, 8))
    y = rng.integers(0, 2, 150)
    sel = KnockoffSelector(dmargin.ReliefF(), q=0.1, random_state=0).fit(X, y)
    assert sel.selected_.size == 0 and math.isinf(sel.threshold_)
    assert not sel.get_support().any()


def test_the_cost_is_one_fit_on_twice_the_features_and_the_s_matrix():
    inner = dmargin.fit_cost(dmargin.ReliefF(), 5000, 200)
    cost = dmargin.fit_cost(KnockoffSelector(dmargin.ReliefF()), 5000, 100)
    assert cost.operations == inner.operations + 5000 * 100  # + the knockoffs' N A
    assert cost.seconds > inner.seconds
    assert "1 fit on 2 x 100 features" in cost.formula and "S matrix" in cost.formula
    assert "knockoffs' passes" in cost.formula
    three = dmargin.fit_cost(
        KnockoffSelector(dmargin.ReliefF(), n_draws=3, smatrix="equicorrelated"), 5000, 100
    )
    assert three.operations == 3 * (inner.operations + 5000 * 100)
    assert "closed form" in three.formula


def test_a_long_fit_warns_once_and_the_inner_fits_stay_quiet(monkeypatch):
    import warnings

    from dmargin import _cost

    X, y = _small()
    monkeypatch.setattr(_cost, "LONG_FIT_SECONDS", 0.0)  # as if it were hours
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _selector().fit(X, y)
    long = [w for w in caught if issubclass(w.category, dmargin.LongFitWarning)]
    assert len(long) == 1 and "KnockoffSelector.fit" in str(long[0].message)
    assert long[0].filename == __file__


def test_pandas_names_and_the_plain_knockoff_filter():
    import pandas as pd

    X, y = _small()
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    sel = _selector(q=0.5).fit(frame, y)
    assert list(sel.feature_names_in_) == list(frame.columns)
    assert list(sel.get_feature_names_out()) == [f"c{j}" for j in sel.selected_]
    plain = _selector(q=0.5, offset=0).fit(X, y)
    np.testing.assert_allclose(plain.statistics_, sel.statistics_, rtol=0, atol=1e-12)
    assert plain.threshold_ == ref.knockoff_threshold(plain.statistics_, 0.5, offset=0)
    assert set(sel.selected_) <= set(plain.selected_)  # offset 0 never selects fewer


# ---------------------------------------------------------------------------
# Group knockoffs
# ---------------------------------------------------------------------------


def _group_sums(W, groups):
    """``W_g``: the brute-force sum of the features' statistics in each group."""
    return np.array(
        [sum(W[j] for j in range(len(W)) if groups[j] == g) for g in range(max(groups) + 1)]
    )


@pytest.mark.parametrize(
    "make",
    [lambda: dmargin.ReliefF(n_neighbors=5), lambda: dmargin.MultiSURF()],
    ids=["ReliefF", "MultiSURF"],
)
def test_swapping_a_group_with_its_knockoffs_flips_the_groups_statistic_only(make):
    a, groups = 6, [0, 0, 1, 2, 2, 2]
    aug, y = _augmented(a=a)
    selector = KnockoffSelector(make())
    W, _ = selector._statistics(aug, y)
    Wg = _group_sums(W, groups)
    assert Wg[0] != 0
    for g in range(3):
        members = [j for j in range(a) if groups[j] == g]
        swapped = aug.copy()
        for j in members:
            swapped[:, [j, a + j]] = swapped[:, [a + j, j]]
        V, _ = selector._statistics(swapped, y)
        flip = np.ones(3)
        flip[g] = -1
        np.testing.assert_allclose(_group_sums(V, groups), flip * Wg, rtol=0, atol=1e-10)


def _correlated_noise(seed, n=300, k=6, extra=12, rho=0.8):
    """``k`` informative uniform features, ``k`` noise features each correlated ``rho``
    (normal scores) with one of them, ``extra`` independent noise features; ``y`` from
    the informative ones only."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, k))
    twins = rho * Z + np.sqrt(1 - rho**2) * rng.standard_normal((n, k))
    X = norm_cdf(np.hstack([Z, twins, rng.standard_normal((n, extra))]))
    y = (X[:, :k].sum(axis=1) + rng.normal(0, 0.1, n) > k / 2).astype(int)
    return X, y, np.arange(k)


def norm_cdf(Z):
    from scipy.stats import norm

    return norm.cdf(Z)


def test_group_fits_threshold_the_group_statistics():
    X, y, _ = _correlated_noise(3)
    groups = [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5] + list(range(6, 18))
    sel = KnockoffSelector(
        dmargin.ReliefF(n_neighbors=5), q=0.3, random_state=2, groups=np.array(groups) + 10
    ).fit(X, y)
    np.testing.assert_array_equal(sel.groups_, groups)
    Wg = _group_sums(sel.statistics_, groups)
    np.testing.assert_allclose(sel.group_statistics_, Wg, rtol=0, atol=1e-12)
    assert sel.threshold_ == ref.knockoff_threshold(Wg, 0.3)
    np.testing.assert_array_equal(sel.selected_groups_, np.flatnonzero(Wg >= sel.threshold_))
    want = [j for j in range(24) if groups[j] in set(sel.selected_groups_)]
    np.testing.assert_array_equal(sel.selected_, want)
    assert sel.selected_groups_.size > 0
    np.testing.assert_array_equal(sel.get_support(indices=True), sel.selected_)
    # the groups that "auto" finds here: each informative feature with its twin
    auto = KnockoffSelector(
        dmargin.ReliefF(n_neighbors=5), q=0.3, random_state=2, groups="auto"
    ).fit(X, y)
    np.testing.assert_array_equal(auto.groups_, groups)
    np.testing.assert_array_equal(auto.statistics_, sel.statistics_)


def test_derandomised_group_knockoffs_take_the_groups_evalues():
    X, y, _ = _correlated_noise(4)
    sel = KnockoffSelector(
        dmargin.ReliefF(n_neighbors=5), q=0.4, n_draws=3, random_state=1, groups="auto"
    ).fit(X, y)
    G = sel.groups_.max() + 1
    assert sel.statistics_.shape == (3, 24) and sel.group_statistics_.shape == (3, G)
    Wg = np.array([_group_sums(w, list(sel.groups_)) for w in sel.statistics_])
    np.testing.assert_allclose(sel.group_statistics_, Wg, rtol=0, atol=1e-12)
    want = np.mean([ref.evalues(w, 0.2) for w in Wg], axis=0)
    np.testing.assert_allclose(sel.evalues_, want, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(sel.selected_groups_, ref.ebh(want, 0.4))
    np.testing.assert_array_equal(
        sel.selected_, np.flatnonzero(np.isin(sel.groups_, sel.selected_groups_))
    )


def test_without_groups_every_feature_is_its_own_group():
    X, y = _small()
    sel = _selector().fit(X, y)
    np.testing.assert_array_equal(sel.groups_, np.arange(12))
    np.testing.assert_array_equal(sel.group_statistics_, sel.statistics_)
    np.testing.assert_array_equal(sel.selected_groups_, sel.selected_)
    single = _selector(groups=np.arange(12)).fit(X, y)
    _assert_same_fit(sel, single)


@pytest.mark.slow
def test_the_group_fdr_holds_with_noise_correlated_with_the_signal():
    # A group with no informative member is a false discovery; the twins of the
    # informative features share their groups (the null is the group's).
    q, draws = 0.2, 40
    fdp, power = [], []
    for seed in range(2000, 2000 + draws):
        X, y, informative = _correlated_noise(seed, extra=24)
        sel = KnockoffSelector(dmargin.ReliefF(), q=q, random_state=seed, groups="auto").fit(X, y)
        true_groups = set(sel.groups_[informative].tolist())
        chosen = set(sel.selected_groups_.tolist())
        fdp.append(len(chosen - true_groups) / max(1, len(chosen)))
        power.append(len(chosen & true_groups) / len(true_groups))
    fdr, se = np.mean(fdp), np.std(fdp, ddof=1) / np.sqrt(draws)
    assert fdr <= q + 2 * se, (fdr, se)
    assert np.mean(power) > 0.5, np.mean(power)


def test_groups_on_threaded_dask_give_the_numpy_fit():
    X, y, _ = _correlated_noise(5, n=240)
    local = _selector(groups="auto").fit(X, y)
    with dask.config.set(scheduler="threads"):
        lazy = _selector(groups="auto").fit(
            da.from_array(X, chunks=(70, -1)), da.from_array(y, chunks=(70,))
        )
    _assert_same_fit(local, lazy)
    np.testing.assert_array_equal(lazy.groups_, local.groups_)
    np.testing.assert_array_equal(lazy.selected_groups_, local.selected_groups_)


@pytest.mark.cluster
def test_groups_on_a_local_cluster_give_the_numpy_fit(client):
    X, y, _ = _correlated_noise(6, n=240)
    dX, dy = da.from_array(X, chunks=(80, -1)), da.from_array(y, chunks=(80,))
    for make in (lambda: dmargin.ReliefF(n_neighbors=5), dmargin.MultiSURF):
        local = KnockoffSelector(make(), q=0.3, random_state=4, groups="auto").fit(X, y)
        remote = KnockoffSelector(make(), q=0.3, random_state=4, groups="auto").fit(dX, dy)
        _assert_same_fit(local, remote)
        np.testing.assert_array_equal(remote.groups_, local.groups_)
        np.testing.assert_allclose(
            remote.group_statistics_, local.group_statistics_, rtol=0, atol=1e-10
        )
