"""Same answer everywhere: in-process, threaded dask, and a 2-process LocalCluster.

For every public estimator of ``dmargin.__all__``, three executions of the
same fit must agree:

- **in-process**: numpy (or pandas) input, no ``distributed.Client``;
- **threaded dask**: a dask array (or dask DataFrame) of several row blocks
  under ``dask.config.set(scheduler="threads")``, no client;
- **cluster**: the same dask input with a ``Client`` on a ``LocalCluster`` of
  two worker processes (one thread each).

Every public fitted attribute is compared (trailing underscore; recursively
into fitted sub-estimators, lists and tables): floats to ``atol=1e-10`` with
``rtol=0``; integers, rankings, masks, labels and names exactly.  The
classifiers' ``predict`` must match exactly and ``decision_function`` /
``predict_proba`` to 1e-10.  The cluster runs also check, from the
scheduler's task stream, that the engine's tasks (keys ``dmargin-...``) ran
on the worker processes; the estimators that compute on the driver by
design (Simba, LDM, OnlineIRelief) are checked to have run their data passes
on the workers.
"""

import functools

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.callbacks import Callback
from sklearn.base import BaseEstimator

import dmargin
from dmargin._registry import estimator_names, example
from dmargin.datasets import load_dataset

#: Row blocks of every dask input: enough for the dask path to tile (anchor x
#: candidate blocks, tree reductions), few enough to stay fast.
BLOCKS = 4
#: Absolute tolerance.  The compared values are O(1) to O(1e3) (weights on a
#: simplex or of Frobenius norm 1, margin fractions, IMMIGRATE costs, LDM-RFE's
#: S(j) = -alpha^T K(-j) alpha), so 1e-10 absolute is at least 1e-13 relative:
#: far above the reassociation error of the tiled sums (~1e-15 relative),
#: far below any algorithmic difference.
ATOL = 1e-10

# ---------------------------------------------------------------------------
# The estimators
# ---------------------------------------------------------------------------

BINARY = ("heart", "blobs_binary")  # SBS-MF and its baselines are binary only
ANY = ("heart", "blobs_multiclass")


def case(make, datasets, cluster, engine=True, id=None):
    """One estimator: its factory, the data sets of the threaded comparison, the
    ``(data set, input kind)`` of the cluster comparison, and whether its fit
    runs engine tasks (``dmargin-`` keys) on the workers."""
    return pytest.param(make, datasets, cluster, engine, id=id)


