"""The k-nearest tiles on a CUDA GPU: float32 distances, every decision rechecked in float64.

The GPU twin of :func:`dmargin.engine.kernels.knn._knn_tile` for continuous
rows without missing values (the ``PLAIN`` kind): the same arguments, the same
``(dist, idx, z)``, the same neighbours.  Rows with discrete features or
missing values run :func:`knn_tile_general_cuda`, in float64.  Imported only when a fit asks for
``device="cuda"`` (:mod:`dmargin.engine.device`), since importing
``numba.cuda`` costs a second and needs its toolkit.

Three launches per call, every anchor a thread (one class per grid row):

1. **The k-th float32 distance** of each anchor and class.  A block of
   :data:`ANCHORS` anchors walks the class's candidates in tiles of
   :data:`TILE_ROWS` rows by :data:`TILE_FEATURES` features staged in shared
   memory (every thread reads the same element: a broadcast), each thread
   summing its anchor's distances to the tile's rows in registers; an
   anchor's k smallest (other than itself) are kept by insertion.
2. **The survivors**: the same tiles again; a candidate within ``kth + 2
   bound`` of its anchor (:func:`~.distance.float32_error_bound`: a float32
   distance is within ``bound`` of the exact one) may be among the k nearest
   or tie with the k-th, so its position is kept, at most :data:`spare`
   ``(k)`` of them an anchor and class.  Every other candidate is farther
   than the k-th nearest for certain.
3. **The float64 recheck**: each anchor's survivors are remeasured in
   float64, the features summed two at a time in order
   (:func:`~.distance.plain_distance`'s sum), and ranked by (distance, global
   index) into the k-nearest lists.

An anchor with more survivors than the buffer holds (many ties within the
bound: duplicated rows, rows so large that the bound passes every distance)
is recomputed by the CPU tile, as are all anchors when the float32 sums could
overflow: the result is exact either way.
"""

import math
import threading

import numpy as np

from .._numba import TileKernel, restore_numpy_aliases
from .distance import MISSING, float32_error_bound, scored_differences
from .knn import GENERAL_KERNEL, NearestPartial, insert_nearest, knn_tile

restore_numpy_aliases()  # before numba.cuda imports
from numba import cuda, float32, float64  # noqa: E402

# The host code's names for them: numba's simulator swaps the module's name ``cuda``
# while a kernel runs, which another thread's host code would meet.
device_array, to_device = cuda.device_array, cuda.to_device


#: Anchors per block (threads), tile rows and tile features staged in shared memory.
ANCHORS = 128
TILE_ROWS = 32
TILE_FEATURES = 32
#: The largest ``n_neighbors`` the GPU lists hold; above it the CPU tile serves.
MAX_NEIGHBORS = 64
#: One tile on the GPU at a time per process: dask's threads would otherwise
#: share its memory among several tiles (and numba's simulator runs one kernel at
#: a time).
_ONE_AT_A_TIME = threading.Lock()
#: Beyond this the float32 sums of a tile could overflow: the CPU tile serves.
_FLOAT32_SAFE = 1e36


def spare(k):
    """How many survivors the buffer keeps per anchor and class for ``k`` neighbours."""
    return 2 * k + 16


def _class_order(yc, n_classes):
    """Stable order of the candidates by class and where each class starts (as
    :func:`~.lse.class_order`)."""
    order = np.argsort(yc, kind="stable")
    starts = np.zeros(n_classes + 1, dtype=np.int64)
    np.cumsum(np.bincount(yc, minlength=n_classes)[:n_classes], out=starts[1:])
    return order, starts


@cuda.jit(device=True)
def _tile_sums(XaT, Xs, a, n_a, j0, nt, tile, acc):
    """``acc[t] = sum_f |XaT[f, a] - Xs[j0 + t, f]|`` (float32) for the tile of ``nt``
    rows from ``j0``, its features staged in shared ``tile`` by the whole block."""
    tid = cuda.threadIdx.x
    n_features = XaT.shape[0]
    for t in range(TILE_ROWS):
        acc[t] = float32(0.0)
    for f0 in range(0, n_features, TILE_FEATURES):
        nf = min(TILE_FEATURES, n_features - f0)
        for e in range(tid, TILE_ROWS * TILE_FEATURES, ANCHORS):
            t = e // TILE_FEATURES
            f = e - t * TILE_FEATURES
            if t < nt and f < nf:
                tile[t, f] = Xs[j0 + t, f0 + f]
            else:
                tile[t, f] = float32(0.0)
        cuda.syncthreads()
        if a < n_a:
            for f in range(nf):
                x = XaT[f0 + f, a]
                for t in range(TILE_ROWS):
                    acc[t] += abs(x - tile[t, f])
        cuda.syncthreads()


