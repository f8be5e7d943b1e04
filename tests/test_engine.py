"""The pairwise engine: tile kernels and merges against brute force, over chunkings.

Shaped like dask's ``reduction_1d_test``: each statistic is checked against
plain numpy across several chunkings and tree fan-ins, the merges for
associativity on random split points, and both modes of the softmax
(one-pass merge and two passes) against each other.
"""

import inspect

import numba
import numpy as np
import pytest

from dmargin._base import miss_priors
from dmargin.engine import execution, grid, merge, neighbours, quadratic
from dmargin.engine._numba import FASTMATH
from dmargin.engine.kernels import knn, lse, quad, terms

try:
    from . import reference
    from . import reference_immigrate as ref
except ImportError:
    import reference
    import reference_immigrate as ref


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
    for kernel in (lse.KERNEL.serial, lse.KERNEL.threaded):
        got = kernel(X[20:40], ia, X, y, ic, w, 0.7, k)
        want = _brute_lse(X[20:40], ia, X, y, ic, w, 0.7, k)
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


def _irelief_partials(rng, n_anchors, n_classes, n_features, spread):
    """Random (m, s, v) partials with the odd cases: empty classes, anchors without
    hits or without misses, logits far apart (``spread``)."""
    m = rng.normal(scale=spread, size=(n_anchors, n_classes))
    s = rng.uniform(0.5, 3.0, size=(n_anchors, n_classes))
    empty = rng.random((n_anchors, n_classes)) < 0.25
    empty[0] = True  # no candidate at all
    empty[1, 1:] = True  # hits only (class 0 is anchor 1's class below)
    empty[2, 0] = True  # misses only
    m[empty], s[empty] = -np.inf, 0.0
    v = rng.uniform(size=(n_anchors, n_classes, n_features)) * (~empty)[..., None]
    ya = rng.integers(0, n_classes, n_anchors)
    ya[:3] = 0
    return m, s, v, ya


@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("pooled", [False, True])
@pytest.mark.parametrize("outliers", [False, True])
@pytest.mark.parametrize("spread", [1.0, 400.0])
def test_irelief_agg_equals_the_online_kernels_per_anchor_term(n_classes, pooled, outliers, spread):
    """The batch agg (numpy, every anchor at once) and the online kernel's per-anchor
    numba helper are two codings of eqs. (8)-(10): equal on every case."""
    rng = np.random.default_rng(n_classes + 10 * pooled + 100 * outliers)
    m, s, v, ya = _irelief_partials(rng, 60, n_classes, 7, spread)
    prior = rng.uniform(0.1, 1.0, size=(n_classes, n_classes))
    np.fill_diagonal(prior, 0.0)
    weight = rng.uniform(size=60)
    weight[5] = 0.0
    want = np.zeros(7)
    for a in range(60):
        term = np.zeros(7)
        terms.irelief_anchor_term(m[a], s[a], v[a], ya[a], pooled, prior, outliers, term)
        log_z, coef = np.empty(n_classes), np.empty(n_classes)
        terms._irelief_coef(m[a], s[a], ya[a], pooled, prior, outliers, log_z, coef)
        got_z, got_coef = terms.irelief_coefs(
            m[a : a + 1], s[a : a + 1], ya[a : a + 1], pooled, prior, outliers
        )
        np.testing.assert_allclose(got_coef[0], coef, rtol=1e-13, atol=0)
        np.testing.assert_allclose(got_z[0][coef != 0], log_z[coef != 0], rtol=1e-14, atol=0)
        want += weight[a] * term
    got = terms.irelief_agg(m, s, v, ya, weight, pooled, prior, outliers)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert np.any(want != 0)