#: The settings, data sets and cluster input each estimator is run with; a second case of
#: an estimator takes another path through its fit.
SETTINGS = [
    # I-RELIEF family
    case(
        lambda: dmargin.IRelief(max_iter=6, tol=0, sigma=1.0),
        ("blobs_binary",) + ANY,
        ("blobs_multiclass", "array"),
        id="IRelief",
    ),
    case(
        lambda: dmargin.IRelief(max_iter=4, tol=0, multiclass="relieff", outliers=False),
        ANY,
        ("blobs_multiclass", "array"),
        id="IRelief-1",
    ),
    case(
        lambda: dmargin.OnlineIRelief(n_passes=2, block_size=17, random_state=3),
        ("blobs_binary",) + ANY,
        ("blobs_multiclass", "array"),
        engine=False,
        id="OnlineIRelief",
    ),
    case(
        lambda: dmargin.ReliefF(n_neighbors=4),
        ("blobs_binary",) + ANY,
        ("blobs_multiclass", "array"),
        id="ReliefF",
    ),
    case(lambda: dmargin.Relief(), ("blobs_binary",) + ANY, ("heart", "frame"), id="Relief"),
    case(lambda: dmargin.RReliefF(n_neighbors=8), BINARY, ("heart", "frame"), id="RReliefF"),
    case(
        lambda: dmargin.Simba(n_starts=2, n_passes=2, random_state=0),
        ANY,
        ("heart", "frame"),
        engine=False,
        id="Simba",
    ),
    case(
        lambda: dmargin.TuRF(dmargin.ReliefF(n_neighbors=4), pct=0.5, keep=3),
        ANY,
        ("heart", "frame"),
        id="TuRF",
    ),
    case(
        lambda: dmargin.MuRelief(n_neighbors=6), ANY, ("blobs_multiclass", "array"), id="MuRelief"
    ),
    case(
        lambda: dmargin.MuRelief(n_neighbors=0.2, n_anchors=30, random_state=0),
        ANY,
        ("heart", "frame"),
        id="MuRelief-anchors",
    ),
    case(
        lambda: dmargin.MuRelief(n_neighbors=5, n_anchors=25, random_state=0),
        ("blobs_regression",),
        ("blobs_regression", "frame"),
        id="MuRelief-continuous",
    ),
    case(lambda: dmargin.Iter(dmargin.MultiSURF(), max_iter=3), ANY, ("heart", "frame"), id="Iter"),
    case(
        lambda: dmargin.VLS(
            dmargin.ReliefF(n_neighbors=4),
            num_feature_subset=8,
            size_feature_subset=2,
            random_state=0,
        ),
        ANY,
        ("blobs_multiclass", "array"),
        engine=False,
        id="VLS",
    ),
    case(
        lambda: dmargin.KnockoffSelector(dmargin.ReliefF(n_neighbors=4), q=0.5, random_state=0),
        ("blobs_binary", "blobs_multiclass"),
        ("blobs_binary", "frame"),
        id="KnockoffSelector",
    ),
    case(
        lambda: dmargin.KnockoffSelector(dmargin.MultiSURF(), q=0.5, n_draws=2, random_state=1),
        ("blobs_multiclass",),
        ("blobs_multiclass", "array"),
        id="KnockoffSelector-draws",
    ),
    # SURF family (heart and blobs_multiclass mix discrete and continuous features)
    case(lambda: dmargin.SURF(), ANY, ("heart", "frame"), id="SURF"),
    case(
        lambda: dmargin.SURFstar(n_anchors=40, random_state=0),
        ANY,
        ("blobs_multiclass", "array"),
        id="SURFstar-anchors",
    ),
    case(
        lambda: dmargin.MultiSURF(),
        ("blobs_binary",) + ANY,
        ("blobs_multiclass", "array"),
        id="MultiSURF",
    ),
    case(lambda: dmargin.MultiSURFstar(), ANY, ("heart", "frame"), id="MultiSURFstar"),
    # ... on a continuous target (skrebate's continuous endpoint)
    case(
        lambda: dmargin.MultiSURFstar(),
        ("blobs_regression",),
        ("blobs_regression", "array"),
        id="MultiSURFstar-continuous",
    ),
    case(
        lambda: dmargin.SURF(n_anchors=30, random_state=0),
        ("blobs_regression",),
        ("blobs_regression", "frame"),
        id="SURF-anchors-continuous",
    ),
    # SWRF family (weighted neighbours)
    case(lambda: dmargin.SWRF(), ANY, ("heart", "frame"), id="SWRF"),
    case(
        lambda: dmargin.SWRFstar(n_anchors=40, random_state=0),
        ANY,
        ("blobs_multiclass", "array"),
        id="SWRFstar-anchors",
    ),
    case(
        lambda: dmargin.MultiSWRF(),
        ("blobs_binary",) + ANY,
        ("blobs_multiclass", "array"),
        id="MultiSWRF",
    ),
    case(lambda: dmargin.MultiSWRFstar(), ANY, ("heart", "frame"), id="MultiSWRFstar"),
    case(
        lambda: dmargin.MultiSWRFDB(),
        ("blobs_regression",),
        ("blobs_regression", "array"),
        id="MultiSWRFDB-continuous",
    ),
    case(lambda: dmargin.MultiSWRFDBstar(), ANY, ("heart", "frame"), id="MultiSWRFDBstar"),
    # IMMIGRATE family
    case(lambda: dmargin.Immigrate(max_iter=4), ANY, ("blobs_multiclass", "array"), id="Immigrate"),
    case(
        lambda: dmargin.Immigrate(
            max_iter=4, init="random", prune=0.05, random_state=0, prediction_sigma=2.0
        ),
        ANY,
        ("heart", "frame"),
        id="Immigrate-prune",
    ),
    case(lambda: dmargin.IM4E(max_iter=4), ANY, ("heart", "frame"), id="IM4E"),
    case(
        lambda: dmargin.IM4E(max_iter=4, weight_update="simplex", lam=0.5),
        ANY,
        ("blobs_multiclass", "array"),
        id="IM4E-simplex",
    ),
    case(lambda: dmargin.IM4EImmigrate(max_iter=4), ANY, ("heart", "frame"), id="IM4EImmigrate"),
    case(
        lambda: dmargin.BoostedImmigrate(n_estimators=4, max_iter=3),
        ANY,
        ("blobs_multiclass", "array"),
        id="BIM",
    ),
    # SBS-MF and its baselines
    case(
        lambda: dmargin.AdaBoostStumps(n_estimators=6),
        BINARY,
        ("heart", "frame"),
        id="AdaBoostStumps",
    ),
    case(
        lambda: dmargin.SBSMF(n_features_to_select=4, step=4, n_estimators=5),
        BINARY,
        ("heart", "frame"),
        id="SBSMF",
    ),
    case(
        lambda: dmargin.SBSMF(n_features_to_select=0.5, n_estimators=4, class_weight="balanced"),
        BINARY,
        ("blobs_binary", "array"),
        id="SBSMF-balanced",
    ),
    case(
        lambda: dmargin.AdaBoostCR(n_features_to_select=4, step=4, n_estimators=5),
        BINARY,
        ("heart", "frame"),
        id="AdaBoostCR",
    ),
    case(
        lambda: dmargin.BDSFS(n_features_to_select=3), BINARY, ("blobs_binary", "array"), id="BDSFS"
    ),
    # LDM, LDM-RFE and SVM-RFE
    case(lambda: dmargin.LDM(random_state=0), ANY, ("heart", "frame"), engine=False, id="LDM"),
    case(
        lambda: dmargin.LDMRFE(n_features_to_select=2, step=2, random_state=0),
        ANY,
        ("heart", "frame"),
        id="LDMRFE",
    ),
    case(
        lambda: dmargin.LDMRFE(n_features_to_select=2, step=2, criterion="abs", random_state=0),
        ANY,
        ("blobs_multiclass", "array"),
        id="LDMRFE-abs",
    ),
    case(
        lambda: dmargin.SVMRFE(n_features_to_select=2, step=2, random_state=0),
        ANY,
        ("blobs_multiclass", "array"),
        id="SVMRFE",
    ),
]