@cuda.jit
def _kth_kernel(XaT, Xs, starts, ia, ics, k, kth):
    """``kth[a, c]``: the ``k``-th smallest float32 distance of anchor ``a`` to the
    rows of class ``c`` other than itself (``inf`` when fewer)."""
    tile = cuda.shared.array((TILE_ROWS, TILE_FEATURES), float32)
    acc = cuda.local.array(TILE_ROWS, float32)
    best = cuda.local.array(MAX_NEIGHBORS, float32)
    n_a = XaT.shape[1]
    a = cuda.blockIdx.x * ANCHORS + cuda.threadIdx.x
    c = cuda.blockIdx.y
    me = ia[a] if a < n_a else -1
    for r in range(k):
        best[r] = math.inf
    for j0 in range(starts[c], starts[c + 1], TILE_ROWS):
        nt = min(TILE_ROWS, starts[c + 1] - j0)
        _tile_sums(XaT, Xs, a, n_a, j0, nt, tile, acc)
        if a < n_a:
            for t in range(nt):
                d = acc[t]
                if d < best[k - 1] and ics[j0 + t] != me:
                    r = k - 1
                    while r > 0 and best[r - 1] > d:
                        best[r] = best[r - 1]
                        r -= 1
                    best[r] = d
    if a < n_a:
        kth[a, c] = best[k - 1]


@cuda.jit
def _survivor_kernel(XaT, Xs, starts, ia, ics, limit, survivors, count):
    """The candidates of class ``c`` within ``limit[a, c]`` (float32 distance, compared
    in float64) of anchor ``a``: their positions in ``survivors[a, c]`` (as many as
    fit) and how many there are in ``count[a, c]``."""
    tile = cuda.shared.array((TILE_ROWS, TILE_FEATURES), float32)
    acc = cuda.local.array(TILE_ROWS, float32)
    n_a = XaT.shape[1]
    room = survivors.shape[2]
    a = cuda.blockIdx.x * ANCHORS + cuda.threadIdx.x
    c = cuda.blockIdx.y
    me = ia[a] if a < n_a else -1
    lim = limit[a, c] if a < n_a else -math.inf
    n = 0
    for j0 in range(starts[c], starts[c + 1], TILE_ROWS):
        nt = min(TILE_ROWS, starts[c + 1] - j0)
        _tile_sums(XaT, Xs, a, n_a, j0, nt, tile, acc)
        if a < n_a:
            for t in range(nt):
                if float64(acc[t]) <= lim and ics[j0 + t] != me:
                    if n < room:
                        survivors[a, c, n] = j0 + t
                    n += 1
    if a < n_a:
        count[a, c] = n


@cuda.jit(device=True)
def plain_distance(Xa, a, Xs, j):
    """The plain float64 distance of anchor ``a`` and row ``j``: the CPU's sum
    (:func:`~.distance.plain_distance`, the features two at a time, in order;
    additions only, nothing to fuse), so ``d(a, j) == d(j, a)`` bit for bit."""
    n_features = Xa.shape[1]
    acc = 0.0
    f = 0
    while f + 2 <= n_features:
        acc += abs(Xa[a, f] - Xs[j, f]) + abs(Xa[a, f + 1] - Xs[j, f + 1])
        f += 2
    if f < n_features:
        acc += abs(Xa[a, f] - Xs[j, f])
    return acc


#: :func:`~.knn.insert_nearest` compiled for the device, the same body: row ``g`` (position
#: ``j``) at distance ``d`` into the sorted lists, ordered by (distance, index).
_insert = cuda.jit(device=True)(insert_nearest.py_func)


