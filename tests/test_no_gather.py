"""Dask rows stay where they are: fits, predictions, margins and transforms on a cluster.

The dask input here is made of blocks that refuse to be computed in the
client process (:func:`_rows_on_a_worker` raises there, as
``distributed.get_worker()`` does off a worker), and every value the client
receives from the cluster is measured: no result may be as large as the
training rows (per-row predictions and per-feature vectors are fine).  On a
two-process ``LocalCluster``, fit + predict / decision_function / margins +
transform of each estimator must run, and give the numpy fit's answers to
1e-10 (class labels, rankings and masks exactly).

The boosting fits are left out of the size watch: their bin edges are placed
on a subsample of at most 200,000 rows (scikit-learn's rule), which for
these small data is every row; their predictions and margins are watched.
"""

import dask
import dask.array as da
import numpy as np
import pytest

import dmargin
from dmargin import _dask as _compat
from dmargin._pvalues import raw_pvalues

N, A, BLOCKS = 240, 8, 4
ATOL = 1e-10


def _rows_on_a_worker(values, start, stop):
    """Rows ``start:stop`` of ``values`` -- only inside a worker process."""
    from distributed import get_worker

    get_worker()  # raises ValueError in the client process
    return values[start:stop]


def _refusing(values):
    """``values`` as a dask array of :data:`BLOCKS` row blocks computable only on a worker."""
    edges = np.linspace(0, len(values), BLOCKS + 1).astype(int)
    parts = [
        da.from_delayed(
            dask.delayed(_rows_on_a_worker, pure=True)(values, s, e),
            shape=(e - s,) + values.shape[1:],
            dtype=values.dtype,
        )
        for s, e in zip(edges[:-1], edges[1:])
    ]
    return da.concatenate(parts)