@pytest.mark.parametrize("seed", range(4))
def test_lse_combine_is_associative(rows_data, seed):
    X, y, k = rows_data
    rng = np.random.default_rng(seed)
    w = rng.random(X.shape[1])
    ia, ic = np.arange(57), np.arange(57)
    whole = lse.lse_tile(X, ia, X, y, ic, w, 0.3, k)
    cuts = np.sort(rng.choice(np.arange(1, 57), 4, replace=False))
    pieces = [
        lse.lse_tile(X, ia, X[a:b], y[a:b], ic[a:b], w, 0.3, k)
        for a, b in zip([0, *cuts], [*cuts, 57])
    ]
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
    whole = knn.knn_tile(X, ia, X, y, ic, k, 5)
    cuts = np.sort(rng.choice(np.arange(1, 57), 3, replace=False))
    pieces = [
        knn.knn_tile(X, ia, X[a:b], y[a:b], ic[a:b], k, 5) for a, b in zip([0, *cuts], [*cuts, 57])
    ]
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
    d, idx, _ = knn.knn_tile(X, ia, X, y, ic, 1, 3)
    for i in range(40):
        full = np.abs(X - X[i]).sum(axis=1)
        full[i] = np.inf
        order = np.lexsort((np.arange(40), full))[:3]
        np.testing.assert_array_equal(idx[i, 0], order)
        np.testing.assert_allclose(d[i, 0], full[order], rtol=1e-14)


@pytest.mark.parametrize("kernel", [0, 1], ids=["serial", "threaded"])
@pytest.mark.parametrize("case", ["ties", "offset", "wide-k", "small-class", "sample"])
def test_knn_tile_float32_prefilter_changes_no_neighbour(kernel, case):
    """The float32 prefilter with its float64 recheck gives exactly the float64 search.

    Values on a grid of eighths make every distance exact in any summation
    order, so ties are real and go to the lower row index: ``ties`` (4 values
    a feature: most rows have many rows at the same distance, and duplicate
    rows), ``offset`` (the same grid at 1e6, where the float32 error bound
    exceeds every distance and nothing may be dropped), ``wide-k`` (k = 40:
    the pool of candidates overflows), ``small-class`` (a class with fewer
    rows than k), ``sample`` (anchors that are not candidates).
    """
    rng = np.random.default_rng(11)
    n, a, k, n_classes = 700, 9, 6, 3
    X = rng.integers(0, 4, (n, a)) / 8.0
    y = rng.integers(0, n_classes, n)
    if case == "offset":
        X = X + 1e6
    if case == "wide-k":
        X = rng.integers(0, 64, (n, a)) / 8.0
        k = 40
    if case == "small-class":
        y[y == 2] = 0
        y[rng.choice(n, 4, replace=False)] = 2
    ic = np.arange(n) + 1000  # global indices other than positions
    ia, Xa = ic[::3], X[::3]
    if case == "sample":
        Xa = rng.integers(0, 4, (90, a)) / 8.0
        ia = np.arange(90) + 5000
    d, idx, z = (knn.KERNEL.serial, knn.KERNEL.threaded)[kernel](Xa, ia, X, y, ic, n_classes, k)
    want_d, want_idx = reference.knn_lists(Xa, ia, X, y, ic, n_classes, k)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(d, want_d)
    filled = want_idx >= 0
    rows = X[np.where(filled, want_idx - 1000, 0)]
    np.testing.assert_array_equal(z[filled], np.abs(Xa[:, None, None, :] - rows)[filled])


