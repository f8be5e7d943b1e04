"""The GPU kernels in numba's CUDA simulator, against the CPU and all pairs.

Run by ``tests/test_cuda.py``, one check a fresh process: the simulator is
chosen when ``numba.cuda`` is first imported (``NUMBA_ENABLE_CUDASIM=1``),
so it cannot be switched on inside the test session.  ``python
tests/_cuda_sim.py NAME`` runs one check (it raises on a failure).

The simulator runs every GPU thread as a Python thread: the inputs are small,
but shaped to cross every bound of the kernels' tiles (more anchors than a
block's threads, more features than a shared tile's columns, classes longer
than a tile's rows and not a multiple of it).
"""

import os
import sys

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import reference  # noqa: E402

from dmargin import ReliefF  # noqa: E402
from dmargin.engine.kernels import cuda_knn, knn  # noqa: E402


def _same_lists(Xa, ia, Xc, yc, ic, n_classes, k):
    """The GPU tile's lists are the CPU tile's and all pairs' (indices exactly,
    distances to rounding: the sums run in another order), ``z`` the same."""
    dist, idx, z = cuda_knn.knn_tile_cuda(Xa, ia, Xc, yc, ic, n_classes, k)
    cpu_dist, cpu_idx, cpu_z = knn.knn_tile(Xa, ia, Xc, yc, ic, n_classes, k)
    bf_dist, bf_idx = reference.knn_lists(Xa, ia, Xc, yc, ic, n_classes, k)
    assert np.array_equal(idx, bf_idx), np.argwhere(idx != bf_idx)[:5]
    assert np.array_equal(idx, cpu_idx)
    finite = np.isfinite(bf_dist)
    assert np.array_equal(finite, np.isfinite(dist))
    assert np.allclose(dist[finite], bf_dist[finite], rtol=1e-13, atol=1e-13)
    assert np.array_equal(z, cpu_z)


def tile_shapes():
    """Anchors over two blocks, features over two shared tiles, classes over
    several tile rows (none a multiple of 32), global indices from an offset."""
    rng = np.random.default_rng(3)
    n, a = 170, 37
    X = rng.random((n, a))
    y = rng.integers(0, 2, n)
    ic = np.arange(1000, 1000 + n)
    _same_lists(X, ic, X, y, ic, 2, 4)