def _made(param):
    """The class name of the estimator a case makes."""
    return type(param.values[0]()).__name__


def _registry_cases():
    """A case for every registered estimator :data:`SETTINGS` does not make: the
    registry's instance (``dmargin._registry.example``), on both kinds of classes, and
    on the cluster on heart as a DataFrame.  A new estimator is covered without an edit
    here; a setting above makes its case quicker or closer to its paper."""
    made = {_made(p) for p in SETTINGS}
    return [
        case(functools.partial(example, name), ANY, ("heart", "frame"), id=name)
        for name in estimator_names()
        if name not in made
    ]


CASES = SETTINGS + _registry_cases()
#: The estimators the cases make: every registered one.
COVERED = {_made(p) for p in CASES}


def test_every_public_estimator_is_covered():
    estimators = {
        name
        for name in dmargin.__all__
        if isinstance(getattr(dmargin, name), type)
        and issubclass(getattr(dmargin, name), BaseEstimator)
    }
    # KnockoffSampler selects nothing; test_knockoff_sampler.py compares its modes.
    assert estimators - {"KnockoffSampler"} == set(estimator_names())
    assert COVERED == set(estimator_names())


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------


def fitted_attributes(est):
    """All public learned attributes (trailing underscore), as in dask-ml's helper."""
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def assert_same(x, y, name, atol=ATOL):
    """``x`` and ``y`` equal: floats to ``atol``, everything else exactly.

    Recurses into fitted estimators (their public attributes), lists and
    tuples (``scores_``, ``beta_``, ``estimators_``), DataFrames column by
    column (``interactions_``), record arrays field by field (``history_``)
    and object arrays element by element.
    """
    if isinstance(x, BaseEstimator):
        assert type(x) is type(y), name
        assert_estimator_equal(x, y, atol, prefix=f"{name}.")
    elif isinstance(x, (list, tuple)):
        assert isinstance(y, (list, tuple)) and len(x) == len(y), name
        for i, (u, v) in enumerate(zip(x, y)):
            assert_same(u, v, f"{name}[{i}]", atol)
    elif isinstance(x, pd.DataFrame):
        assert list(x.columns) == list(y.columns), name
        for column in x.columns:
            assert_same(x[column].to_numpy(), y[column].to_numpy(), f"{name}.{column}", atol)
    elif x is None or isinstance(x, (str, bool)):
        assert x == y, (name, x, y)
    else:
        a, b = np.asarray(x), np.asarray(y)
        assert a.shape == b.shape, (name, a.shape, b.shape)
        if a.dtype.names:
            for field in a.dtype.names:
                assert_same(a[field], b[field], f"{name}.{field}", atol)
        elif a.dtype == object:
            for i, (u, v) in enumerate(zip(a.ravel(), b.ravel())):
                assert_same(u, v, f"{name}[{i}]", atol)
        elif a.dtype.kind == "f" or b.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=0, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)


