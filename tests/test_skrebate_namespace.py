"""``dmargin.skrebate``: skrebate 0.8.4's classes, parameters and defaults, equal to
skrebate's own output (1e-10) where none of its accidents occurs.

A skrebate user's code changes only its import: the same constructor calls, ``fit(X, y,
weights)``, ``top_features_`` and ``transform`` give skrebate's results, with its
options (``categorical_features``, ``multiclass_threshold``, ``label_type``,
``weight_final_scores``, ``rank_absolute``, a float ``n_neighbors``).
"""

import inspect
import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.base import clone

import dmargin
import dmargin.skrebate as dsk
from dmargin._capabilities import capabilities
from tests.test_skrebate_reference import dataset

skrebate = pytest.importorskip("skrebate")

ATOL = 1e-10
RELIEF = [
    "ReliefF",
    "SURF",
    "SURFstar",
    "MultiSURF",
    "MultiSURFstar",
    "SWRF",
    "SWRFstar",
    "MultiSWRF",
    "MultiSWRFstar",
    "MultiSWRFDB",
    "MultiSWRFDBstar",
    "MuRelief",
]
#: Continuous or mixed data without pairs at distance NaN or ties, classes larger than
#: k = 5: none of skrebate's accidents occurs (``tests/skrebate_reference.py``); with
#: missing values, SURF's and SWRF's mean is of skrebate's lower triangle (accident 1).
CLEAN = ["gametes-mixed", "continuous-multiclass", "corners", "missing-continuous-target"]
GLOBAL_MEAN = {"SURF", "SURFstar", "SWRF", "SWRFstar"}
K = {"ReliefF": 5, "MuRelief": 5}