@pytest.mark.parametrize("threads", [1, 4], ids=["groups-of-blocks", "a-block-a-group"])
@pytest.mark.parametrize("kernel", [0, 1], ids=["serial", "threaded"])
@pytest.mark.parametrize("case", ["ties", "offset", "wide-k", "small-class", "one-block"])
def test_all_pairs_lists_equal_the_float64_search(kernel, case, threads):
    """Every pair measured once for both its rows (:data:`knn.ALL_PAIRS`, blocks of
    one class in groups, the groups paired in rounds) gives every row the lists of
    the float64 search: the data of the test above, and a class within one block
    (``one-block``).  ``threads`` sets the groups: 4 of two or three blocks (the
    blocks of a group of different classes) or one block each."""
    rng = np.random.default_rng(12)
    n, a, k, n_classes = 900, 7, 6, 3
    X = rng.integers(0, 4, (n, a)) / 8.0
    y = rng.integers(0, n_classes, n)
    if case == "offset":
        X = X + 1e6
    if case == "wide-k":
        X = rng.integers(0, 64, (n, a)) / 8.0
        k = 40
    if case == "small-class":
        y[y == 2] = 0
        y[rng.choice(n, 4, replace=False)] = 2
    if case == "one-block":
        n = knn.KNN_BLOCK - 3
        X, y = X[:n], y[:n]
    ids = np.arange(n) + 1000
    if case != "one-block":
        assert 4 < -(-n // knn.KNN_BLOCK) < 16  # more blocks than 4 groups, fewer than 16
    d, idx = (knn.ALL_PAIRS.serial, knn.ALL_PAIRS.threaded)[kernel](
        X, ids, y, n_classes, k, threads
    )
    want_d, want_idx = reference.knn_lists(X, ids, X, y, ids, n_classes, k)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(d, want_d)
    z = knn.neighbour_differences(X, X, idx, 1000)
    filled = want_idx >= 0
    rows = X[np.where(filled, want_idx - 1000, 0)]
    np.testing.assert_array_equal(z[filled], np.abs(X[:, None, None, :] - rows)[filled])
    assert not z[~filled].any()


@pytest.mark.parametrize("twin", ["serial", "threaded"])
def test_neighbour_sums_are_the_difference_rows_summed_bit_for_bit(twin):
    """Both twins of :data:`knn.NEIGHBOUR_SUMS` (the threaded one runs a fit's share
    on the all-pairs kernel's threads) give numpy's sums of the difference rows over
    the ranks, bit for bit, and count the filled slots; an empty slot adds nothing."""
    rng = np.random.default_rng(5)
    Xc, Xa = rng.random((400, 9)), rng.random((70, 9))
    idx = rng.integers(0, 400, (70, 3, 5)) + 1000
    idx[rng.random(idx.shape) < 0.2] = -1
    found, sums = getattr(knn.NEIGHBOUR_SUMS, twin)(Xa, Xc, idx, 1000)
    z = knn.neighbour_differences(Xa, Xc, idx, 1000)
    np.testing.assert_array_equal(sums, z.sum(axis=2))
    np.testing.assert_array_equal(found[..., 0], (idx >= 0).sum(axis=2))


def _prange_lines(fn):
    """The source lines of ``fn`` that open a ``numba.prange`` loop."""
    lines, first = inspect.getsourcelines(fn)
    return {first + i for i, line in enumerate(lines) if "numba.prange(" in line}


def _parallel_lines(dispatcher):
    """The source lines of the loops numba made parallel in ``dispatcher``'s one compiled
    signature (its parfors before fusion)."""
    (metadata,) = dispatcher.get_metadata().values()
    parfors = metadata["parfor_diagnostics"].initial_parfors
    source = inspect.getsourcefile(dispatcher.py_func)
    return {p.loc.line for p in parfors if p.loc.filename == source}


@pytest.mark.parametrize("name", ["ALL_PAIRS", "KERNEL"])
def test_every_prange_of_a_threaded_knn_kernel_runs_in_parallel(name):
    """numba turns a ``prange`` it cannot make parallel into a plain loop, silently: a
    threaded twin would then run on one thread.  Each of the k-nearest kernels'
    ``prange`` loops must be one of its parallel loops.  The kernel is compiled here as
    its threaded twin is (:func:`dmargin.engine._numba.twins`), without the cache: a
    kernel loaded from numba's cache carries no parallel diagnostics."""
    fn = getattr(knn, name).serial.py_func
    threaded = numba.njit(parallel=True, fastmath=FASTMATH)(fn)
    rng = np.random.default_rng(0)
    X, y = rng.random((300, 5)), rng.integers(0, 2, 300)
    ids = np.arange(300)
    if name == "ALL_PAIRS":
        threaded(X, ids, y, 2, 3, 2)
    else:
        threaded(X[:50], ids[:50], X, y, ids, 2, 3)
    want = _prange_lines(fn)
    assert want and want <= _parallel_lines(threaded)


@pytest.mark.parametrize("kernel", [0, 1], ids=["serial", "threaded"])
def test_tiles_over_anchor_groups_and_candidate_blocks(kernel):
    """150 anchors (groups of 64, 64 and 22) against 700 candidates of 3 classes
    (several CAND_BLOCKs per class): each anchor's hard and soft neighbours as
    the definitions give them."""
    assert 2 * lse.ANCHOR_GROUP < 150 < 3 * lse.ANCHOR_GROUP and 700 > 2 * lse.CAND_BLOCK
    rng = np.random.default_rng(7)
    Xc = rng.random((700, 9))
    yc = rng.integers(0, 3, 700)
    ic = np.arange(700)
    ia = rng.choice(700, 150, replace=False)  # anchors among the candidates: no self-match
    Xa = Xc[ia]
    w = rng.random(9)
    got = (lse.KERNEL.serial, lse.KERNEL.threaded)[kernel](Xa, ia, Xc, yc, ic, w, 0.3, 3)
    for g, e in zip(got, _brute_lse(Xa, ia, Xc, yc, ic, w, 0.3, 3)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    d, idx, z = (knn.KERNEL.serial, knn.KERNEL.threaded)[kernel](Xa, ia, Xc, yc, ic, 3, 5)
    for a in range(150):
        full = np.abs(Xc - Xa[a]).sum(axis=1)
        full[ia[a]] = np.inf
        for c in range(3):
            members = np.flatnonzero((yc == c) & (ic != ia[a]))
            order = members[np.lexsort((members, full[members]))][:5]
            np.testing.assert_array_equal(idx[a, c], order)
            np.testing.assert_allclose(d[a, c], full[order], rtol=1e-14)
            np.testing.assert_allclose(z[a, c], np.abs(Xa[a] - Xc[order]), rtol=1e-15)


def _irelief_args(y, k):
    return (True, miss_priors(np.bincount(y, minlength=k)), True)


@pytest.mark.parametrize("rows", [3, 5, 19, 57])
def test_lse_statistic_over_chunkings(rows_data, rows, threaded):
    import dask.array as da

    X, y, k = rows_data
    w = np.full(X.shape[1], 0.3)
    local = neighbours.lse_statistic(
        execution.prepare_rows(X, y, k), w, 1.5, terms.irelief_agg, _irelief_args(y, k)
    )
    on_dask = execution.prepare_rows(
        da.from_array(X, chunks=(rows, 6)), da.from_array(y, chunks=rows), k
    )
    got = neighbours.lse_statistic(on_dask, w, 1.5, terms.irelief_agg, _irelief_args(y, k))
    np.testing.assert_allclose(got, local, rtol=1e-12, atol=1e-15)


def _class_sums_agg(dist, idx, z, ya):
    """Per class of the neighbours, the sum of their difference rows and their count."""
    found = idx >= 0
    return np.concatenate([z.sum(axis=(0, 2)).ravel(), found.sum(axis=(0, 2))]).astype(float)


def _from_class_sums(found, sums, ya):
    """:func:`_class_sums_agg` from the engine's per-class sums (``sums_agg``)."""
    return np.concatenate([sums.sum(axis=0).ravel(), found.sum(axis=0).ravel()])


def test_knn_statistic_sums_agg_is_agg_from_the_same_lists(rows_data, monkeypatch):
    """``sums_agg`` on the in-process lists gives ``agg``'s share (the same neighbours,
    their sums added in another order), from one sums call for every row whatever
    the anchor blocks, and is not used where the difference rows come from the
    tiles (dask rows)."""
    import dask.array as da

    X, y, k = rows_data
    rows = execution.prepare_rows(X, y, k)
    plain = neighbours.knn_statistic(rows, 4, _class_sums_agg)
    used = []

    def counted(*args):
        used.append(len(args[0]))
        return _from_class_sums(*args)

    calls = []
    monkeypatch.setattr(knn, "NEIGHBOUR_SUMS", _Counting(knn.NEIGHBOUR_SUMS, calls))
    summed = neighbours.knn_statistic(rows, 4, _class_sums_agg, sums_agg=counted)
    assert used == [len(y)] and len(calls) == 1  # every anchor through sums_agg
    a = X.shape[1] * k
    np.testing.assert_array_equal(summed[a:], plain[a:])
    np.testing.assert_allclose(summed, plain, rtol=1e-13)
    # Anchor blocks of at most 10 rows: still one sums call for every row (one parallel region,
    # not one a block), each block's share from its rows; a row's sums do not depend
    # on the blocks, so the blocks' shares add up as the plain fit's blocks do.
    monkeypatch.setattr(neighbours, "NEAREST_BYTES", 10 * 8 * k * 4 * (X.shape[1] + 2))
    used.clear()
    blocked_plain = neighbours.knn_statistic(rows, 4, _class_sums_agg)
    blocked = neighbours.knn_statistic(rows, 4, _class_sums_agg, sums_agg=counted)
    assert used == [9, 10, 9, 10, 9, 10] and len(calls) == 2  # 57 rows: 6 near-equal blocks
    np.testing.assert_array_equal(blocked[a:], blocked_plain[a:])
    np.testing.assert_allclose(blocked, summed, rtol=1e-13)
    refused = []
    on_dask = execution.prepare_rows(da.from_array(X, chunks=(7, 6)), da.from_array(y, chunks=7), k)
    neighbours.knn_statistic(on_dask, 4, _class_sums_agg, sums_agg=lambda *a: refused.append(a))
    assert not refused


@pytest.mark.parametrize("rows", [5, 19])
def test_knn_statistic_in_process_all_pairs_equals_the_blocks_on_dask(rows_data, rows, monkeypatch):
    """In-process (every pair measured once: :data:`knn.ALL_PAIRS`), in-process past
    its work limit (anchor blocks against every row) and on dask (row blocks merged)
    give the same neighbour sums; the first path is the one a default fit takes."""
    import dask.array as da

    X, y, k = rows_data
    calls = []
    monkeypatch.setattr(knn, "ALL_PAIRS", _Counting(knn.ALL_PAIRS, calls))
    local = neighbours.knn_statistic(execution.prepare_rows(X, y, k), 4, _class_sums_agg)
    assert len(calls) == 1
    monkeypatch.setattr(neighbours, "ALL_PAIRS_WORK", 0)
    blocks = neighbours.knn_statistic(execution.prepare_rows(X, y, k), 4, _class_sums_agg)
    on_dask = execution.prepare_rows(
        da.from_array(X, chunks=(rows, 6)), da.from_array(y, chunks=rows), k
    )
    dask_sums = neighbours.knn_statistic(on_dask, 4, _class_sums_agg)
    assert len(calls) == 1
    # The same neighbours (their counts equal); the sums added up block by block.
    a = X.shape[1] * k
    np.testing.assert_array_equal(blocks[a:], local[a:])
    np.testing.assert_array_equal(dask_sums[a:], local[a:])
    np.testing.assert_allclose(blocks, local, rtol=1e-13)
    np.testing.assert_allclose(dask_sums, local, rtol=1e-13)


class _Counting:
    """A kernel object whose ``pick`` records each call."""

    def __init__(self, kernel, calls):
        self._kernel, self._calls = kernel, calls

    def pick(self, *args, **kwargs):
        self._calls.append(args)
        return self._kernel.pick(*args, **kwargs)

    def is_threaded(self, twin):
        return self._kernel.is_threaded(twin)


def test_in_process_anchor_blocks_equal_one_block(rows_data, monkeypatch):
    X, y, k = rows_data
    w = np.random.default_rng(2).random(X.shape[1])
    args = _irelief_args(y, k)
    rows = execution.prepare_rows(X, y, k)
    whole = neighbours.lse_statistic(rows, w, 0.4, terms.irelief_agg, args)
    # A budget of 4 anchors per tile: 15 anchor blocks, tree-merged.
    monkeypatch.setattr(grid, "TILE_BUDGET", 8 * k * (X.shape[1] + 2) * 4)
    split = neighbours.lse_statistic(rows, w, 0.4, terms.irelief_agg, args)
    np.testing.assert_allclose(split, whole, rtol=1e-12, atol=1e-15)


def test_graph_keys_are_deterministic(rows_data, threaded):
    import dask.array as da

    X, y, k = rows_data
    rows = execution.prepare_rows(da.from_array(X, chunks=(20, 6)), da.from_array(y, chunks=20), k)
    names = []
    original = execution.Graph.compute

    def spy(self, key, **kwargs):
        names.append((self.name, sorted(map(str, self.dsk))))
        return original(self, key, **kwargs)

    execution.Graph.compute = spy
    try:
        for _ in range(2):
            neighbours.lse_statistic(rows, np.ones(6), 1.0, terms.irelief_agg, _irelief_args(y, k))
    finally:
        execution.Graph.compute = original
    assert names[0] == names[1]


def test_tile_shapes_follow_the_budget(monkeypatch):
    monkeypatch.setattr(execution, "TILE_BUDGET", 8 * 4 * (10 + 2) * 50)
    assert execution.rows_per_block(10, 4) == 50
    import dask.array as da

    X = da.random.random((400, 10), chunks=(400, 10))
    y = da.zeros(400, dtype=int, chunks=400)
    rows = execution.prepare_rows(X, y, 4)
    assert max(rows.X.chunks[0]) <= 50


# ---------------------------------------------------------------------------
# Quadratic (IMMIGRATE) E-step over pairs of row blocks
# ---------------------------------------------------------------------------


def _quad_case(name):
    """(X, y, W, sigma, sample_weight) for one scenario of the quadratic E-step."""
    rng = np.random.default_rng(7)
    if name == "far-apart":
        # One row far from all others at a small sigma: its normaliser lies
        # thousands of logits below its block's maximum (own exponentials).
        X = rng.normal(size=(90, 5)) * 0.1
        X[17] += 40.0
        y = np.arange(90) % 2
        return X, y, np.eye(5) / np.sqrt(5), 0.05, None
    X = rng.normal(size=(130, 6))
    y = rng.integers(0, 3, size=130)
    X[:, 0] += y
    if name == "diagonal":
        return X, y, np.diag(rng.random(6)), 1.0, None
    W = rng.random((6, 6))
    W = (W + W.T) / np.linalg.norm(W + W.T)
    if name == "weighted":
        d = rng.random(130) * 2
        d[::7] = 0.0
        return X, y, W, 0.7, d
    return X, y, W, 2.0, None


@pytest.mark.parametrize("case", ["dense", "diagonal", "far-apart", "weighted"])
@pytest.mark.parametrize("how", ["one-block", "threads", "no-store", "dask-7", "dask-50"])
def test_quad_statistic_matches_brute_force(case, how, monkeypatch, threaded):
    import dask.array as da

    from dmargin.immigrate._solver import _factor  # the eigen-factor IMMIGRATE passes the engine

    X, y, W, sigma, d = _quad_case(case)
    want = ref.immigrate_step(X, y, W, sigma=sigma, sample_weight=d)
    k = int(y.max()) + 1
    if how.startswith("dask"):
        size = int(how.split("-")[1])
        rows = execution.prepare_rows(
            da.from_array(X, chunks=(size, -1)), da.from_array(y, chunks=size), k
        )
    else:
        rows = execution.prepare_rows(X, y, k)
    if how == "threads":
        monkeypatch.setattr(grid, "use_threads", lambda work, cost: True)
        monkeypatch.setattr(grid, "n_threads", lambda: 2)
    if how == "no-store":
        monkeypatch.setattr(quadratic, "TILE_BUDGET", 0)
    U, lam = _factor(W)
    assert (U.shape[1] == 0) == (case in ("diagonal", "far-apart"))
    weight = np.ones(len(y)) if d is None else d
    Sigma, entropy = quadratic.quad_statistic(rows, U, lam, sigma, weight, terms.softmin_coef)
    scale = np.abs(want["Sigma"]).max()
    np.testing.assert_allclose(Sigma, want["Sigma"], rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(entropy, want["entropy"], rtol=1e-10)


def test_quad_pair_modes_visit_every_ordered_pair_once():
    """CROSS and WITHIN partials merge to the ordered (anchor x candidate) ones."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(75, 4))
    y = rng.integers(0, 2, size=75)
    U, lam = np.linalg.qr(rng.normal(size=(4, 4)))[0], rng.random(4)
    idx = np.arange(75)
    ordered = quad.qlse_pairs(X, idx, y, X, idx, y, U, lam, 0.8, 2, quad.ORDERED, np.empty(0))[:3]
    a, b = slice(0, 40), slice(40, 75)
    within_a = quad.qlse_pairs(
        X[a], idx[a], y[a], X[a], idx[a], y[a], U, lam, 0.8, 2, quad.WITHIN, np.empty(0)
    )
    within_b = quad.qlse_pairs(
        X[b], idx[b], y[b], X[b], idx[b], y[b], U, lam, 0.8, 2, quad.WITHIN, np.empty(0)
    )
    cross = quad.qlse_pairs(
        X[a], idx[a], y[a], X[b], idx[b], y[b], U, lam, 0.8, 2, quad.CROSS, np.empty(0)
    )
    top = merge.lse_combine([within_a[:3], cross[:3]])
    bottom = merge.lse_combine([within_b[:3], cross[3:]])
    for got, want in zip((np.concatenate(p) for p in zip(top, bottom)), ordered):
        np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("store", [False, True])
def test_sigma_pairs_with_coefficients_of_both_signs(store):
    """Blocks mixing positive and negative pair weights (not IMMIGRATE's, any caller's)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(50, 4))
    y = rng.integers(0, 2, size=50)
    U, lam = np.linalg.qr(rng.normal(size=(4, 3)))[0], rng.random(3)
    W = (U * lam) @ U.T
    log_z = rng.normal(size=(50, 2))
    coef = rng.normal(size=(50, 2))
    idx = np.arange(50)
    buf = np.empty(quad.n_pairs(50, 50, quad.WITHIN) if store else 0)
    quad.qlse_pairs(X, idx, y, X, idx, y, U, lam, 0.9, 2, quad.WITHIN, buf)
    got = quad.sigma_pairs(
        X, idx, y, X, idx, y, U, lam, 0.9, log_z, coef, log_z, coef, quad.WITHIN, buf
    )
    want = np.zeros((4, 4))
    for a in range(50):
        for j in range(50):
            if a != j:
                z = np.abs(X[a] - X[j])
                w = coef[a, y[j]] * np.exp(-(z @ W @ z) / 0.9 - log_z[a, y[j]])
                want += w * np.outer(z, z)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_quad_statistic_with_w_itself_equals_its_factor(monkeypatch):
    """Wide data skip W's eigendecomposition: ``(W, [])`` gives the factor's E-step."""
    from dmargin.immigrate import _solver as _immigrate_solver

    X, y, W, sigma, d = _quad_case("dense")
    rows = execution.prepare_rows(X, y, 3)
    U, lam = _immigrate_solver._factor(W)
    want = quadratic.quad_statistic(rows, U, lam, sigma, np.ones(len(y)), terms.softmin_coef)
    monkeypatch.setattr(_immigrate_solver, "_DENSE_W_FEATURES", 2)
    U, lam = _immigrate_solver._factor(W)
    assert U.shape == W.shape and lam.size == 0
    got = quadratic.quad_statistic(rows, U, lam, sigma, np.ones(len(y)), terms.softmin_coef)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12 * np.abs(want[0]).max())
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_block_reduce_and_exact_bin_edges_on_dask_rows():
    # Column summaries over dask row blocks (no labels): the distinct values of
    # low-cardinality features are counted over all rows once the subsample
    # (200,000 rows) cannot see them all.
    import dask.array as da

    from dmargin.engine import block_reduce
    from dmargin.engine.binning import find_bin_edges

    X = np.arange(40.0).reshape(20, 2)
    total = block_reduce(da.from_array(X, chunks=5), lambda b: b.sum(axis=0), sum, "sum")
    np.testing.assert_array_equal(total, X.sum(axis=0))
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 5, size=(250_000, 2)).astype(float)
    codes[-1, 0] = 9.0  # one value the subsample will most likely miss
    edges, exact = find_bin_edges(
        da.from_array(codes, chunks=50_000), 256, np.random.default_rng(1)
    )
    local, _ = find_bin_edges(codes, 256, np.random.default_rng(1))
    assert exact.all()
    for e, f in zip(edges, local):
        np.testing.assert_array_equal(e, f)
    assert edges[0].size == 5  # six values, five thresholds between them


