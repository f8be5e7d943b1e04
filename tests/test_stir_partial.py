"""STIR on partial nulls, and p-values that a fit did not compute.

STIR's law holds for a feature unrelated to the labels in a neighbour graph that no
feature shapes: once Simes' combination of its p-values rejects the global null,
the fit keeps ``global_pvalue_`` and declines the per-feature p-values with the
domain check's warning.  Reading a p-value attribute a fit left out raises
``dmargin.PValuesUnavailableError`` (an AttributeError) saying why, never a
``TypeError`` from ``None <= 0.05``.  The warning's shape figures name the rows
they were computed on, and those rows reproduce them.
"""

import pickle
import re
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

import dmargin
from dmargin._pvalues import raw_pvalues, simes
from tests.reference_stir import benjamini_hochberg

UNAVAILABLE = ("t_statistics_", "pvalues_", "qvalues_", "global_pvalue_")


def simes_brute_force(p):
    """``min_k A p_(k) / k`` over the sorted p-values, capped at 1, by a loop."""
    p = sorted(float(v) for v in p)
    return min(1.0, min(len(p) * v / (k + 1) for k, v in enumerate(p)))


def test_simes_by_brute_force():
    rng = np.random.default_rng(0)
    for size in (1, 2, 7, 50):
        for _ in range(20):
            p = rng.random(size) ** rng.uniform(0.5, 4)
            assert simes(p) == pytest.approx(simes_brute_force(p), rel=1e-12)
            # The smallest Benjamini-Hochberg q-value is Simes' combination.
            assert simes(p) == pytest.approx(benjamini_hochberg(p).min(), rel=1e-12)
    assert simes([1.0, 1.0]) == 1.0


def _partial_null(seed=0, n=400):
    """One informative feature among eight uniform ones, classes 1:1 (inside
    STIR's calibrated domain)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 8))
    y = rng.permutation(np.repeat([0, 1], n // 2))
    X[:, 0] += 0.5 * y
    return X, y


@pytest.mark.parametrize("method", ["ReliefF", "MultiSURF"])
def test_a_feature_with_signal_declines_the_others_pvalues(method):
    X, y = _partial_null()
    est = getattr(dmargin, method)(pvalues=True)
    with pytest.warns(dmargin.UncalibratedPValuesWarning, match="carries signal") as record:
        est.fit(X, y)
    message = str(record[0].message)
    assert "column 0 carries signal" in message and "global_pvalue_" in message
    assert f"{method}(n_permutations=B)" in message and "KnockoffSelector" in message
    assert record[0].filename == __file__  # points at the user's call
    for name in ("t_statistics_", "pvalues_", "qvalues_"):
        assert not hasattr(est, name)
    # The global test stays: Simes' combination of the raw p-values.
    t, p = raw_pvalues(est)
    assert p.argmin() == 0 and t.argmax() == 0
    assert est.global_pvalue_ == pytest.approx(simes_brute_force(p), rel=1e-12)
    assert est.global_pvalue_ <= 0.05
    with pytest.raises(
        dmargin.PValuesUnavailableError,
        match=rf"{method}\.qvalues_ is not available: .*carries signal.*"
        rf"{method}\(n_permutations=B\).*KnockoffSelector",
    ):
        est.qvalues_ <= 0.05


@pytest.mark.parametrize("method", ["ReliefF", "MultiSURF"])
def test_on_the_global_null_the_pvalues_come_back(method):
    rng = np.random.default_rng(1)
    X = rng.random((300, 8))
    y = rng.permutation(np.repeat([0, 1], 150))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = getattr(dmargin, method)(pvalues=True).fit(X, y)
    assert est.pvalues_.shape == est.qvalues_.shape == est.t_statistics_.shape == (8,)
    assert est.global_pvalue_ == pytest.approx(simes_brute_force(est.pvalues_), rel=1e-12)
    assert est.global_pvalue_ == pytest.approx(est.qvalues_.min(), rel=1e-12)
    assert est.global_pvalue_ > 0.05
    raw = raw_pvalues(est)
    np.testing.assert_array_equal(raw[1], est.pvalues_)


def test_a_refit_without_signal_forgets_the_decline():
    X, y = _partial_null()
    est = dmargin.ReliefF(pvalues=True)
    with pytest.warns(dmargin.UncalibratedPValuesWarning):
        est.fit(X, y)
    null = np.random.default_rng(1).random((300, 8))
    est.fit(null, np.random.default_rng(1).permutation(np.repeat([0, 1], 150)))
    assert est.pvalues_.shape == (8,) and np.array_equal(raw_pvalues(est)[1], est.pvalues_)


@pytest.mark.parametrize("method", ["ReliefF", "MultiSURF"])
def test_pvalues_never_asked_for_raise_with_the_reason(method):
    X, y = _partial_null()
    unfitted = getattr(dmargin, method)()
    with pytest.raises(AttributeError) as error:
        unfitted.pvalues_
    assert not isinstance(error.value, dmargin.PValuesUnavailableError)
    est = clone(unfitted).fit(X, y)
    for name in UNAVAILABLE:
        assert not hasattr(est, name)
        assert getattr(est, name, None) is None
    with pytest.raises(
        dmargin.PValuesUnavailableError,
        match=rf"{method}\.pvalues_ is not available: {method} was fitted with "
        r"pvalues=False and n_permutations=0",
    ):
        X[:, est.pvalues_ <= 0.05]
    check_is_fitted(est)
    again = pickle.loads(pickle.dumps(est))
    with pytest.raises(dmargin.PValuesUnavailableError, match="pvalues=False"):
        again.qvalues_
    np.testing.assert_array_equal(again.feature_importances_, est.feature_importances_)
    assert not hasattr(clone(est), "pvalues_")
    assert issubclass(dmargin.PValuesUnavailableError, AttributeError)
    with pytest.raises(AttributeError, match="no attribute 'something_else_'"):
        est.something_else_


def test_permutation_pvalues_say_why_they_have_no_t_statistics():
    X, y = _partial_null()
    est = dmargin.MultiSURF(n_permutations=9, random_state=0).fit(X, y)
    assert est.pvalues_.min() == 0.1
    assert est.global_pvalue_ == pytest.approx(simes_brute_force(est.pvalues_))
    with pytest.raises(dmargin.PValuesUnavailableError, match="come without STIR's t-statistics"):
        est.t_statistics_


def test_a_declined_domain_says_so_when_read():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 6))
    X[:, 2] = np.exp(2 * X[:, 2])
    y = rng.permutation(np.repeat([0, 1], 150))
    with pytest.warns(dmargin.UncalibratedPValuesWarning, match="skewed"):
        est = dmargin.MultiSURF(pvalues=True).fit(X, y)
    with pytest.raises(
        dmargin.PValuesUnavailableError,
        match=r"declined them: STIR's law has not been shown calibrated on 1 "
        r"skewed feature",
    ):
        est.pvalues_


# ---------------------------------------------------------------------------
# The warning's figures, from the rows it names
# ---------------------------------------------------------------------------


def _rows_of(message, est):
    """The row positions the message's recipe names."""
    found = re.search(r"numpy\.linspace\((\d+), (\d+), (\d+)\)", message)
    rows = np.linspace(*map(int, found.groups())).round().astype(int)
    return est.anchor_indices_[rows] if "anchor_indices_[" in message else rows


