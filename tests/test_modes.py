"""Same answer everywhere: in-process, threaded dask, and a 2-process LocalCluster.

Every public fitted attribute is compared to 1e-10, and the cluster runs
check that the tile tasks really executed on the worker processes.
"""

import dask.array as da
import numpy as np
import pytest

import dmargin

ESTIMATORS = [
    pytest.param(lambda: dmargin.IRelief(max_iter=6, tol=0, sigma=1.0), id="IRelief"),
    pytest.param(lambda: dmargin.IRelief(max_iter=4, tol=0, multiclass="relieff",
                                         outliers=False), id="IRelief-1"),
    pytest.param(lambda: dmargin.OnlineIRelief(n_passes=2, block_size=17, random_state=3),
                 id="OnlineIRelief"),
    pytest.param(lambda: dmargin.ReliefF(n_neighbors=4), id="ReliefF"),
    pytest.param(lambda: dmargin.Relief(), id="Relief"),
]


def fitted_attributes(est):
    """All public learned attributes (trailing underscore), as in dask-ml's helper."""
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def assert_estimator_equal(a, b, atol=1e-10):
    """Every learned attribute equal: floats to ``atol``, record arrays field by
    field (``history_``), tables cell by cell (``interactions_``), the rest exactly."""
    fa, fb = fitted_attributes(a), fitted_attributes(b)
    assert fa.keys() == fb.keys()
    for name in fa:
        x, y = np.asarray(fa[name]), np.asarray(fb[name])
        if x.dtype.names:
            for field in x.dtype.names:
                np.testing.assert_allclose(x[field], y[field], rtol=0, atol=atol,
                                           err_msg=f"{name}.{field}")
        elif x.dtype == object:
            assert x.shape == y.shape, name
            for u, v in zip(x.ravel(), y.ravel()):
                if isinstance(u, float):
                    assert abs(u - v) <= atol, (name, u, v)
                else:
                    assert u == v, (name, u, v)
        elif x.dtype.kind == "f":
            np.testing.assert_allclose(x, y, rtol=0, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)


def as_dask(X, y, rows=23):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


@pytest.fixture(params=["blobs_binary", "blobs_multiclass"])
def data(request):
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_threaded_dask_equals_in_process(make, data, threaded):
    X, y = data
    local = make().fit(X, y)
    on_dask = make().fit(*as_dask(X, y))
    assert_estimator_equal(local, on_dask)


@pytest.mark.parametrize("rows", [7, 31, 200])
def test_chunking_does_not_change_irelief(blobs_multiclass, rows, threaded):
    X, y = blobs_multiclass
    local = dmargin.IRelief(max_iter=3, tol=0).fit(X, y)
    on_dask = dmargin.IRelief(max_iter=3, tol=0).fit(*as_dask(X, y, rows))
    assert_estimator_equal(local, on_dask)


@pytest.mark.cluster
@pytest.mark.parametrize("make", ESTIMATORS)
def test_cluster_equals_in_process(make, blobs_multiclass, client):
    from distributed import get_task_stream

    X, y = blobs_multiclass
    local = make().fit(X, y)
    workers = set(client.scheduler_info()["workers"])
    with get_task_stream(client) as stream:
        remote = make().fit(*as_dask(X, y))
    assert_estimator_equal(local, remote)
    ran_on = {t["worker"] for t in stream.data}
    assert ran_on and ran_on <= workers
    if not isinstance(remote, dmargin.OnlineIRelief):  # online steps run on the driver
        tile_workers = {t["worker"] for t in stream.data if "dmargin-" in str(t["key"])}
        assert tile_workers == workers, "tile tasks did not run on both workers"


@pytest.mark.cluster
def test_numpy_input_under_a_client_runs_on_the_cluster(blobs_binary, client):
    from distributed import get_task_stream

    X, y = blobs_binary
    local = dmargin.IRelief(max_iter=3, tol=0)
    # Without the client: in-process.  With it: numpy is scattered and tiled.
    client_less = local.fit(X, y).feature_importances_
    with get_task_stream(client) as stream:
        est = dmargin.IRelief(max_iter=3, tol=0).fit(X, y)
    assert any("dmargin-lse" in str(t["key"]) for t in stream.data)
    np.testing.assert_allclose(est.feature_importances_, client_less, rtol=0, atol=1e-10)