@pytest.fixture(scope="module")
def data():
    """240 x 8 binary data: two informative features (one through an interaction)."""
    rng = np.random.default_rng(7)
    y = np.repeat([0, 1], N // 2)
    X = rng.normal(size=(N, A))
    X[:, 0] += 1.5 * y
    X[:, 3] -= 1.0 * y
    order = rng.permutation(N)
    return X[order], y[order]


class SizeWatch:
    """The largest value any computation brought back from the cluster, in bytes."""

    def __init__(self, monkeypatch):
        self.largest, self.active = 0, True
        real = _compat._compute_on

        def watched(client, todo, what, *args):
            values = real(client, todo, what, *args)
            if self.active:
                self.largest = max([self.largest] + [_nbytes(v) for v in values])
            return values

        monkeypatch.setattr(_compat, "_compute_on", watched)


def _nbytes(value):
    if isinstance(value, np.ndarray):
        return value.nbytes if value.dtype != object else sum(_nbytes(v) for v in value.ravel())
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    return 0


def _numpy(est, X, y, methods):
    """The numpy fit (no client) and its outputs."""
    est = est.fit(X, y)
    return est, {m: _call(est, m, X, y) for m in methods}


def _call(est, method, X, y):
    if method in ("margins", "feature_margins"):
        return getattr(est, method)(X, y)
    return getattr(est, method)(X)


CASES = [
    (
        lambda **kw: dmargin.AdaBoostStumps(n_estimators=8),
        ("predict", "decision_function", "margins", "feature_margins", "transform"),
        False,
    ),
    (
        lambda **kw: dmargin.SBSMF(n_features_to_select=2, step=2, n_estimators=5),
        ("transform",),
        False,
    ),
    (
        lambda **kw: dmargin.Immigrate(max_iter=2),
        ("predict", "decision_function", "predict_proba", "transform"),
        True,
    ),
    (
        lambda solver="auto": dmargin.LDM(kernel="linear", solver=solver),
        ("predict", "decision_function"),
        True,
    ),
    (
        lambda solver="auto": dmargin.LDMRFE(2, step=2, kernel="linear", solver=solver),
        ("transform",),
        True,
    ),
    (
        lambda solver="auto": dmargin.SVMRFE(2, step=2, kernel="linear", solver=solver),
        ("transform",),
        True,
    ),
    (lambda **kw: dmargin.ReliefF(n_neighbors=5, n_features_to_select=3), ("transform",), True),
    (
        lambda **kw: dmargin.ReliefF(
            n_neighbors=5, n_anchors=40, n_features_to_select=3, random_state=0
        ),
        ("transform",),
        True,
    ),
    (lambda **kw: dmargin.IRelief(max_iter=3, tol=0, n_features_to_select=3), ("transform",), True),
    (
        lambda **kw: dmargin.IRelief(
            max_iter=3, tol=0, n_anchors=40, n_features_to_select=3, random_state=0
        ),
        ("transform",),
        True,
    ),
    (lambda **kw: dmargin.MultiSURF(pvalues=True, n_features_to_select=3), ("transform",), True),
    (
        lambda **kw: dmargin.MultiSURF(
            pvalues=True, n_anchors=40, n_features_to_select=3, random_state=0
        ),
        ("transform",),
        True,
    ),
]
IDS = [
    "AdaBoostStumps",
    "SBSMF",
    "Immigrate",
    "LDM-linear",
    "LDMRFE-linear",
    "SVMRFE-linear",
    "ReliefF",
    "ReliefF-anchors",
    "IRelief",
    "IRelief-anchors",
    "MultiSURF-pvalues",
    "MultiSURF-anchors-pvalues",
]


def test_the_blocks_refuse_the_client(data):
    X, _ = data
    with pytest.raises(ValueError):
        _refusing(X).compute(scheduler="sync")


@pytest.mark.cluster
@pytest.mark.parametrize("make, methods, watch_fit", CASES, ids=IDS)
def test_dask_rows_are_never_gathered(data, make, methods, watch_fit, local_cluster, monkeypatch):
    from distributed import Client

    X, y = data
    # The numpy fit: the primal solver is asked for by name, "auto" picks it on dask input.
    local, expected = _numpy(make(solver="newton"), X, y, methods)
    Xd, yd = _refusing(X), _refusing(y)
    watch = SizeWatch(monkeypatch)
    with Client(local_cluster):
        watch.active = watch_fit
        remote = make().fit(Xd, yd)
        watch.active = True
        got = {}
        for m in methods:
            out = _call(remote, m, Xd, yd)
            got[m] = np.asarray(out)  # lazy results are computed here, on the workers
    # At most two float64 per row (predict_proba of two classes): X holds eight.
    assert watch.largest <= 16 * N, f"{watch.largest} bytes came back to the client"

    if hasattr(local, "solver_"):
        assert remote.solver_ == local.solver_ == "newton"
    for name in ("ranking_", "support_", "classes_"):
        if hasattr(local, name):
            np.testing.assert_array_equal(getattr(local, name), getattr(remote, name))
    for name in (
        "feature_importances_",
        "coef_",
        "weight_matrix_",
        "t_statistics_",
        "pvalues_",
        "global_pvalue_",
    ):
        if getattr(local, name, None) is not None:
            np.testing.assert_allclose(
                getattr(remote, name), getattr(local, name), rtol=0, atol=ATOL, err_msg=name
            )
    if raw_pvalues(local) is not None:  # STIR's, also where a feature's signal declined them
        for a, b in zip(raw_pvalues(remote), raw_pvalues(local)):
            np.testing.assert_allclose(a, b, rtol=0, atol=ATOL, err_msg="STIR")
    for m in methods:
        if m == "predict" or expected[m].dtype.kind not in "fc":
            np.testing.assert_array_equal(got[m], expected[m], err_msg=m)
        else:
            np.testing.assert_allclose(got[m], expected[m], rtol=0, atol=ATOL, err_msg=m)


def test_predictions_of_dask_input_are_lazy(data):
    """dask-ml's ``ParallelPostFit`` convention: a dask array over X's blocks."""
    X, y = data
    Xd = da.from_array(X, chunks=(60, A))
    stumps = dmargin.AdaBoostStumps(n_estimators=5).fit(X, y)
    ldm = dmargin.LDM(kernel="linear", solver="newton").fit(X, y)
    for out in (
        stumps.predict(Xd),
        stumps.decision_function(Xd),
        ldm.predict(Xd),
        ldm.decision_function(Xd),
        stumps.feature_margins(Xd, y),
    ):
        assert isinstance(out, da.Array) and out.numblocks[0] == 4
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(stumps.predict(Xd).compute(), stumps.predict(X))
        np.testing.assert_array_equal(ldm.predict(Xd).compute(), ldm.predict(X))
        np.testing.assert_array_equal(
            stumps.feature_margins(Xd, y).compute(), stumps.feature_margins(X, y)
        )
        Xn = X.copy()
        Xn[70, 2] = np.nan
        with pytest.raises(ValueError, match="NaN or infinite values in column 2"):
            stumps.predict(da.from_array(Xn, chunks=(60, A))).compute()
        with pytest.raises(ValueError, match="outside classes_"):
            stumps.margins(Xd, da.from_array(np.where(y == 1, 1, 5), chunks=60))
    with pytest.raises(ValueError, match="fitted with 8 features"):
        ldm.predict(Xd[:, :5])


@pytest.mark.parametrize(
    "make",
    [
        lambda: dmargin.Immigrate(max_iter=2),
        lambda: dmargin.IM4E(max_iter=2),
        lambda: dmargin.IM4EImmigrate(max_iter=2),
        lambda: dmargin.BoostedImmigrate(n_estimators=3, max_iter=2),
    ],
    ids=["Immigrate", "IM4E", "IM4EImmigrate", "BIM"],
)
def test_numpy_fits_score_dask_rows_by_blocks(data, make, threaded):
    """A model fitted on numpy scores dask rows block by block (its training rows are
    placed as blocks beside them); the answers are the numpy ones."""
    X, y = data
    est = make().fit(X, y)
    Xd = da.from_array(X, chunks=(60, A))
    for method in ("predict", "decision_function"):
        got, want = getattr(est, method)(Xd), getattr(est, method)(X)
        if method == "predict":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)