def kth_bound():
    """The first launch's k-th float32 distance of each anchor and class lies within
    the float32 error bound of the exact k-th (brute force, the anchor itself left
    out): a larger one would keep more survivors than needed, a smaller one lose a
    neighbour.  Shapes across every bound of the tiles, as ``tile_shapes``."""
    from numba import cuda

    from dmargin.engine.kernels.distance import float32_error_bound

    rng = np.random.default_rng(4)
    n, a, k = 170, 37, 4
    X = rng.random((n, a))
    y = rng.integers(0, 2, n)
    order = np.argsort(y, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(y, minlength=2))]
    ids = np.arange(n)
    kth = cuda.device_array((n, 2), dtype=np.float32)
    blocks = ((n + cuda_knn.ANCHORS - 1) // cuda_knn.ANCHORS, 2)
    cuda_knn._kth_kernel[blocks, cuda_knn.ANCHORS](
        np.ascontiguousarray(X.T, dtype=np.float32),
        X[order].astype(np.float32),
        starts,
        ids,
        ids[order],
        k,
        kth,
    )
    exact, _ = reference.knn_lists(X, ids, X, y, ids, 2, k)
    assert np.all(np.abs(kth.copy_to_host() - exact[:, :, k - 1]) <= float32_error_bound(1.0, a))


def ties():
    """Values on a grid of eighths (exact distances, real ties to the lower index),
    duplicate rows, three classes."""
    rng = np.random.default_rng(5)
    n, a = 90, 6
    X = rng.integers(0, 4, (n, a)) / 8.0
    X[10:20] = X[0]
    y = rng.integers(0, 3, n)
    ids = np.arange(n)
    _same_lists(X, ids, X, y, ids, 3, 5)


def overflow():
    """More survivors than the buffer holds: a class of identical rows (every
    distance ties), and rows at 1e6 (the float32 bound passes every distance):
    those anchors are served exactly by the CPU tile."""
    rng = np.random.default_rng(7)
    X = np.vstack([np.tile(rng.random(4), (45, 1)), rng.random((20, 4))])
    y = np.r_[np.zeros(45, int), np.ones(20, int)]
    ids = np.arange(len(X))
    _same_lists(X, ids, X, y, ids, 2, 2)
    big = 1e6 + rng.integers(0, 4, (60, 3)) / 8.0
    y = rng.integers(0, 2, 60)
    ids = np.arange(60)
    _same_lists(big, ids, big, y, ids, 2, 3)


def small_classes():
    """A class of one row (its anchor has no hit), a class with fewer rows than k,
    a class absent from the candidates, and anchors that are not candidates."""
    rng = np.random.default_rng(9)
    Xc = rng.random((40, 5))
    yc = np.r_[np.zeros(1, int), np.ones(3, int), np.full(36, 2)]
    ic = np.arange(40)
    _same_lists(Xc, ic, Xc, yc, ic, 4, 6)
    Xa = rng.random((12, 5))
    _same_lists(Xa, np.arange(100, 112), Xc, yc, ic, 4, 6)


def _data():
    rng = np.random.default_rng(11)
    X = rng.random((100, 8))
    return X, (X[:, 0] + 0.3 * rng.random(100) > 0.6).astype(int)


def relieff_weights():
    """``ReliefF(device="cuda")`` equals the CPU fit and the brute-force reference
    to 1e-10: every row an anchor, sampled anchors, STIR's sums (two classes)."""
    X, y = _data()
    gpu = ReliefF(n_neighbors=5, device="cuda").fit(X, y).feature_importances_
    cpu = ReliefF(n_neighbors=5).fit(X, y).feature_importances_
    assert np.allclose(gpu, cpu, rtol=0, atol=1e-10)
    raw = ReliefF(n_neighbors=5, scale=None, device="cuda").fit(X, y).feature_importances_
    assert np.allclose(raw, reference.relieff(X, y, n_neighbors=5), rtol=0, atol=1e-10)
    sampled = dict(n_neighbors=5, n_anchors=40, random_state=0)
    gpu = ReliefF(**sampled, device="cuda").fit(X, y).feature_importances_
    assert np.allclose(gpu, ReliefF(**sampled).fit(X, y).feature_importances_, atol=1e-10)
    stir = ReliefF(n_neighbors=5, pvalues=True, device="cuda").fit(X, y)
    cpu_stir = ReliefF(n_neighbors=5, pvalues=True).fit(X, y)
    assert np.allclose(stir.feature_importances_, cpu_stir.feature_importances_, atol=1e-10)
    for name in ("pvalues_", "global_pvalue_"):
        mine, theirs = getattr(stir, name, None), getattr(cpu_stir, name, None)
        assert (mine is None) == (theirs is None), name
        if mine is not None:
            assert np.allclose(mine, theirs, atol=1e-10, equal_nan=True), name


def relieff_dask():
    """On dask row blocks (threads), the GPU tiles' lists merge across candidate
    blocks to the CPU fit's weights."""
    import dask.array as da

    X, y = _data()
    cpu = ReliefF(n_neighbors=5).fit(X, y).feature_importances_
    Xd, yd = da.from_array(X, chunks=(50, 8)), da.from_array(y, chunks=50)
    gpu = ReliefF(n_neighbors=5, device="cuda").fit(Xd, yd).feature_importances_
    assert np.allclose(gpu, cpu, rtol=0, atol=1e-10)


def general_tile():
    """Discrete features and missing values (the float64 tile): the GPU's lists and
    scored differences are the CPU general tile's, on eighths (exact sums, real
    ties), with a row missing every feature another row has (distance NaN: never
    a neighbour) and a mismatch weight that is not a power of two."""
    from dmargin.engine.kernels import distance

    rng = np.random.default_rng(15)
    n, a = 80, 6
    X = rng.integers(0, 4, (n, a)) / 8.0
    X[rng.random((n, a)) < 0.15] = np.nan
    X[3, :3], X[4, 3:] = np.nan, np.nan
    y = rng.integers(0, 3, n)
    ids = np.arange(n)
    dm = np.array([True, False, True, False, False, True])
    ramp = np.full(a, np.inf)
    for kind, dw in ((distance.MISSING, np.ones(a)), (distance.MASKED, np.where(dm, 2.0, 1.0))):
        rows = X if kind == distance.MISSING else np.nan_to_num(X, nan=0.25)
        args = (
            rows,
            ids,
            rows,
            y,
            ids,
            3,
            4,
            dm,
            dw,
            ramp,
            kind,
            np.empty((0, 0, 2)),
            np.empty(0),
            0.0,
        )
        dist, idx, z = cuda_knn.knn_tile_general_cuda(*args)
        cpu_dist, cpu_idx, cpu_z = knn.GENERAL_KERNEL.serial(*args)
        assert np.array_equal(idx, cpu_idx), np.argwhere(idx != cpu_idx)[:5]
        assert np.array_equal(dist, cpu_dist, equal_nan=True)
        assert np.array_equal(z, cpu_z, equal_nan=True)


def relieff_general():
    """``ReliefF(device="cuda")`` with missing values and with discrete features
    (skrebate's mixed data) equals the CPU fit to 1e-10."""
    rng = np.random.default_rng(17)
    X = rng.random((90, 7))
    y = (X[:, 0] > 0.5).astype(int)
    X[:, 5:] = rng.integers(0, 3, (90, 2))
    missing = np.where(rng.random(X.shape) < 0.1, np.nan, X)
    for data, params in ((missing, {}), (X, {"discrete_threshold": 3})):
        gpu = ReliefF(n_neighbors=4, device="cuda", **params).fit(data, y).feature_importances_
        cpu = ReliefF(n_neighbors=4, **params).fit(data, y).feature_importances_
        assert np.allclose(gpu, cpu, rtol=0, atol=1e-10), np.abs(gpu - cpu).max()


def surf_passes():
    """The SURF family's passes on the GPU equal the CPU's for every pair mode: the
    moments exactly on eighths (every sum exact), the neighbour sums and counts
    with thresholds placed on distances (ties at a threshold: strict sides),
    near and far sets, STIR's squares."""
    from dmargin.engine.kernels import cuda_surf, distance, surf
    from dmargin.engine.kernels.modes import CROSS, ORDERED, WITHIN

    rng = np.random.default_rng(19)
    a = 5
    Xp, Xq = rng.integers(0, 4, (40, a)) / 8.0, rng.integers(0, 4, (30, a)) / 8.0
    yp, yq = rng.integers(0, 2, 40), rng.integers(0, 2, 30)
    ip, iq = np.arange(40), np.arange(100, 130)
    dm, dw = np.zeros(a, bool), np.ones(a)
    ramp = np.full(a, np.inf)
    for mode in (ORDERED, WITHIN, CROSS):
        q, yy, ii = (Xp, yp, ip) if mode == WITHIN else (Xq, yq, iq)
        gpu = cuda_surf.moments_pairs_cuda(Xp, ip, q, ii, dm, dw, distance.PLAIN, mode)
        cpu = surf.moments_pairs(Xp, ip, q, ii, dm, dw, distance.PLAIN, mode)
        for g, c in zip(gpu, cpu):
            assert g.shape == c.shape and np.array_equal(g, c), (mode, np.abs(g - c).max())
        # thresholds on distances of the grid: many pairs lie exactly on one
        thr_p = surf.Thresholds(
            rng.integers(2, 8, 40) / 8.0, rng.integers(3, 9, 40) / 8.0, np.empty(0)
        )
        n_q = len(q)
        thr_q = surf.Thresholds(
            rng.integers(2, 8, n_q) / 8.0, rng.integers(3, 9, n_q) / 8.0, np.empty(0)
        )
        if mode == WITHIN:
            thr_q = thr_p
        for n_sets, squares in ((1, False), (2, True)):
            how = surf.Scoring(dm, dw, ramp, distance.PLAIN, 0.0, squares)
            args = (Xp, ip, yp, q, ii, yy, 2, n_sets, how, thr_p, thr_q, mode, yp, yy)
            gpu = cuda_surf.score_pairs_cuda(*args)
            cpu = surf.score_pairs(*args)
            for g, c in zip(gpu, cpu):
                assert g.shape == c.shape, (mode, g.shape, c.shape)
                assert np.array_equal(g, c), (mode, n_sets, squares, np.abs(g - c).max())


def surf_weights():
    """``device="cuda"`` fits of SURF, SURF*, MultiSURF and MultiSURF* equal the CPU
    fits to 1e-10: every row an anchor in process (the symmetric grid), on dask
    blocks (MultiSURF*, near and far sets: pairs of different blocks), sampled
    anchors (the ordered tiles), and MultiSURF's permutation p-values."""
    import dask.array as da

    import dmargin

    X, y = _data()
    Xd, yd = da.from_array(X, chunks=(50, 8)), da.from_array(y, chunks=50)
    for name in ("SURF", "SURFstar", "MultiSURF", "MultiSURFstar"):
        cls = getattr(dmargin, name)
        cpu = cls().fit(X, y).feature_importances_
        for data in ((X, y), (Xd, yd)) if name == "MultiSURFstar" else ((X, y),):
            gpu = cls(device="cuda").fit(*data).feature_importances_
            assert np.allclose(gpu, cpu, rtol=0, atol=1e-10), (name, np.abs(gpu - cpu).max())
    sampled = dict(n_anchors=30, random_state=1)
    gpu = dmargin.MultiSURF(device="cuda", **sampled).fit(X, y).feature_importances_
    cpu = dmargin.MultiSURF(**sampled).fit(X, y).feature_importances_
    assert np.allclose(gpu, cpu, rtol=0, atol=1e-10)
    perm = dict(n_permutations=2, random_state=2)
    gpu = dmargin.MultiSURF(device="cuda", **perm).fit(X, y)
    cpu = dmargin.MultiSURF(**perm).fit(X, y)
    assert np.allclose(gpu.feature_importances_, cpu.feature_importances_, atol=1e-10)
    assert np.array_equal(gpu.pvalues_, cpu.pvalues_)


def refused():
    """What the GPU does not run is refused with the reason, before any work: a
    continuous target (ReliefF, MultiSURF), the SWRF family's weighted neighbours,
    STIR's p-values and missing values in the SURF family."""
    import dmargin

    rng = np.random.default_rng(13)
    X = rng.random((30, 4))
    y = np.arange(30) % 2
    cases = [
        (ReliefF(device="cuda"), X, rng.random(30), "continuous target"),
        (dmargin.MultiSURF(device="cuda"), X, rng.random(30), "continuous target"),
        (dmargin.MultiSWRF(device="cuda"), X, y, "weighs each neighbour"),
        (dmargin.MultiSURF(device="cuda", pvalues=True), X, y, "STIR's p-values"),
        (dmargin.SURF(device="cuda"), np.where(X > 0.9, np.nan, X), y, "missing values"),
    ]
    for est, Xc, yc, words in cases:
        try:
            est.fit(Xc, yc)
        except ValueError as exc:
            assert words in str(exc) and "device='cpu'" in str(exc), str(exc)
        else:
            raise AssertionError(f"{type(est).__name__}: {words}: not refused")


if __name__ == "__main__":
    globals()[sys.argv[1]]()
    print("ok")
