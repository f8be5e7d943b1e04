"""Feature weights in the distance: ``fit(X, y, feature_weights=w)`` (skrebate's
``fit(X, y, weights=w)``) for ReliefF, the SURF family and the SWRF family.

Against skrebate 0.8.4 itself where it defines the weighted distance (pure discrete or
pure continuous data without missing values, 1e-10); with missing values skrebate
divides the weighted mean by the number of observed features a second time (accident 6
of ``tests/skrebate_reference.py``): dmargin takes the weighted mean, checked against
the transcription with that division removed.
"""

import numpy as np
import pandas as pd
import pytest

import dmargin
from tests import skrebate_reference as ref
from tests.test_skrebate_reference import dataset, skrebate_fit

ATOL = 1e-10
ESTIMATORS = ["ReliefF", "SURF", "SURFstar", "MultiSURF", "MultiSURFstar", *ref.SWRF_VARIANTS]


def _weights(p, seed=3):
    return np.random.default_rng(seed).uniform(0.05, 1.0, p)


def _ours(name, X, y, w, **params):
    if name == "ReliefF":
        params = {"n_neighbors": 10, "discrete_threshold": 10, **params}
    return getattr(dmargin, name)(**params).fit(X, y, feature_weights=w).feature_importances_


def _theirs(name, X, y, w):
    params = {"n_neighbors": 10} if name == "ReliefF" else {}
    return skrebate_fit(name, X, y, weights=w, **params).feature_importances_


@pytest.mark.parametrize(
    "data", ["gametes", "gametes-3class", "continuous-multiclass", "gametes-continuous-endpoint"]
)
@pytest.mark.parametrize("name", ESTIMATORS)
def test_equals_skrebate(name, data):
    if name == "ReliefF" and data in ("gametes-3class", "continuous-multiclass"):
        pytest.skip(
            "with more classes ReliefF keeps Weka's miss weights P(C) / (1 - P(c)), "
            "which skrebate does not: they differ unweighted too (its docstring)"
        )
    X, y = dataset(data)
    w = _weights(X.shape[1])
    ours = _ours(name, X, y, w)
    np.testing.assert_allclose(ours, _theirs(name, X, y, w), rtol=0, atol=ATOL)
    # the weights matter
    assert np.abs(ours - _ours(name, X, y, None)).max() > 1e-6


@pytest.mark.parametrize("data", ["gametes-missing", "missing-multiclass"])
@pytest.mark.parametrize("variant", ["SWRF", "MultiSWRFstar", "MultiSWRFDB"])
def test_missing_values_take_the_weighted_mean(variant, data):
    X, y = dataset(data)
    if data == "missing-multiclass":
        X = X[:, 3:]  # its continuous features: skrebate weighs pure data only
    w = _weights(X.shape[1])
    ours = _ours(variant, X, y, w)
    expected = ref.swrf_family(
        X, y, variant, weights=w, weighted_mean=True, whole_matrix=True
    ).feature_importances_
    np.testing.assert_allclose(ours, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_uniform_weights_change_nothing(name):
    """Equal weights scale every distance by one factor, which no threshold, neighbour
    order or weight curve sees: the unweighted scores (mixed data included)."""
    X, y = dataset("gametes-mixed")
    plain = _ours(name, X, y, None)
    np.testing.assert_allclose(
        _ours(name, X, y, np.full(X.shape[1], 2.5)), plain, rtol=1e-12, atol=ATOL
    )


def test_genotypes_with_weights_take_the_float_path():
    X, y = dataset("gametes")
    genotypes = X.astype(np.uint8)
    w = _weights(X.shape[1])
    est = dmargin.MultiSURF().fit(genotypes, y, feature_weights=w)
    assert est.compact_dtype_ is None
    np.testing.assert_allclose(
        est.feature_importances_, _ours("MultiSURF", X, y, w), rtol=0, atol=ATOL
    )
    assert dmargin.MultiSURF().fit(genotypes, y).compact_dtype_ == np.uint8


def test_weights_as_a_list_or_series_are_taken():
    X, y = dataset("gametes")
    w = _weights(X.shape[1])
    expected = _ours("SURF", X, y, w)
    np.testing.assert_allclose(_ours("SURF", X, y, list(w)), expected, rtol=0, atol=0)
    np.testing.assert_allclose(_ours("SURF", X, y, pd.Series(w)), expected, rtol=0, atol=0)


@pytest.mark.parametrize(
    "weights, message",
    [
        (np.ones(3), r"feature_weights has shape \(3,\); X has 20 features"),
        (np.r_[np.ones(19), -1.0], r"feature_weights\[19\] is -1\.0.*finite and non-negative"),
        (np.r_[np.nan, np.ones(19)], r"feature_weights\[0\] is nan"),
        (np.zeros(20), "all 0"),
        (np.array(["a"] * 20), "must be numbers"),
    ],
)
def test_bad_weights_are_refused(weights, message):
    X, y = dataset("gametes")
    with pytest.raises(ValueError, match=message):
        dmargin.MultiSURF().fit(X, y, feature_weights=weights)


def test_stir_refuses_weights():
    X, y = dataset("gametes")
    with pytest.raises(ValueError, match="unweighted distance only"):
        dmargin.ReliefF(pvalues=True).fit(X, y, feature_weights=_weights(20))


@pytest.mark.parametrize("name", ["ReliefF", "MultiSURF", "MultiSWRFstar"])
def test_dask_rows_equal_numpy_rows(name):
    import dask
    import dask.array as da

    X, y = dataset("gametes-mixed")
    w = _weights(X.shape[1])
    with dask.config.set(scheduler="threads"):
        on_dask = _ours(
            name,
            da.from_array(X, chunks=(17, -1)),
            da.from_array(y, chunks=17),
            da.from_array(w, chunks=7),
        )
    np.testing.assert_allclose(on_dask, _ours(name, X, y, w), rtol=0, atol=ATOL)
