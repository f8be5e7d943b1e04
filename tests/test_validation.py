"""Bad input gets a clear error; legitimate oddities get documented behaviour."""

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dmargin

ALL = [dmargin.IRelief, dmargin.OnlineIRelief, dmargin.ReliefF, dmargin.Relief]


@pytest.fixture
def xy():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 15)
    X = rng.normal(size=(30, 4))
    X[:, 0] += y
    return X, y


#: ReliefF, IRelief and OnlineIRelief read NaN as a missing value (tests/test_missing.py);
#: Relief refuses it.
TAKE_NAN = (dmargin.ReliefF, dmargin.IRelief, dmargin.OnlineIRelief)
NO_NAN = [cls for cls in ALL if cls not in TAKE_NAN]


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_X_is_rejected(cls, bad, xy):
    if cls in TAKE_NAN and np.isnan(bad):
        pytest.skip(f"NaN is a missing value for {cls.__name__}")
    X, y = xy
    X = X.copy()
    X[3, 1] = bad
    with pytest.raises(ValueError, match="NaN|infinity|infinite"):
        cls().fit(X, y)


@pytest.mark.parametrize("cls", NO_NAN)
def test_non_finite_dask_X_is_rejected(cls, xy, threaded):
    X, y = xy
    X = X.copy()
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite.*Impute"):
        cls().fit(da.from_array(X, chunks=10), da.from_array(y, chunks=10))


def test_infinite_dask_X_is_rejected_where_nan_is_missing(xy, threaded):
    X, y = xy
    X = X.copy()
    X[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinite values in column 1"):
        dmargin.ReliefF().fit(da.from_array(X, chunks=10), da.from_array(y, chunks=10))


@pytest.mark.parametrize("cls", ALL)
def test_single_class_is_rejected(cls, xy):
    X, _ = xy
    with pytest.raises(ValueError, match="single class.*at least two classes"):
        cls().fit(X, np.ones(len(X)))


@pytest.mark.parametrize("cls", ALL)
def test_mismatched_lengths_are_rejected(cls, xy):
    X, y = xy
    with pytest.raises(ValueError, match="30 rows but y has 29 labels"):
        cls().fit(X, y[:-1])


def test_mismatched_dask_lengths_are_rejected(xy):
    X, y = xy
    with pytest.raises(ValueError, match="30 rows but y has 29 labels"):
        dmargin.IRelief().fit(da.from_array(X, chunks=10), da.from_array(y[:-1], chunks=10))


@pytest.mark.parametrize("cls", ALL)
def test_non_numeric_columns_are_named(cls, xy):
    X, y = xy
    frame = pd.DataFrame(X, columns=list("abcd")).assign(city=["x"] * 30)
    with pytest.raises(ValueError, match=r"\['city'\] are not numeric"):
        cls().fit(frame, y)


def test_non_numeric_dask_dataframe_columns_are_named(xy):
    X, y = xy
    frame = pd.DataFrame(X, columns=list("abcd")).assign(city=["x"] * 30)
    with pytest.raises(ValueError, match=r"\['city'\] are not numeric"):
        dmargin.IRelief().fit(dd.from_pandas(frame, npartitions=2), y)


def test_unknown_dask_chunk_sizes_name_the_fix(xy):
    X, y = xy
    Xd = da.from_array(X, chunks=10)
    Xd = Xd[Xd[:, 0] > -100]  # boolean mask: row chunk sizes become unknown
    with pytest.raises(ValueError, match="unknown chunk sizes.*compute_chunk_sizes"):
        dmargin.IRelief().fit(Xd, y)


@pytest.mark.parametrize("cls", ALL)
def test_missing_labels_are_rejected(cls, xy):
    X, y = xy
    y = y.astype(float)
    y[4] = np.nan
    with pytest.raises(ValueError, match="1 missing labels"):
        cls().fit(X, y)
    labels = np.array(["a", "b"] * 15, dtype=object)
    labels[2] = None
    with pytest.raises(ValueError, match="1 missing labels"):
        cls().fit(X, labels)


def test_two_dimensional_y_is_rejected(xy):
    X, y = xy
    with pytest.raises(ValueError, match="y should be a 1d array"):
        dmargin.IRelief().fit(X, np.column_stack([y, y]))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"sigma": 0}, "sigma=0 is not valid"),
        ({"sigma": -1.0}, "sigma=-1.0"),
        ({"max_iter": 0}, "max_iter=0"),
        ({"multiclass": "ovr"}, "one of 'margin', 'relieff'"),
        ({"scale": "standard"}, "scale='standard'"),
        ({"init": "ones"}, "init='ones'"),
        ({"n_features_to_select": 0}, "n_features_to_select=0"),
        ({"tol": float("nan")}, "tol=nan"),
    ],
)
def test_bad_parameters_are_named(params, match, xy):
    with pytest.raises(ValueError, match=match):
        dmargin.IRelief(**params).fit(*xy)