@cuda.jit
def _recheck_kernel(Xa, Xs, ics, survivors, count, dist, idx, loc):
    """Each anchor and class: its survivors' float64 distances (the features two at
    a time, in order), the ``k`` nearest by (distance, index) into ``dist, idx``
    and their positions into ``loc``.  An anchor and class whose survivors did
    not fit are left to the caller."""
    a = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    c = cuda.blockIdx.y
    room = survivors.shape[2]
    if a >= Xa.shape[0] or count[a, c] > room:
        return
    for s in range(count[a, c]):
        j = survivors[a, c, s]
        _insert(dist[a, c], idx[a, c], loc[a, c], plain_distance(Xa, a, Xs, j), ics[j], j)


@cuda.jit(device=True)
def _pair_distance(Xa, a, Xs, j, dm, dw, missing):
    """:func:`~.distance.pair_distance` (unit feature weights) of anchor ``a`` and
    row ``j``: the same sum in the same order (a product ``dw z`` may be fused
    into it here and not there, or the reverse: a last-bit difference, none
    where the products are exact, as for unit and mismatch weights)."""
    acc = 0.0
    count = 0.0
    for f in range(Xa.shape[1]):
        z = abs(Xa[a, f] - Xs[j, f])
        if missing and z != z:
            continue
        if dm[f]:
            z = 1.0 if z != 0.0 else 0.0
        acc += dw[f] * z
        count += dw[f]
    if missing:
        return acc / count if count > 0.0 else math.nan
    return acc


@cuda.jit
def _general_kernel(Xa, ia, Xs, starts, ics, dm, dw, missing, dist, idx, loc):
    """Discrete features or missing values: each anchor's k nearest of class ``c`` by
    (float64 distance, index), a NaN distance (no feature in common) never one."""
    a = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    c = cuda.blockIdx.y
    if a >= Xa.shape[0]:
        return
    for j in range(starts[c], starts[c + 1]):
        g = ics[j]
        if g == ia[a]:
            continue
        _insert(
            dist[a, c], idx[a, c], loc[a, c], _pair_distance(Xa, a, Xs, j, dm, dw, missing), g, j
        )


