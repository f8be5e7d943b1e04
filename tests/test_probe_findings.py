"""Inputs a hostile probe found mishandled: each one a test.

Permutations with a sample of anchors on dask rows, a fit inside a
``joblib`` dask task, the scale of ``feature_weights``, a label per row, a
p-value asked of a continuous target, the wrappers' parameter checks, seeds,
task keys of concurrent fits and NaN labels.
"""

from __future__ import annotations

import warnings

import dask
import dask.array as da
import numpy as np
import pytest

import dmargin


def _classes(n=300, a=6, k=2, seed=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.random((n, a))
    X[:, 1] += 0.5 * y
    return X, y


# -- permutations with anchors on several dask blocks ----------------------------------


@pytest.mark.parametrize("method", ["ReliefF", "MultiSURF"])
@pytest.mark.parametrize("chunks", [40, 77, 150])
def test_permutations_with_anchors_on_dask_equal_numpy(method, chunks):
    # The permuted labels' per-block class counts, not the original labels',
    # decide which rows the sample of anchors takes.
    X, y = _classes(n=300, k=3)
    make = getattr(dmargin, method)
    local = make(n_permutations=7, n_anchors=40, random_state=4).fit(X, y)
    with dask.config.set(scheduler="threads"):
        remote = make(n_permutations=7, n_anchors=40, random_state=4).fit(
            da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=chunks)
        )
    np.testing.assert_allclose(
        remote.feature_importances_, local.feature_importances_, rtol=0, atol=1e-10
    )
    np.testing.assert_allclose(remote.pvalues_, local.pvalues_, rtol=0, atol=1e-10)


def test_permutations_with_anchors_on_parquet_equal_numpy(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _classes(n=300, k=2)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(label=y)
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path, row_group_size=70)
    Xd, yd = dmargin.read_parquet(path, label="label")
    local = dmargin.ReliefF(n_permutations=7, n_anchors=50, random_state=2).fit(X, y)
    with dask.config.set(scheduler="threads"):
        remote = dmargin.ReliefF(n_permutations=7, n_anchors=50, random_state=2).fit(Xd, yd)
    np.testing.assert_allclose(remote.pvalues_, local.pvalues_, rtol=0, atol=1e-10)


def test_permuted_block_counts_are_the_permuted_labels(monkeypatch):
    from dmargin.engine import permute

    monkeypatch.setattr(permute, "SEGMENT", 16)
    rng = np.random.default_rng(1)
    per_segment = permute.segment_counts([30, 50, 20], 100, rng)
    bounds = [(0, 7), (7, 40), (40, 48), (48, 100)]
    labels = permute.labels_of(per_segment, 5, 0, 100)
    expected = [np.bincount(labels[a:b], minlength=3) for a, b in bounds]
    np.testing.assert_array_equal(permute.block_counts(per_segment, 5, bounds), expected)


# -- feature_weights: only their ratios count ----------------------------------------

WEIGHTED = ["ReliefF", "SURF", "MultiSURF", "SWRF", "MultiSWRF", "MultiSWRFDB", "MuRelief"]


@pytest.mark.parametrize("method", WEIGHTED)
def test_feature_weights_scale_does_not_change_scores(method):
    X, y = _classes(n=80, a=5)
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    make = getattr(dmargin, method)
    base = make().fit(X, y, feature_weights=w).feature_importances_
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        for scale in (1e-200, 1e-5, 1e300):
            scaled = make().fit(X, y, feature_weights=scale * w).feature_importances_
            np.testing.assert_allclose(scaled, base, rtol=0, atol=1e-10)


@pytest.mark.parametrize("weights", [np.array(["1", "2", "3", "4", "5"]), ["1", 2, 3, 4, 5]])
def test_feature_weights_as_text_are_refused_as_x_is(weights):
    X, y = _classes(n=40, a=5)
    with pytest.raises(ValueError, match="feature_weights.*numbers"):
        dmargin.ReliefF().fit(X, y, feature_weights=weights)


# -- a label per row ---------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:nu\\+ is zero")  # IRelief says it too, later
@pytest.mark.parametrize(
    "method", ["ReliefF", "MultiSURF", "MuRelief", "SWRF", "SURF", "IRelief", "Relief"]
)
def test_a_class_per_row_warns(method):
    X, _ = _classes(n=40, a=4)
    ids = np.arange(40)
    with pytest.warns(UserWarning, match="every class has a single row"):
        getattr(dmargin, method)().fit(X, ids)