def test_one_thread_takes_the_serial_twin():
    """With one numba thread the threaded twin would run the serial loop after compiling
    itself: ``pick`` gives the serial twin whatever the work."""
    import numba

    from dmargin.engine._numba import PARALLEL_MIN_WORK, pick

    twins = ("serial", "threaded")
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        assert pick(twins, 100 * PARALLEL_MIN_WORK) == "serial"
    finally:
        numba.set_num_threads(before)
    if before > 1:
        assert pick(twins, 100 * PARALLEL_MIN_WORK) == "threaded"
    assert pick(twins, 100 * PARALLEL_MIN_WORK, threads=False) == "serial"


def test_in_process_tasks_run_with_the_callers_numba_threads():
    """numba's thread count is per thread: the runner reads the caller's once and
    each task of its pool threads runs with it (not with numba's default)."""
    import numba

    from dmargin.engine.local import run_local

    before = numba.get_num_threads()
    if before == 1:
        pytest.skip("one numba thread: a task would count 1 whatever the runner passed")
    dsk = {("count", i): (numba.get_num_threads,) for i in range(4)}
    try:
        numba.set_num_threads(1)
        got = run_local(dsk, set(), 2)
    finally:
        numba.set_num_threads(before)
    assert [got["count", i] for i in range(4)] == [1] * 4
    assert run_local(dsk, set(), 2)["count", 0] == before