def _lists(Xa, ia, Xs, ics, starts, k, bound):
    """The three launches: ``(dist, idx, loc, count)`` of every anchor and class."""
    n_a, n_classes = Xa.shape[0], starts.shape[0] - 1
    blocks = ((n_a + ANCHORS - 1) // ANCHORS, n_classes)
    d_XaT = to_device(np.ascontiguousarray(Xa.T, dtype=np.float32))
    d_Xs32 = to_device(Xs.astype(np.float32))
    d_starts, d_ia, d_ics = to_device(starts), to_device(ia), to_device(ics)
    d_kth = device_array((n_a, n_classes), dtype=np.float32)
    _kth_kernel[blocks, ANCHORS](d_XaT, d_Xs32, d_starts, d_ia, d_ics, k, d_kth)
    limit = d_kth.copy_to_host().astype(np.float64) + 2.0 * bound
    d_survivors = device_array((n_a, n_classes, spare(k)), dtype=np.int64)
    d_count = device_array((n_a, n_classes), dtype=np.int64)
    _survivor_kernel[blocks, ANCHORS](
        d_XaT, d_Xs32, d_starts, d_ia, d_ics, to_device(limit), d_survivors, d_count
    )
    del d_XaT, d_Xs32
    d_dist = to_device(np.full((n_a, n_classes, k), np.inf))
    d_idx = to_device(np.full((n_a, n_classes, k), -1, dtype=np.int64))
    d_loc = to_device(np.zeros((n_a, n_classes, k), dtype=np.int64))
    _recheck_kernel[blocks, ANCHORS](
        to_device(Xa), to_device(Xs), d_ics, d_survivors, d_count, d_dist, d_idx, d_loc
    )
    return d_dist.copy_to_host(), d_idx.copy_to_host(), d_loc.copy_to_host(), d_count.copy_to_host()


def knn_tile_cuda(Xa, ia, Xc, yc, ic, n_classes, n_neighbors):
    """:func:`~.knn.knn_tile` on the GPU: ``(dist, idx, z)``, the same lists."""
    Xa = np.ascontiguousarray(Xa, dtype=np.float64)
    Xc = np.ascontiguousarray(Xc, dtype=np.float64)
    ia = np.asarray(ia, dtype=np.int64)
    yc = np.asarray(yc, dtype=np.int64)
    n_a, n_features = Xa.shape
    k = int(n_neighbors)
    scale = max(float(np.max(np.abs(Xa), initial=0.0)), float(np.max(np.abs(Xc), initial=0.0)))
    if n_a == 0 or k > MAX_NEIGHBORS or scale * 2 * n_features > _FLOAT32_SAFE:
        return knn_tile(Xa, ia, Xc, yc, ic, n_classes, n_neighbors)
    bound = float32_error_bound(scale, n_features)
    order, starts = _class_order(yc, n_classes)
    Xs = Xc[order]
    ics = np.asarray(ic, dtype=np.int64)[order]
    with _ONE_AT_A_TIME:
        dist, idx, loc, count = _lists(Xa, ia, Xs, ics, starts, k, bound)
    overflow = np.flatnonzero((count > spare(k)).any(axis=1))
    z = np.abs(Xa[:, None, None, :] - Xs[np.maximum(loc, 0)])
    z[idx < 0] = 0.0
    if overflow.size:  # ties beyond the buffer: these anchors exactly, on the CPU
        d, i, zz = knn_tile(Xa[overflow], ia[overflow], Xc, yc, ic, n_classes, n_neighbors)
        dist[overflow], idx[overflow], z[overflow] = d, i, zz
    return dist, idx, z


def knn_tile_general_cuda(
    Xa, ia, Xc, yc, ic, n_classes, n_neighbors, dm, dw, ramp, kind, centres, target, bound
):
    """:func:`~.knn._knn_tile_general` on the GPU for discrete features or missing
    values (``MASKED``, ``MISSING``), ranked by distance among class labels: the
    same lists, in float64 (no float32 prefilter: its bound assumes the plain sum).
    ``z`` holds the scored differences, NaN where a value is missing."""
    args = (Xa, ia, Xc, yc, ic, n_classes, n_neighbors, dm, dw, ramp, kind, centres, target, bound)
    k = int(n_neighbors)
    if centres.shape[0] or target.shape[0] or k > MAX_NEIGHBORS or len(Xa) == 0:
        return GENERAL_KERNEL.serial(*args)
    Xa = np.ascontiguousarray(Xa, dtype=np.float64)
    ia = np.asarray(ia, dtype=np.int64)
    order, starts = _class_order(np.asarray(yc, dtype=np.int64), n_classes)
    Xs = np.ascontiguousarray(Xc, dtype=np.float64)[order]
    ics = np.asarray(ic, dtype=np.int64)[order]
    n_a = Xa.shape[0]
    with _ONE_AT_A_TIME:
        d_dist = to_device(np.full((n_a, n_classes, k), np.inf))
        d_idx = to_device(np.full((n_a, n_classes, k), -1, dtype=np.int64))
        d_loc = to_device(np.zeros((n_a, n_classes, k), dtype=np.int64))
        _general_kernel[((n_a + ANCHORS - 1) // ANCHORS, n_classes), ANCHORS](
            to_device(Xa),
            to_device(ia),
            to_device(Xs),
            to_device(starts),
            to_device(ics),
            to_device(np.asarray(dm, dtype=np.bool_)),
            to_device(np.asarray(dw, dtype=np.float64)),
            kind == MISSING,
            d_dist,
            d_idx,
            d_loc,
        )
        dist, idx, loc = d_dist.copy_to_host(), d_idx.copy_to_host(), d_loc.copy_to_host()
    with np.errstate(invalid="ignore"):
        z = scored_differences(Xa[:, None, None, :], Xs[loc], dm, ramp)
    z[idx < 0] = 0.0
    return dist, idx, z


#: The GPU k-nearest tiles as the grid runs them (host functions: the GPU threads
#: inside), the twins of :data:`~.knn.KERNEL` and :data:`~.knn.GENERAL_KERNEL`.
KERNEL = TileKernel(knn_tile_cuda, knn_tile_cuda, speed=1000.0, partial=NearestPartial)
GENERAL = TileKernel(
    knn_tile_general_cuda, knn_tile_general_cuda, speed=100.0, partial=NearestPartial
)