def test_a_class_per_row_on_dask_warns():
    X, _ = _classes(n=40, a=4)
    with (
        dask.config.set(scheduler="sync"),
        pytest.warns(UserWarning, match="every class has a single row"),
    ):
        dmargin.ReliefF().fit(da.from_array(X, chunks=15), da.arange(40, chunks=15))


def test_a_few_single_row_classes_do_not_warn():
    X, y = _classes(n=40, a=4)
    y = y.copy()
    y[:2] = [7, 8]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        dmargin.ReliefF().fit(X, y)


# -- p-values of a continuous target ---------------------------------------------------


def test_relieff_stir_pvalues_of_a_continuous_target_are_refused():
    X, _ = _classes(n=60, a=4)
    target = np.random.default_rng(0).random(60)
    with pytest.raises(ValueError, match=r"ReliefF\(pvalues=True\).*continuous target"):
        dmargin.ReliefF(pvalues=True).fit(X, target)


# -- the wrappers' estimators ----------------------------------------------------------


@pytest.mark.parametrize("wrapper", ["VLS", "TuRF", "Iter"])
def test_a_wrapped_estimator_without_feature_importances_is_refused(wrapper):
    from sklearn.linear_model import LogisticRegression

    X, y = _classes(n=40, a=6)
    with pytest.raises(
        ValueError,
        match=r"estimator=LogisticRegression\(\).*"
        "feature_importances_",
    ):
        getattr(dmargin, wrapper)(LogisticRegression()).fit(X, y)


@pytest.mark.parametrize("inner", ["IRelief", "Immigrate", "OnlineIRelief", "Relief"])
def test_iter_refuses_an_estimator_without_feature_weights(inner):
    X, y = _classes(n=40, a=6)
    with pytest.raises(
        ValueError,
        match=rf"Iter: parameter estimator={inner}\(.*"
        "feature_weights",
    ):
        dmargin.Iter(getattr(dmargin, inner)()).fit(X, y)


def test_turf_takes_a_tree_ensemble():
    from sklearn.ensemble import RandomForestClassifier

    X, y = _classes(n=60, a=6)
    est = dmargin.TuRF(RandomForestClassifier(n_estimators=5, random_state=0), keep=3).fit(X, y)
    assert est.feature_importances_.shape == (6,)


@pytest.mark.parametrize("name", ["ReliefF", "MultiSURF", "SWRF", "MuRelief", "TuRF"])
def test_skrebate_transform_of_other_features_is_refused(name):
    from dmargin import skrebate

    X, y = _classes(n=40, a=6)
    cls = getattr(skrebate, name)
    est = (
        cls(skrebate.ReliefF(n_features_to_select=2))
        if name == "TuRF"
        else cls(n_features_to_select=2)
    )
    est.fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but .* is expecting 6 features"):
        est.transform(X[:, :3])


# -- seeds ------------------------------------------------------------------------------


def _seeded():
    """Every public estimator with a ``random_state``, built with its defaults."""
    from dmargin._registry import estimators

    needs = {
        "VLS": (dmargin.ReliefF(),),
        "KnockoffSelector": (dmargin.ReliefF(),),
        "SBSMF": (1,),
        "LDMRFE": (1,),
    }
    return [
        (name, cls, needs.get(name, ()))
        for name, cls in estimators()
        if "random_state" in cls._parameter_constraints
    ]


@pytest.mark.parametrize("name,cls,args", _seeded(), ids=[s[0] for s in _seeded()])
def test_a_negative_seed_is_refused_by_name(name, cls, args):
    X, y = _classes(n=30, a=4)
    with pytest.raises(ValueError, match=rf"{name}: parameter random_state=-5 is not valid"):
        cls(*args, random_state=-5).fit(X, y)


# -- NaN labels ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["ReliefF", "MultiSURF", "MuRelief", "IRelief"])
def test_nan_labels_get_dmargin_error_only(method):
    X, y = _classes(n=30, a=4)
    y = y.astype(float)
    y[3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="y contains 1 missing labels"):
            getattr(dmargin, method)().fit(X, y)


# -- the keys of concurrent fits' tasks ------------------------------------------------