def _pair(name, X, y, weights=None, **params):
    """dmargin.skrebate's and skrebate's fits of class ``name`` with ``params``."""
    params = {"n_neighbors": K[name], **params} if name in K else params
    ours = getattr(dsk, name)(**params)
    theirs = getattr(skrebate, name)(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if weights is None:
            return ours.fit(X, y), theirs.fit(X.copy(), y)
        return ours.fit(X, y, weights), theirs.fit(X.copy(), y, weights=weights)


def _assert_same(ours, theirs):
    assert np.abs(theirs.feature_importances_).max() > 1e-6
    np.testing.assert_allclose(
        ours.feature_importances_, theirs.feature_importances_, rtol=0, atol=ATOL
    )
    # the same ranking, up to the order of scores equal to rounding (argsort of ulps)
    np.testing.assert_allclose(
        ours.feature_importances_[ours.top_features_],
        theirs.feature_importances_[theirs.top_features_],
        rtol=0,
        atol=ATOL,
    )
    ranked = ours.feature_importances_[ours.top_features_]
    assert np.all(np.diff(np.abs(ranked) if ours.rank_absolute else ranked) <= ATOL)


def test_every_export_under_skrebates_name_and_signature():
    exported = [n for n in dir(skrebate) if isinstance(getattr(skrebate, n), type)]
    assert sorted(exported) == sorted(dsk.__all__)
    for name in exported:
        theirs = getattr(skrebate, name)
        # the SWRF family takes ReliefF's parameters through **kwargs
        init = (
            skrebate.ReliefF.__init__
            if name.endswith(("SWRF", "SWRFstar", "SWRFDB", "SWRFDBstar"))
            else theirs.__init__
        )
        assert inspect.signature(getattr(dsk, name).__init__) == inspect.signature(init), name
        fit = list(inspect.signature(getattr(dsk, name).fit).parameters)
        assert fit[: len(list(inspect.signature(theirs.fit).parameters))] == list(
            inspect.signature(theirs.fit).parameters
        ), name


@pytest.mark.parametrize(
    "name, data",
    [(n, d) for n in RELIEF for d in CLEAN if not (d.startswith("missing") and n in GLOBAL_MEAN)],
)
def test_equal_to_skrebate(name, data):
    X, y = dataset(data)
    ours, theirs = _pair(name, X, y)
    _assert_same(ours, theirs)
    k = min(3, X.shape[1])
    ours.n_features_to_select = theirs.n_features_to_select = k
    np.testing.assert_array_equal(ours.transform(X), theirs.transform(X))


def test_relieff_is_skrebates_not_wekas():
    """Three classes: skrebate's ReliefF scores misses by class shares, Weka's by priors."""
    X, y = dataset("continuous-multiclass")
    ours, theirs = _pair("ReliefF", X, y)
    _assert_same(ours, theirs)
    weka = dmargin.ReliefF(n_neighbors=5).fit(X, y).feature_importances_
    assert np.abs(weka - ours.feature_importances_).max() > 1e-3


@pytest.mark.parametrize("name", ["ReliefF", "MultiSURF", "MuRelief"])
def test_integer_target_with_many_values_is_continuous(name):
    """wpbc's recurrence time in whole months: skrebate reads more than
    ``multiclass_threshold`` labels as a continuous target (dmargin's own classes take
    integer labels as classes)."""
    X, y = dataset("wpbc-time")
    ours, theirs = _pair(name, X, y)
    assert ours.target_type_ == "continuous"
    _assert_same(ours, theirs)


@pytest.mark.parametrize("params", [{"multiclass_threshold": 2}, {"label_type": "continuous"}])
def test_three_labels_read_as_continuous(params):
    X, y = dataset("continuous-multiclass")
    rng = np.random.default_rng(0)
    y = rng.normal(size=len(y)) + y  # 50 distinct values: hit bound std(y) either way
    ours, theirs = _pair("MultiSURF", X, y, **params)
    _assert_same(ours, theirs)


def test_float_labels_below_the_threshold_are_classes():
    """Three distinct non-integer values: skrebate's multiclass (dmargin's own classes
    would read a continuous target)."""
    X, y = dataset("continuous-multiclass")
    labels = np.array([0.5, 1.25, 2.75])[y]
    ours, theirs = _pair("MultiSURFstar", X, labels)
    assert ours.target_type_ == "multiclass"
    _assert_same(ours, theirs)
    ours_lt, theirs_lt = _pair("SURF", X, labels, label_type="multiclass")
    _assert_same(ours_lt, theirs_lt)


@pytest.mark.parametrize("name", ["ReliefF", "SURFstar", "MultiSWRFDB", "MuRelief"])
def test_categorical_features_declared(name):
    """Columns declared discrete whatever their number of values (mixed data: a
    mismatch weighs A / A_discrete, the continuous differences ramp at their std)."""
    X, y = dataset("gametes-mixed")  # 11 discrete SNPs, then 9 continuous features
    declared = list(range(9)) + [12]  # two SNPs read as continuous, one feature discrete
    ours, theirs = _pair(name, X, y, categorical_features=declared)
    _assert_same(ours, theirs)
    np.testing.assert_array_equal(ours.discrete_features_, np.isin(np.arange(X.shape[1]), declared))


@pytest.mark.parametrize("name", ["ReliefF", "MultiSURF", "SWRF"])
def test_weights_and_weight_final_scores(name):
    X, y = dataset("continuous-multiclass")
    w = np.random.default_rng(3).uniform(0.05, 1.0, X.shape[1])
    for final in (False, True):
        ours, theirs = _pair(name, X, y, weights=w, weight_final_scores=final)
        _assert_same(ours, theirs)
    unweighted = getattr(dsk, name)(**({"n_neighbors": 5} if name in K else {})).fit(X, y, w)
    np.testing.assert_allclose(
        ours.feature_importances_, unweighted.feature_importances_ * w, rtol=0, atol=ATOL
    )


def test_rank_absolute_and_fractional_neighbours():
    X, y = dataset("corners")
    ours, theirs = _pair("ReliefF", X, y, rank_absolute=True)
    _assert_same(ours, theirs)
    ours, theirs = _pair("MuRelief", X, y, n_neighbors=0.2)
    _assert_same(ours, theirs)


def test_wrappers_around_the_same_object():
    X, y = dataset("continuous-multiclass")  # skrebate weighs no mixed data (accident 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = [
            (
                dsk.VLS(
                    dsk.MultiSURF(), num_feature_subset=6, size_feature_subset=3, random_state=5
                ),
                skrebate.VLS(
                    skrebate.MultiSURF(),
                    num_feature_subset=6,
                    size_feature_subset=3,
                    random_state=5,
                ),
            ),
            (
                dsk.Iter(dsk.ReliefF(n_neighbors=5), max_iter=3),
                skrebate.Iter(skrebate.ReliefF(n_neighbors=5), max_iter=3),
            ),
            (
                dsk.TURF(dsk.SURF(), pct=0.5, num_scores_to_return=3),
                skrebate.TURF(skrebate.SURF(), pct=0.5, num_scores_to_return=3),
            ),
        ]
        for ours, theirs in pairs:
            ours.fit(X, y)
            theirs.fit(X.copy(), y)
            np.testing.assert_allclose(
                ours.feature_importances_, theirs.feature_importances_, rtol=0, atol=ATOL
            )
            np.testing.assert_array_equal(ours.top_features_[:3], theirs.top_features_[:3])
            ours.relief_object.n_features_to_select = 3
            theirs.relief_object.n_features_to_select = 3
            np.testing.assert_array_equal(ours.transform(X), theirs.transform(X))