@pytest.mark.parametrize("n_anchors", [None, 300])
def test_the_skewness_in_the_warning_is_reproducible(n_anchors):
    rng = np.random.default_rng(4)
    X = rng.random((569, 5))
    X[:, 3] = np.exp(3 * X[:, 3]) * (1 + rng.random(569))
    y = rng.permutation(np.repeat([0, 1], [284, 285]))
    est = dmargin.MultiSURF(pvalues=True, n_anchors=n_anchors, random_state=0)
    with pytest.warns(dmargin.UncalibratedPValuesWarning) as record:
        est.fit(X, y)
    message = str(record[0].message)
    if n_anchors is None:
        assert (
            "in the 200 evenly spaced rows numpy.linspace(0, 568, 200).round() of the 569"
            in message
        )
    else:
        assert "anchor_indices_[numpy.linspace(0, 299, 200).round().astype(int)]" in message
    figure = float(re.search(r"column 3 of skewness (-?[\d.]+)", message).group(1))
    assert figure == round(stats.skew(X[_rows_of(message, est), 3]), 2)
    assert abs(stats.skew(X[:, 3]) - figure) > 0.005  # the whole column's differs


def test_the_kurtosis_in_the_warning_is_reproducible():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((569, 4))
    y = rng.permutation(np.repeat([0, 1], [284, 285]))
    with pytest.warns(dmargin.UncalibratedPValuesWarning, match="scipy.stats.kurtosis") as record:
        est = dmargin.ReliefF(pvalues=True).fit(X, y)
    message = str(record[0].message)
    found = re.search(r"column (\d) of excess kurtosis (-?[\d.]+)", message)
    column, figure = int(found.group(1)), float(found.group(2))
    assert figure == round(stats.kurtosis(X[_rows_of(message, est), column]), 2)


def test_with_every_row_sampled_the_warning_says_all_rows():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((150, 4))
    X[:, 1] = np.exp(2 * X[:, 1])
    y = np.repeat([0, 1], 75)
    with pytest.warns(dmargin.UncalibratedPValuesWarning, match="in all 150 rows") as record:
        dmargin.ReliefF(pvalues=True).fit(X, y)
    figure = float(re.search(r"skewness (-?[\d.]+)", str(record[0].message)).group(1))
    assert figure == round(stats.skew(X[:, 1]), 2)