def test_bad_initial_weights(xy):
    X, y = xy
    with pytest.raises(ValueError, match="init must be 4 finite nonnegative weights"):
        dmargin.IRelief(init=[1.0, -1.0, 0.0, 0.0]).fit(X, y)
    with pytest.raises(ValueError, match="not all zero"):
        dmargin.IRelief(init=np.zeros(4)).fit(X, y)


def test_partial_fit_rejects_unseen_labels(xy):
    X, y = xy
    est = dmargin.OnlineIRelief().partial_fit(X, y)
    with pytest.raises(ValueError, match=r"labels \[7\] not seen.*classes="):
        est.partial_fit(X, np.full(30, 7))


def test_transform_checks_width(xy):
    X, y = xy
    est = dmargin.ReliefF().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :3])


# --- legitimate oddities -----------------------------------------------------


@pytest.mark.parametrize("cls", ALL)
def test_constant_feature_gets_zero_weight(cls, xy):
    X, y = xy
    X = np.column_stack([X, np.full(30, 7.0)])
    w = cls().fit(X, y).feature_importances_
    assert np.all(np.isfinite(w))
    assert w[-1] == 0.0


@pytest.mark.parametrize("cls", ALL)
def test_duplicate_rows_are_fine(cls, xy):
    X, y = xy
    X2, y2 = np.vstack([X, X[:5]]), np.concatenate([y, y[:5]])
    assert np.all(np.isfinite(cls().fit(X2, y2).feature_importances_))


def test_one_sample_class_is_treated_as_an_outlier(xy):
    """Documented: with outlier handling a sample alone in its class has no
    hits, so gamma = 0 and it contributes nothing; adding it changes nothing."""
    X, y = xy
    base = dmargin.IRelief(max_iter=5, tol=0, scale=None)
    lone = dmargin.IRelief(max_iter=5, tol=0, scale=None)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w0 = base.fit(X, y).feature_importances_
        X3 = np.vstack([X, [[50.0, 50.0, 50.0, 50.0]]])
        w1 = lone.fit(X3, np.append(y, 2)).feature_importances_
    # Its only effect on the others is as a far-away miss: negligible weight.
    np.testing.assert_allclose(w0, w1, atol=1e-12)


def test_pandas_feature_names_are_kept(xy):
    X, y = xy
    frame = pd.DataFrame(X, columns=["w", "x", "y", "z"])
    est = dmargin.IRelief(n_features_to_select=2).fit(frame, y)
    assert list(est.feature_names_in_) == ["w", "x", "y", "z"]
    assert list(est.get_feature_names_out()) == list(
        np.array(["w", "x", "y", "z"])[est.get_support()]
    )


def test_dask_dataframe_feature_names_are_kept(xy, threaded):
    X, y = xy
    frame = dd.from_pandas(pd.DataFrame(X, columns=["w", "x", "y", "z"]), npartitions=3)
    est = dmargin.ReliefF().fit(frame, dd.from_pandas(pd.Series(y), npartitions=3))
    assert list(est.feature_names_in_) == ["w", "x", "y", "z"]
    np.testing.assert_allclose(
        est.feature_importances_, dmargin.ReliefF().fit(X, y).feature_importances_, atol=1e-12
    )


def test_string_labels(xy):
    X, y = xy
    labels = np.where(y == 1, "tumour", "normal")
    a = dmargin.IRelief().fit(X, labels)
    b = dmargin.IRelief().fit(X, y)
    assert list(a.classes_) == ["normal", "tumour"]
    np.testing.assert_allclose(a.feature_importances_, b.feature_importances_, atol=0)