def test_a_call_key_names_its_dependencies_by_content(monkeypatch):
    # Two VLS fits on one client built the same subset-fit key over a randomly named
    # copy of the columns: the scheduler saw one key with two dependencies.
    from dmargin import _dask as _compat

    monkeypatch.setattr(_compat, "compute", lambda *calls, what=None: calls)
    X = da.from_array(np.arange(240.0).reshape(40, 6), chunks=(15, 6))
    y = da.from_array(np.arange(40) % 2, chunks=15)

    def build(cols):
        (call,) = _compat.map_calls(np.add, [(X[:, cols], y)])
        return call.key, set(call.dask.dependencies[call.key])

    first, again, other = build([0, 2]), build([0, 2]), build([1, 2])
    assert first == again
    assert other[0] != first[0]


def test_the_subset_fits_of_vls_read_their_columns(monkeypatch):
    X, y = _classes(n=60, a=6)
    local = dmargin.VLS(
        dmargin.ReliefF(), num_feature_subset=4, size_feature_subset=3, random_state=0
    ).fit(X, y)
    with dask.config.set(scheduler="sync"):
        remote = dmargin.VLS(
            dmargin.ReliefF(), num_feature_subset=4, size_feature_subset=3, random_state=0
        ).fit(da.from_array(X, chunks=(25, 6)), da.from_array(y, chunks=25))
    np.testing.assert_allclose(
        remote.feature_importances_, local.feature_importances_, rtol=0, atol=1e-12
    )


# -- a fit inside joblib's tasks -------------------------------------------------------


def test_input_whose_blocks_are_out_of_reach_gets_one_clear_error():
    # What a joblib 'loky' child holds of client-persisted input: tasks whose
    # persisted dependencies are not in its graph.
    X, y = _classes(n=40, a=4)
    source = da.from_array(X, chunks=(20, 4))
    shifted = source + 0.0
    graph = {k: v for k, v in dict(shifted.__dask_graph__()).items() if k[0] != source.name}
    orphan = da.Array(graph, shifted.name, shifted.chunks, dtype=shifted.dtype)
    with (
        dask.config.set(scheduler="sync"),
        pytest.raises(RuntimeError, match=r"cannot reach.*parallel_backend\('dask'\)"),
    ):
        dmargin.ReliefF().fit(orphan, y)


def _grid_search(X, y, n_jobs):
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline

    pipe = make_pipeline(dmargin.ReliefF(n_features_to_select=2), KNeighborsClassifier())
    return GridSearchCV(pipe, {"relieff__n_neighbors": [3, 5]}, cv=3, n_jobs=n_jobs).fit(X, y)


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.timeout(900)  # a hang guard: the deadlock this holds off never returned
def test_grid_search_under_joblib_dask_backend_equals_numpy(client):
    import joblib

    X, y = _classes(n=120, a=6)
    expected = _grid_search(X, y, 1).cv_results_["mean_test_score"]
    Xd = da.from_array(X, chunks=(40, 6)).persist()
    yd = da.from_array(y, chunks=40).persist()
    with joblib.parallel_backend("dask"):
        found = _grid_search(Xd, yd, 2).cv_results_["mean_test_score"]
    np.testing.assert_allclose(found, expected, rtol=0, atol=1e-12)


@pytest.mark.cluster
@pytest.mark.slow
def test_grid_search_under_loky_on_persisted_input_says_why(client):
    X, y = _classes(n=120, a=6)
    Xd = da.from_array(X, chunks=(40, 6)).persist()
    yd = da.from_array(y, chunks=40).persist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's "fit failed" for each fit
        with pytest.raises(ValueError, match="cannot reach"):
            _grid_search(Xd, yd, 2)


def _fit_in_a_task(X, y):
    """A fit of dask input inside a worker's task; what dmargin logged meanwhile."""
    import logging

    class Keep(logging.Handler):
        def __init__(self):
            super().__init__()
            self.messages = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    keep = Keep()
    logging.getLogger("dmargin").addHandler(keep)
    try:
        est = dmargin.ReliefF().fit(
            da.from_array(X, chunks=(40, X.shape[1])), da.from_array(y, chunks=40)
        )
    finally:
        logging.getLogger("dmargin").removeHandler(keep)
    return est.feature_importances_, keep.messages


@pytest.mark.cluster
@pytest.mark.slow
def test_a_fit_in_a_task_sees_the_running_workers(client):
    # A worker's client answers its empty cache first: that is not "no running worker".
    X, y = _classes(n=120, a=5)
    weights, messages = client.submit(_fit_in_a_task, X, y, pure=False).result(timeout=600)
    np.testing.assert_allclose(
        weights, dmargin.ReliefF().fit(X, y).feature_importances_, rtol=0, atol=1e-12
    )
    assert not [m for m in messages if "no running Dask worker" in m]
