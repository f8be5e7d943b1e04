"""Refits on a live cluster: every fit gets its own answer, never an earlier one.

A scheduler hands a new graph the results of any keys it still holds, so a
fit whose task keys missed one of its inputs (a parameter, the anchor sample,
the labels) returns another fit's weights.  Here the data are persisted once
on the cluster and fitted again and again on the same client -- one
parameter changed each time, back to back; four fits at once from threads;
a grid search -- and every fit must equal its own in-process reference.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dmargin

from .conftest import start_local_cluster
from .test_modes import (
    ATOL,
    CASES,
    _key_name,
    assert_estimator_equal,
    assert_no_client,
    assert_same,
    fitted_attributes,
    frames,
    predictions,
)

# STIR's p-values computed on any data, so that their tasks' keys are part of the refits.
pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("stir_everywhere")]

#: Changes tried in turn on every estimator that has the parameter (nested
#: estimators too, as ``estimator__...``): ``value(current)`` is the new value.
CHANGES = [
    ("random_state", lambda v: 11),  # first: a fit with random_state=None is not repeatable
    ("n_anchors", lambda v: 40),  # then a second label vector on the same rows
    ("pvalues", lambda v: not v),
    ("discrete_threshold", lambda v: 5 if v != 5 else 10),
    ("multiclass", lambda v: "relieff" if v != "relieff" else "margin"),
    ("sigma", lambda v: 2.0 if v != 2.0 else 3.0),
    ("n_neighbors", lambda v: (v or 10) - 2),
    ("scale", lambda v: None if v is not None else "minmax"),
    ("C", lambda v: 0.5),
    ("n_estimators", lambda v: v + 2),
    ("pct", lambda v: 0.7),
]
#: Fits in one chain (the first changes that apply).
CHAIN = 7


def _other_labels(y):
    """Another label vector of the same kinds on the same rows."""
    y = pd.Series(y).reset_index(drop=True)
    if y.dtype.kind == "f":  # a continuous target
        return pd.Series(np.sin(3 * y.to_numpy()) + y.to_numpy() ** 2, name=y.name)
    return pd.Series(np.roll(y.to_numpy(), 7), name=y.name)


def refit_chain(make):
    """``[(params, labels)]``: the case's own fit, then one change at a time."""
    params = make().get_params(deep=True)
    chain = [({}, "y")]
    current = {}
    for name, value in CHANGES:
        for key in [k for k in params if k == name or k.endswith("__" + name)]:
            current = {**current, key: value(current.get(key, params[key]))}
            chain.append((current, "y"))
            if name == "n_anchors":  # sampled anchors, then a second label vector
                chain.append((current, "y2"))
    if len(chain) == 1:  # no parameter applies: the labels alone
        chain.append(({}, "y2"))
    return chain[:CHAIN]


def assert_fit_equal(ref, est, prefix):
    """Every learned attribute equal to :data:`ATOL` times its own size (an
    IMMIGRATE cost on unscaled rows is 1e5: its sums agree to 1e-14 relative)."""
    fa, fb = fitted_attributes(ref), fitted_attributes(est)
    assert fa.keys() == fb.keys(), prefix
    for name, value in fa.items():
        assert_same(value, fb[name], prefix + name, ATOL * _size(value))


def assert_outputs_equal(ref, got, prefix):
    """Predictions as the learned attributes: floats to :data:`ATOL` times their
    size (IMMIGRATE's decision values near 100 agree to about 1e-11 relative)."""
    assert ref.keys() == got.keys(), prefix
    for method, value in ref.items():
        assert_same(value, got[method], prefix + method, ATOL * _size(value))


def _size(value):
    """The largest magnitude among a value's floats (record fields too), at least 1."""
    try:
        a = np.asarray(value)
        parts = [a[f] for f in a.dtype.names] if a.dtype.names else [a]
        return max(
            [1.0] + [float(np.max(np.abs(p), initial=0.0)) for p in parts if p.dtype.kind in "fiu"]
        )
    except (TypeError, ValueError):
        return 1.0


def _fitted(make, params, X, y):
    est = make()
    est.set_params(**params)
    return est.fit(X, y)