@pytest.mark.parametrize("k, expected", [(None, "positive"), (2, 2), (0.5, 2), (1.0, 4)])
def test_n_features_to_select(k, expected, xy):
    X, y = xy
    est = dmargin.IRelief(n_features_to_select=k).fit(X, y)
    support = est.get_support()
    if expected == "positive":
        np.testing.assert_array_equal(support, est.feature_importances_ > 0)
    else:
        assert support.sum() == expected
        top = np.argsort(-est.feature_importances_, kind="stable")[:expected]
        assert set(np.flatnonzero(support)) == set(top)


# ---------------------------------------------------------------------------
# Dask labels get the numpy checks; complex input is refused (issue 12)
# ---------------------------------------------------------------------------


def _dask(X, y, rows=10):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


# ReliefF takes a continuous target (skrebate's continuous endpoint; tests/test_regression.py).
@pytest.mark.parametrize("cls", [c for c in ALL if c is not dmargin.ReliefF])
def test_continuous_dask_labels_are_rejected_as_numpy_ones(cls, xy, threaded):
    X, _ = xy
    y = np.random.default_rng(3).normal(size=len(X))  # 30 distinct floats: not classes
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        cls().fit(X, y)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        cls().fit(*_dask(X, y))


def test_continuous_parquet_labels_are_rejected(tmp_path, xy, threaded):
    X, _ = xy
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame["label"] = np.random.default_rng(3).normal(size=len(X))
    frame.to_parquet(tmp_path / "d.parquet", row_group_size=7)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        dmargin.IRelief().fit(*dmargin.read_parquet(tmp_path / "d.parquet", "label"))


def test_integer_valued_float_dask_labels_are_classes(xy, threaded):
    X, y = xy
    est = dmargin.ReliefF().fit(*_dask(X, y.astype(float)))
    np.testing.assert_allclose(
        est.feature_importances_, dmargin.ReliefF().fit(X, y).feature_importances_, atol=1e-15
    )
    np.testing.assert_array_equal(est.classes_, [0.0, 1.0])


def test_missing_and_mixed_dask_labels_are_rejected(xy, threaded):
    X, y = xy
    labels = np.where(y == 1, "yes", "no").astype(object)
    labels[4] = None
    with pytest.raises(ValueError, match="1 missing labels"):
        dmargin.IRelief().fit(*_dask(X, labels))
    labels[4] = 7  # a number among strings, in one block and across blocks
    with pytest.raises(ValueError, match="mixes label types"):
        dmargin.IRelief().fit(*_dask(X, labels))
    labels = np.where(y == 1, "yes", "no").astype(object)
    labels[20:] = 1
    with pytest.raises(ValueError, match="mixes label types"):
        dmargin.IRelief().fit(*_dask(X, labels))


@pytest.mark.parametrize("cls", ALL)
def test_complex_dask_input_is_refused(cls, xy, threaded):
    X, y = xy
    Xd, yd = _dask(X.astype(complex), y)
    with pytest.raises(ValueError, match="complex"):
        cls().fit(Xd, yd)
    with pytest.raises(ValueError, match="complex"):
        cls().fit(X.astype(complex), y)  # the numpy path, for comparison
    with pytest.raises(ValueError, match="complex"):
        cls().fit(*_dask(X, y.astype(complex)))


def test_mixed_collection_types_compute_in_order(threaded):
    """dask 2026.8's compute reorders arrays and Delayed; dmargin's does not."""
    import dask

    from dmargin._dask import compute

    X = da.ones((6, 2), chunks=2)
    d = dask.delayed(lambda: "D")()
    out = compute(X.sum(), d, X.min(axis=0), "plain", X.max())
    assert out[0] == 12.0 and out[1] == "D" and out[3] == "plain" and out[4] == 1.0
    np.testing.assert_array_equal(out[2], [1.0, 1.0])


# ---------------------------------------------------------------------------
# Values near the float limit (issue 12)
# ---------------------------------------------------------------------------


def _separable():
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1], 20)
    X = rng.uniform(-1, 1, size=(40, 4))
    X[:, 0] = np.where(y == 1, 1.0, -1.0)  # separates the classes perfectly
    return X, y


def _huge(X, factor=1e308):
    X = X.copy()
    X[:, 0] *= factor
    return X


