"""The pairwise engine: tile kernels and merges against brute force, over chunkings.

Shaped like dask's ``reduction_1d_test``: each statistic is checked against
plain numpy across several chunkings and tree fan-ins, the merges for
associativity on random split points, and both modes of the softmax
(one-pass merge and two passes) against each other.
"""

import numpy as np
import pytest

from dmargin._base import miss_priors
from dmargin.engine import execution, merge, tiles


def _brute_lse(Xa, ia, Xc, yc, ic, w, sigma, k):
    """(m, s, v) per anchor and class, straight from the definitions."""
    n, a = Xa.shape
    m = np.full((n, k), -np.inf)
    s = np.zeros((n, k))
    v = np.zeros((n, k, a))
    for i in range(n):
        z = np.abs(Xa[i] - Xc)
        logit = -(z @ w) / sigma
        for c in range(k):
            sel = (yc == c) & (ic != ia[i])
            if sel.any():
                m[i, c] = logit[sel].max()
                e = np.exp(logit[sel] - m[i, c])
                s[i, c] = e.sum()
                v[i, c] = e @ z[sel]
    return m, s, v


@pytest.fixture(scope="module")
def rows_data():
    rng = np.random.default_rng(5)
    X = rng.random((57, 6))
    X[10] = X[11]  # duplicate row
    X[:, 4] = 0.25  # constant feature
    y = rng.integers(0, 3, 57)
    y[0] = 3  # one-sample class
    return X, y, 4


def test_lse_tile_matches_brute_force(rows_data):
    X, y, k = rows_data
    w = np.random.default_rng(0).random(X.shape[1])
    ia, ic = np.arange(20, 40), np.arange(57)
    for kernel in tiles.KERNELS["lse"]:
        got = kernel(X[20:40], ia, X, y, ic, w, 0.7, k)
        want = _brute_lse(X[20:40], ia, X, y, ic, w, 0.7, k)
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", range(4))
def test_lse_combine_is_associative(rows_data, seed):
    X, y, k = rows_data
    rng = np.random.default_rng(seed)
    w = rng.random(X.shape[1])
    ia, ic = np.arange(57), np.arange(57)
    whole = tiles.lse_tile(X, ia, X, y, ic, w, 0.3, k)
    cuts = np.sort(rng.choice(np.arange(1, 57), 4, replace=False))
    pieces = [tiles.lse_tile(X, ia, X[a:b], y[a:b], ic[a:b], w, 0.3, k)
              for a, b in zip([0, *cuts], [*cuts, 57])]
    left = merge.lse_combine([merge.lse_combine(pieces[:2]), merge.lse_combine(pieces[2:])])
    flat = merge.lse_combine(pieces[::-1])
    for parts in (left, flat):
        for g, e in zip(parts, whole):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", range(3))
def test_knn_combine_equals_whole_search(rows_data, seed):
    X, y, k = rows_data
    rng = np.random.default_rng(seed)
    ia, ic = np.arange(57), np.arange(57)
    whole = tiles.knn_tile(X, ia, X, y, ic, k, 5)
    cuts = np.sort(rng.choice(np.arange(1, 57), 3, replace=False))
    pieces = [tiles.knn_tile(X, ia, X[a:b], y[a:b], ic[a:b], k, 5)
              for a, b in zip([0, *cuts], [*cuts, 57])]
    merged = merge.knn_combine([merge.knn_combine(pieces[1:]), pieces[0]])
    for g, e in zip(merged, whole):
        np.testing.assert_array_equal(g, e)


def test_knn_tile_exact_despite_float32_prefilter():
    """Near-ties closer than float32 resolution are still ordered exactly."""
    rng = np.random.default_rng(1)
    X = rng.random((40, 8)) * 1e3
    X[5] = X[4] + 1e-9  # distances differ far below float32 precision
    y = np.zeros(40, dtype=np.int64)
    ia = ic = np.arange(40)
    d, idx, _ = tiles.knn_tile(X, ia, X, y, ic, 1, 3)
    for i in range(40):
        full = np.abs(X - X[i]).sum(axis=1)
        full[i] = np.inf
        order = np.lexsort((np.arange(40), full))[:3]
        np.testing.assert_array_equal(idx[i, 0], order)
        np.testing.assert_allclose(d[i, 0], full[order], rtol=1e-14)


def _irelief_args(y, k):
    return (True, miss_priors(np.bincount(y, minlength=k)), True)


@pytest.mark.parametrize("rows", [5, 19, 57])
@pytest.mark.parametrize("split_every", [2, 3, 8])
def test_lse_statistic_over_chunkings(rows_data, rows, split_every, threaded):
    import dask.array as da

    X, y, k = rows_data
    w = np.full(X.shape[1], 0.3)
    local = execution.lse_statistic(execution.prepare_rows(X, y, k), w, 1.5, merge.irelief_agg,
                                    _irelief_args(y, k))
    on_dask = execution.prepare_rows(da.from_array(X, chunks=(rows, 6)),
                                     da.from_array(y, chunks=rows), k)
    for mode, agg in (("auto", merge.irelief_agg), ("two-pass", merge.irelief_coef)):
        got = execution.lse_statistic(on_dask, w, 1.5, agg, _irelief_args(y, k), mode=mode,
                                      split_every=split_every)
        np.testing.assert_allclose(got, local, rtol=1e-12, atol=1e-15)


def test_two_pass_equals_one_pass_in_process(rows_data):
    X, y, k = rows_data
    rows = execution.prepare_rows(X, y, k)
    w = np.random.default_rng(2).random(X.shape[1])
    for pooled in (True, False):
        args = (pooled, miss_priors(np.bincount(y, minlength=k)), True)
        one = execution.lse_statistic(rows, w, 0.4, merge.irelief_agg, args)
        two = execution.lse_statistic(rows, w, 0.4, merge.irelief_coef, args, mode="two-pass")
        np.testing.assert_allclose(one, two, rtol=1e-12, atol=1e-15)


def test_graph_keys_are_deterministic(rows_data, threaded):
    import dask.array as da

    X, y, k = rows_data
    rows = execution.prepare_rows(da.from_array(X, chunks=(20, 6)), da.from_array(y, chunks=20), k)
    names = []
    original = execution._Graph.compute

    def spy(self, key):
        names.append((self.name, sorted(map(str, self.dsk))))
        return original(self, key)

    execution._Graph.compute = spy
    try:
        for _ in range(2):
            execution.lse_statistic(rows, np.ones(6), 1.0, merge.irelief_agg, _irelief_args(y, k))
    finally:
        execution._Graph.compute = original
    assert names[0] == names[1]


def test_tile_shapes_follow_the_budget(monkeypatch):
    monkeypatch.setattr(execution, "TILE_BUDGET", 8 * 4 * (10 + 2) * 50)
    assert execution.rows_per_block(10, 4) == 50
    import dask.array as da

    X = da.random.random((400, 10), chunks=(400, 10))
    y = da.zeros(400, dtype=int, chunks=400)
    rows = execution.prepare_rows(X, y, 4)
    assert max(rows.X.chunks[0]) <= 50