def test_dask_input_and_clone():
    X, y = dataset("missing-continuous-target")
    est = dsk.MultiSWRF(n_features_to_select=3)
    on_numpy = clone(est).fit(X, y)
    on_dask = clone(est).fit(da.from_array(X, chunks=20), da.from_array(y, chunks=20))
    np.testing.assert_allclose(
        on_dask.feature_importances_, on_numpy.feature_importances_, rtol=0, atol=ATOL
    )
    assert clone(est).get_params() == est.get_params()
    assert on_dask.transform(da.from_array(X, chunks=20)).compute().shape == (len(X), 3)


def test_bad_options_name_the_problem():
    X, y = dataset("continuous-multiclass")
    with pytest.raises(ValueError, match="categorical_features names column 9.*5 features"):
        dsk.SURF(categorical_features=[1, 9]).fit(X, y)
    with pytest.raises(ValueError, match="label_type='binary', but y has 3 distinct labels"):
        dsk.ReliefF(label_type="binary").fit(X, y)
    with pytest.raises(ValueError, match="label_type='ordinal' is not valid"):
        dsk.MultiSURF(label_type="ordinal").fit(X, y)
    with pytest.raises(ValueError, match="all labels are of the same class"):
        dsk.MuRelief().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="give the feature weights once"):
        dsk.SURF().fit(X, y, np.ones(X.shape[1]), feature_weights=np.ones(X.shape[1]))
    with pytest.raises(ValueError, match="Number of features to select is larger"):
        dsk.SURF(n_features_to_select=10).fit(X, y).transform(X)


@pytest.mark.cluster
def test_on_a_cluster_as_in_process(local_cluster):
    """skrebate's classes on dask input with a distributed Client: the scores of the
    in-process fit, computed by tasks on the workers; a refit with other options on the
    same client is other tasks (skrebate's ReliefF after MuRelief, other k)."""
    from distributed import Client, get_task_stream

    X, y = dataset("wpbc-time")  # integer months: skrebate's continuous target
    Xd, yd = da.from_array(X, chunks=(25, -1)), da.from_array(y, chunks=25)
    with Client(local_cluster) as client:
        workers = set(client.scheduler_info()["workers"])
        with get_task_stream(client) as stream:
            fits = {
                (name, k): getattr(dsk, name)(n_neighbors=k).fit(Xd, yd)
                for name in ("MuRelief", "ReliefF")
                for k in (3, 5)
            }
            multisurf = dsk.MultiSURF(categorical_features=[0]).fit(Xd, yd)
    for (name, k), est in fits.items():
        local = getattr(dsk, name)(n_neighbors=k).fit(X, y)
        np.testing.assert_allclose(
            est.feature_importances_, local.feature_importances_, rtol=0, atol=ATOL
        )
    np.testing.assert_allclose(
        multisurf.feature_importances_,
        dsk.MultiSURF(categorical_features=[0]).fit(X, y).feature_importances_,
        rtol=0,
        atol=ATOL,
    )
    assert len({tuple(np.round(e.feature_importances_, 12)) for e in fits.values()}) == 4
    ran = {t["worker"] for t in stream.data}
    assert ran and ran <= workers


def test_dask_labels_are_typed_where_they_live():
    """skrebate's target rule on dask labels reads their distinct values only (a dask
    array or Series); float labels skrebate counts as classes are fitted by their codes."""
    import dask.dataframe as dd
    import pandas as pd

    X, y = dataset("continuous-multiclass")
    labels = np.array([0.5, 1.25, 2.75])[y]
    local = dsk.MultiSURF().fit(X, labels)
    Xd = da.from_array(X, chunks=20)
    for yd in (da.from_array(labels, chunks=20), dd.from_pandas(pd.Series(labels), npartitions=3)):
        assert not _continuous_target(dsk.MultiSURF(), yd)
        est = dsk.MultiSURF().fit(Xd, yd)
        assert est.target_type_ == "multiclass"
        np.testing.assert_array_equal(est.classes_, [0.5, 1.25, 2.75])
        np.testing.assert_allclose(
            est.feature_importances_, local.feature_importances_, rtol=0, atol=ATOL
        )
    est = dsk.MultiSURF(multiclass_threshold=2)
    assert _continuous_target(est, da.from_array(labels, chunks=20))


def _continuous_target(est, y):
    """What skrebate's rule, declared in the estimator's capabilities, says of ``y``."""
    return capabilities(est).target_rule(est, y)