SCALED = [
    pytest.param(lambda: dmargin.IRelief(max_iter=5, tol=0), id="IRelief"),
    pytest.param(lambda: dmargin.ReliefF(n_neighbors=3), id="ReliefF"),
    pytest.param(lambda: dmargin.Relief(), id="Relief"),
    pytest.param(lambda: dmargin.OnlineIRelief(random_state=0, n_passes=2), id="OnlineIRelief"),
    pytest.param(lambda: dmargin.Immigrate(max_iter=3, tol=0), id="Immigrate"),
    pytest.param(lambda: dmargin.LDMRFE(2), id="LDMRFE"),
    pytest.param(lambda: dmargin.SBSMF(2, n_estimators=10), id="SBSMF"),
]


def _result(est):
    for name in ("feature_importances_", "ranking_"):
        if hasattr(est, name):
            return np.asarray(getattr(est, name), dtype=float)
    raise AssertionError(est)


@pytest.mark.parametrize("make", SCALED)
@pytest.mark.parametrize("factor", [1e308, -1.7e308, 1e200])
def test_columns_near_the_float_limit_rank_as_unit_columns(make, factor):
    """A +-1e308 column is scaled as a +-1 column: same weights, no NaN, no warning."""
    import warnings

    X, y = _separable()
    expected = _result(make().fit(X, y))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _result(make().fit(_huge(X, factor), y))
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


# Immigrate's standardisation overflows in the first dask pass (numpy warns in the
# task threads) and is recomputed on the pre-scaled rows.
@pytest.mark.filterwarnings(
    "ignore:overflow encountered:RuntimeWarning", "ignore:invalid value encountered:RuntimeWarning"
)
@pytest.mark.parametrize("make", SCALED[:2] + SCALED[4:5])
def test_columns_near_the_float_limit_on_dask(make, threaded):
    X, y = _separable()
    expected = _result(make().fit(X, y))
    got = _result(make().fit(*_dask(_huge(X), y)))
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_standard_scaling_of_huge_columns_is_finite():
    from dmargin.io._training import numpy_scaling

    X, _ = _separable()
    scaling = numpy_scaling(_huge(X), "standard")
    np.testing.assert_allclose(
        scaling.apply(_huge(X)), numpy_scaling(X, "standard").apply(X), rtol=1e-12, atol=1e-12
    )


def test_ordinary_columns_scale_bit_for_bit_as_before():
    from dmargin.io._training import numpy_scaling

    X, _ = _separable()
    X = X * 1e100 + 3.0
    for scale in ("minmax", "standard"):
        s = numpy_scaling(X, scale)
        assert np.all(s.prescale == 1.0)
        if scale == "minmax":
            before = (X - X.min(0)) / (X.max(0) - X.min(0))
        else:
            before = (X - X.mean(0)) / X.std(0)
        np.testing.assert_array_equal(s.apply(X), before)


@pytest.mark.parametrize("huge", [False, True])
def test_dask_rows_scale_in_one_task_a_block_bit_for_bit(huge):
    """A dask row block is scaled by one task (not a subtraction and a division),
    to numpy's bits, also with a power-of-two prescale; column-chunked rows too."""
    from dmargin.io._training import numpy_scaling

    X, _ = _separable()
    X = _huge(X) if huge else X
    s = numpy_scaling(X, "minmax")
    assert np.any(s.prescale != 1.0) == huge
    rows = da.from_array(X, chunks=(7, X.shape[1]))
    scaled = s.apply(rows)
    tasks = dict(scaled.__dask_graph__())
    assert len(tasks) == 2 * rows.numblocks[0]  # the blocks and one task each
    assert scaled.name.startswith("dmargin-scale-")
    np.testing.assert_array_equal(scaled.compute(), s.apply(X.copy()))
    np.testing.assert_array_equal(
        s.apply(da.from_array(X, chunks=(7, 1))).compute(), s.apply(X.copy())
    )
    other = numpy_scaling(X + 1.0, "minmax").apply(rows)  # other statistics, other keys
    assert other.name != scaled.name


def test_unscaled_huge_values_name_the_fix():
    X, y = _separable()
    with pytest.raises(ValueError, match="overflow.*scale='minmax'"):
        dmargin.IRelief(scale=None).fit(_huge(X), y)
