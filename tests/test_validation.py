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


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_X_is_rejected(cls, bad, xy):
    X, y = xy
    X = X.copy()
    X[3, 1] = bad
    with pytest.raises(ValueError, match="NaN|infinity|infinite"):
        cls().fit(X, y)


@pytest.mark.parametrize("cls", ALL)
def test_non_finite_dask_X_is_rejected(cls, xy, threaded):
    X, y = xy
    X = X.copy()
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite.*Impute"):
        cls().fit(da.from_array(X, chunks=10), da.from_array(y, chunks=10))


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
    with pytest.raises(ValueError, match="NaN labels"):
        cls().fit(X, y)
    labels = np.array(["a", "b"] * 15, dtype=object)
    labels[2] = None
    with pytest.raises(ValueError, match="missing labels"):
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
        np.array(["w", "x", "y", "z"])[est.get_support()])


def test_dask_dataframe_feature_names_are_kept(xy, threaded):
    X, y = xy
    frame = dd.from_pandas(pd.DataFrame(X, columns=["w", "x", "y", "z"]), npartitions=3)
    est = dmargin.ReliefF().fit(frame, dd.from_pandas(pd.Series(y), npartitions=3))
    assert list(est.feature_names_in_) == ["w", "x", "y", "z"]
    np.testing.assert_allclose(est.feature_importances_,
                               dmargin.ReliefF().fit(X, y).feature_importances_, atol=1e-12)


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