def test_blas_limit_holds_under_a_users_limit_on_another_thread():
    """The kernels' one-thread BLAS limit is taken on the in-process runner's thread,
    while the user may hold a limit on the main thread: threadpoolctl (>= 3.8) lets
    one Python thread control a pthreads OpenBLAS and ignores the others' limits, so
    the kernels' GEMMs ran threaded on top of their own threads (the LDM-RFE score
    step 6x slower on two threads).  The user's limit is back afterwards.  In a
    fresh process, as a user's: control of OpenBLAS is process state that earlier
    tests' threads change."""
    import subprocess
    import sys

    pytest.importorskip("threadpoolctl")
    script = """
import threading
import numpy, scipy.linalg, threadpoolctl
from dmargin.engine._numba import blas_single_thread

def blas_threads():
    info = threadpoolctl.threadpool_info()
    return {i["num_threads"] for i in info if i["user_api"] == "blas"}

seen = {}
if blas_threads():
    def kernel():
        with blas_single_thread():
            seen["inside"] = blas_threads()
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        runner = threading.Thread(target=kernel)
        runner.start()
        runner.join()
        seen["after"] = blas_threads()
print(seen)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen = out.stdout.strip().splitlines()[-1]
    if seen == "{}":
        pytest.skip("no BLAS library that threadpoolctl can limit")
    assert seen == "{'inside': {1}, 'after': {2}}"