def _as_dask(X, y, blocks=4):
    if isinstance(X, pd.DataFrame):
        return dd.from_pandas(X, npartitions=blocks), dd.from_pandas(y, npartitions=blocks)
    rows = -(-len(y) // blocks)
    return (
        da.from_array(np.asarray(X), chunks=(rows, X.shape[1])),
        da.from_array(np.asarray(y), chunks=rows),
    )


@pytest.fixture(scope="module")
def one_worker():
    """A LocalCluster of one worker process with one thread."""
    cluster = start_local_cluster(1)
    yield cluster
    cluster.close()


def _cluster(request, n_workers):
    return request.getfixturevalue("one_worker" if n_workers == 1 else "local_cluster")


# The 1-worker cluster runs the estimators whose fits tile on the engine.
ONE_WORKER = {"IRelief", "ReliefF", "RReliefF", "MultiSURF", "Immigrate"}


@pytest.mark.slow
@pytest.mark.parametrize("n_workers", [1, 2])
@pytest.mark.parametrize("make, datasets, cluster, engine", CASES)
def test_refits_on_one_client_equal_their_own_reference(
    request, n_workers, make, datasets, cluster, engine
):
    if n_workers == 1 and request.node.callspec.id.rsplit("-", 1)[0] not in ONE_WORKER:
        pytest.skip("the 1-worker battery runs the engine's tiled estimators")
    from distributed import Client, get_task_stream

    dataset, kind = cluster
    X, y = frames(request, dataset)
    if kind == "array":
        X = X.to_numpy()
    labels = {"y": y.reset_index(drop=True), "y2": _other_labels(y)}
    chain = refit_chain(make)
    # References in-process, before any client exists; a change the estimator
    # refuses on these data (p-values on three classes) leaves the chain.
    assert_no_client()
    refs = []
    for params, which in chain:
        try:
            est = _fitted(make, params, X, labels[which])
        except ValueError:
            continue
        refs.append((params, which, est, predictions(est, X)))
    assert len(refs) >= 2, "no change applies to this estimator"

    lc = _cluster(request, n_workers)
    with Client(lc) as client:
        workers = set(client.scheduler_info()["workers"])
        assert len(workers) == n_workers
        data = {}
        for which, yy in labels.items():  # persisted once, read by every fit
            Xd, yd = _as_dask(X, yy)
            data[which] = client.persist(Xd), client.persist(yd)
        with get_task_stream(client) as stream:
            for params, which, ref, ref_out in refs:  # back to back, no pause
                Xd, yd = data[which]
                est = _fitted(make, params, Xd, yd)
                assert_fit_equal(ref, est, prefix=f"{params} {which}: ")
                assert_outputs_equal(ref_out, predictions(est, Xd), f"{params} {which}: ")
    if engine:
        ran = {t["worker"] for t in stream.data if _key_name(t["key"]).startswith("dmargin-")}
        assert ran == workers, "the engine's tasks did not run on the workers"


# ---------------------------------------------------------------------------
# Four fits at once on one client
# ---------------------------------------------------------------------------


def _random_rows(n, a, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, a))
    y = (X[:, 0] + X[:, 1] + 0.5 * rng.random(n) > 1.25).astype(np.int64)
    return X, y


CONCURRENT = [
    pytest.param(
        lambda i: dmargin.ReliefF(n_anchors=300, random_state=i, pvalues=False),
        id="ReliefF-anchors",
    ),
    pytest.param(
        lambda i: dmargin.IRelief(n_anchors=300, random_state=i, max_iter=3), id="IRelief-anchors"
    ),
    pytest.param(
        lambda i: dmargin.MultiSURF(n_anchors=300, random_state=i), id="MultiSURF-anchors"
    ),
    pytest.param(
        lambda i: dmargin.Immigrate(n_anchors=100, random_state=i, max_iter=2),
        id="Immigrate-anchors",
    ),
    pytest.param(
        lambda i: dmargin.ReliefF(n_neighbors=3 + 2 * i, pvalues=False), id="ReliefF-exact"
    ),
    pytest.param(lambda i: dmargin.IRelief(sigma=0.5 + i, max_iter=3), id="IRelief-exact"),
]


@pytest.mark.slow
@pytest.mark.parametrize("make", CONCURRENT)
def test_four_fits_at_once_on_one_client(make, local_cluster):
    from distributed import Client

    exact = make(0).n_anchors is None
    X, y = _random_rows(2000 if exact else 8000, 10)
    assert_no_client()
    refs = [make(i).fit(X, y) for i in range(4)]
    with Client(local_cluster) as client:
        Xd, yd = client.persist(
            [da.from_array(X, chunks=(len(y) // 8, 10)), da.from_array(y, chunks=len(y) // 8)]
        )
        with ThreadPoolExecutor(4) as pool:
            fits = list(pool.map(lambda i: make(i).fit(Xd, yd), range(4)))
    for i, (ref, est) in enumerate(zip(refs, fits)):
        assert_estimator_equal(ref, est, prefix=f"fit {i}: ")
    # The four fits differ: a shared result could not pass the comparison.
    w = [r.feature_importances_ for r in refs]
    assert min(np.abs(w[i] - w[j]).max() for i in range(4) for j in range(i)) > 1e-6


# ---------------------------------------------------------------------------
# A grid search over a pipeline
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("n_jobs", [1, 4])
def test_grid_search_on_dask_input_equals_numpy(n_jobs, local_cluster):
    import joblib
    from distributed import Client
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    X, y = _random_rows(300, 8, seed=3)
    search = lambda: GridSearchCV(  # noqa: E731
        Pipeline(
            [
                ("select", dmargin.ReliefF(n_features_to_select=2, pvalues=False)),
                ("clf", LogisticRegression()),
            ]
        ),
        {"select__n_anchors": [None, 100], "select__random_state": [0, 1]},
        cv=3,
        n_jobs=n_jobs,
    )
    assert_no_client()
    ref = search().fit(X, y)
    with Client(local_cluster) as client, joblib.parallel_config(backend="threading"):
        Xd, yd = client.persist([da.from_array(X, chunks=(50, 8)), da.from_array(y, chunks=50)])
        got = search().fit(Xd, yd)
    for key in ("mean_test_score", "split0_test_score", "split1_test_score", "split2_test_score"):
        np.testing.assert_allclose(
            got.cv_results_[key], ref.cv_results_[key], rtol=0, atol=1e-12, err_msg=key
        )
    assert got.best_params_ == ref.best_params_