def assert_estimator_equal(a, b, atol=ATOL, prefix=""):
    """Every learned attribute of ``a`` and ``b`` equal (see :func:`assert_same`)."""
    fa, fb = fitted_attributes(a), fitted_attributes(b)
    assert fa.keys() == fb.keys(), (prefix, sorted(fa), sorted(fb))
    for name in fa:
        assert_same(fa[name], fb[name], prefix + name, atol)


def predictions(est, X):
    """What a fitted classifier says about ``X``: labels, scores, probabilities."""
    out = {}
    for method in ("predict", "decision_function", "predict_proba"):
        if hasattr(est, method):
            out[method] = getattr(est, method)(X)
    return out


def assert_predictions_equal(a, b):
    assert a.keys() == b.keys()
    for method in a:
        x, y = np.asarray(a[method]), np.asarray(b[method])
        if method == "predict":
            np.testing.assert_array_equal(x, y, err_msg=method)
        else:
            np.testing.assert_allclose(x, y, rtol=0, atol=ATOL, err_msg=method)


# ---------------------------------------------------------------------------
# Data in the three forms
# ---------------------------------------------------------------------------


@functools.lru_cache
def _heart():
    X, y = load_dataset("heart")  # Statlog (Heart), 270 x 13, binary
    return X.astype(np.float64), y


def frames(request, dataset):
    """The data set as a pandas ``(DataFrame, Series)`` with named columns."""
    if dataset == "heart":
        return _heart()
    X, y = request.getfixturevalue(dataset)
    return (
        pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]),
        pd.Series(y, name="label"),
    )


def in_memory(request, dataset, kind):
    """numpy arrays (``kind="array"``) or pandas (``"frame"``): the in-process input."""
    X, y = frames(request, dataset)
    return (X.to_numpy(), y.to_numpy()) if kind == "array" else (X, y)


def on_dask(request, dataset, kind):
    """The same rows as a dask array / dask DataFrame of :data:`BLOCKS` row blocks."""
    X, y = frames(request, dataset)
    if kind == "frame":
        Xd, yd = dd.from_pandas(X, npartitions=BLOCKS), dd.from_pandas(y, npartitions=BLOCKS)
        assert Xd.npartitions == BLOCKS
        return Xd, yd
    rows = -(-len(y) // BLOCKS)
    Xd = da.from_array(X.to_numpy(), chunks=(rows, X.shape[1]))
    yd = da.from_array(y.to_numpy(), chunks=rows)
    assert Xd.numblocks == (BLOCKS, 1)
    return Xd, yd


class LocalTasks(Callback):
    """The keys of the tasks dask's local schedulers run meanwhile."""

    def __init__(self):
        super().__init__()
        self.keys = []

    def _pretask(self, key, dsk, state):
        self.keys.append(key)

    def engine_keys(self):
        return [k for k in self.keys if _key_name(k).startswith("dmargin-")]


def _key_name(key):
    return key[0] if isinstance(key, tuple) else str(key)


def assert_no_client():
    from distributed import default_client

    with pytest.raises(ValueError):
        default_client()


_REFERENCES = {}


def in_process(request, make, dataset, kind):
    """The in-process fit and its predictions (numpy/pandas, no client), cached."""
    key = (make, dataset, kind)
    if key not in _REFERENCES:
        assert_no_client()
        X, y = in_memory(request, dataset, kind)
        with LocalTasks() as tasks:
            est = make().fit(X, y)
            out = predictions(est, X)
        assert not tasks.keys, f"in-process fit ran dask tasks: {tasks.keys[:3]}"
        _REFERENCES[key] = est, out
    return _REFERENCES[key]


# ---------------------------------------------------------------------------
# In-process = threaded dask
# ---------------------------------------------------------------------------


def _threaded_params():
    for p in CASES:
        make, datasets, _, engine = p.values
        for dataset in datasets:
            for kind in ("array", "frame"):
                yield pytest.param(make, dataset, kind, engine, id=f"{p.id}-{dataset}-{kind}")


@pytest.mark.parametrize("make, dataset, kind, engine", list(_threaded_params()))
def test_threaded_dask_equals_in_process(request, make, dataset, kind, engine):
    local, local_out = in_process(request, make, dataset, kind)
    Xd, yd = on_dask(request, dataset, kind)
    with dask.config.set(scheduler="threads"), LocalTasks() as tasks:
        assert_no_client()
        threaded = make().fit(Xd, yd)
        threaded_out = predictions(threaded, Xd)
    assert_estimator_equal(local, threaded)
    assert_predictions_equal(local_out, threaded_out)
    assert tasks.keys, "the dask input was not computed by dask"
    if engine:  # the engine tiled the row blocks (at least one task per block)
        assert len(tasks.engine_keys()) >= BLOCKS, tasks.engine_keys()


@pytest.mark.parametrize("rows", [7, 31, 200])
def test_chunking_does_not_change_irelief(blobs_multiclass, rows, threaded):
    X, y = blobs_multiclass
    local = dmargin.IRelief(max_iter=3, tol=0).fit(X, y)
    on_dask = dmargin.IRelief(max_iter=3, tol=0).fit(
        da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)
    )
    assert_estimator_equal(local, on_dask)


# ---------------------------------------------------------------------------
# In-process = a 2-process LocalCluster
# ---------------------------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.parametrize("make, datasets, cluster, engine", CASES)
def test_cluster_equals_in_process(request, make, datasets, cluster, engine, local_cluster):
    from distributed import Client, get_task_stream

    dataset, kind = cluster
    local, local_out = in_process(request, make, dataset, kind)  # before any client exists
    Xd, yd = on_dask(request, dataset, kind)
    with Client(local_cluster) as client:
        workers = set(client.scheduler_info()["workers"])
        assert len(workers) == 2
        with get_task_stream(client) as stream:
            remote = make().fit(Xd, yd)
            remote_out = predictions(remote, Xd)
    assert_estimator_equal(local, remote)
    assert_predictions_equal(local_out, remote_out)

    # The work ran on the worker processes: the task stream only records tasks
    # a worker executed; the client computed nothing locally.
    ran_on = {t["worker"] for t in stream.data}
    assert ran_on and ran_on <= workers
    if engine:
        engine_tasks = [t for t in stream.data if _key_name(t["key"]).startswith("dmargin-")]
        assert engine_tasks, "no engine task ran on the cluster"
        assert {t["worker"] for t in engine_tasks} == workers, (
            "the engine's tasks did not run on both workers"
        )


@pytest.mark.cluster
def test_numpy_input_under_a_client_runs_on_the_cluster(blobs_binary, local_cluster):
    from distributed import Client, get_task_stream

    X, y = blobs_binary
    assert_no_client()
    client_less = dmargin.IRelief(max_iter=3, tol=0).fit(X, y)  # in-process
    # With a client, numpy input is scattered and tiled on the workers.
    with Client(local_cluster) as client, get_task_stream(client) as stream:
        est = dmargin.IRelief(max_iter=3, tol=0).fit(X, y)
    assert any(_key_name(t["key"]).startswith("dmargin-") for t in stream.data)
    assert_estimator_equal(client_less, est)
