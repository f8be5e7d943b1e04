"""The SURF family's two passes on a CUDA GPU, in float64: the CPU passes' partials.

The GPU twins of :func:`dmargin.engine.kernels.surf.moments_pairs`,
:func:`~dmargin.engine.kernels.surf.score_pairs` (the symmetric grid's pairs of
blocks) and of the ordered tiles ``surf._moments_tile`` and ``surf._score_tile``
(a sample of anchors), for continuous rows without missing values (``PLAIN``)
whose neighbours weigh 1, with class labels.  Imported only for
``device="cuda"`` (:mod:`dmargin.engine.device`).

One thread an anchor, every candidate in turn (the block's threads read the same
candidate: one load serves them all).  A distance is the CPU's bit for bit: the
features summed two at a time in order (:func:`~.distance.plain_distance`;
additions only, nothing to fuse), so each side of a threshold is decided as on
the CPU, in float64, and ``d(a, j) == d(j, a)``.  Pass 1 sums each anchor's
distances and their squares; pass 2 adds each neighbour's differences (and
their squares, for STIR) to the anchor's own row of the partial.  The sums run
in another order than the CPU's: the partials agree to rounding.  A pair of
blocks is measured from both sides (twice the CPU's pairs, each side's rows
their own threads).
"""

import threading

import numpy as np

from .._numba import restore_numpy_aliases
from .cuda_knn import plain_distance
from .distance import PLAIN
from .modes import CROSS, ORDERED, WITHIN
from .surf import partial_width

restore_numpy_aliases()  # before numba.cuda imports
from numba import cuda  # noqa: E402

# The host code's names (numba's simulator swaps the module's ``cuda`` while a kernel runs).
device_array, to_device = cuda.device_array, cuda.to_device

#: Anchors per block (threads).
ANCHORS = 128
#: One pass on the GPU at a time per process (dask's threads; the simulator).
_ONE_AT_A_TIME = threading.Lock()


@cuda.jit
def _moments_kernel(Xa, ia, Xs, ics, M):
    """``M[a] = (count, sum d, sum d^2)`` over the rows other than anchor ``a``."""
    a = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if a >= Xa.shape[0]:
        return
    count, s1, s2 = 0.0, 0.0, 0.0
    for j in range(Xs.shape[0]):
        if ics[j] != ia[a]:
            d = plain_distance(Xa, a, Xs, j)
            count += 1.0
            s1 += d
            s2 += d * d
    M[a, 0] = count
    M[a, 1] = s1
    M[a, 2] = s2


@cuda.jit
def _score_kernel(Xa, ia, Xs, ics, starts, near, far, n_sets, squares, P):
    """``P[a, s, c]``: the differences (their squares after them with ``squares``) and
    the count of anchor ``a``'s neighbours of class ``c``: nearer than ``near[a]``
    (``s = 0``) and, with two sets, farther than ``far[a]`` (``s = 1``)."""
    a = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if a >= Xa.shape[0]:
        return
    n_features = Xa.shape[1]
    sq = n_features + 1
    for c in range(starts.shape[0] - 1):
        for j in range(starts[c], starts[c + 1]):
            if ics[j] == ia[a]:
                continue
            d = plain_distance(Xa, a, Xs, j)
            for s in range(n_sets):
                if (s == 0 and d < near[a]) or (s == 1 and d > far[a]):
                    for f in range(n_features):
                        z = abs(Xa[a, f] - Xs[j, f])
                        P[a, s, c, f] += z
                        if squares:
                            P[a, s, c, sq + f] += z * z
                    P[a, s, c, n_features] += 1.0


def _blocks(n):
    return (n + ANCHORS - 1) // ANCHORS


def _moments(Xa, ia, Xc, ic):
    Xa, Xc = np.ascontiguousarray(Xa, np.float64), np.ascontiguousarray(Xc, np.float64)
    M = np.zeros((Xa.shape[0], 3))
    if Xa.shape[0] and Xc.shape[0]:
        with _ONE_AT_A_TIME:
            d_M = to_device(M)
            _moments_kernel[_blocks(Xa.shape[0]), ANCHORS](
                to_device(Xa),
                to_device(np.asarray(ia, np.int64)),
                to_device(Xc),
                to_device(np.asarray(ic, np.int64)),
                d_M,
            )
            M = d_M.copy_to_host()
    return M


def _scores(Xa, ia, Xc, yc, ic, n_classes, n_sets, squares, near, far):
    Xa = np.ascontiguousarray(Xa, np.float64)
    yc = np.asarray(yc, np.int64)
    order = np.argsort(yc, kind="stable")
    starts = np.zeros(n_classes + 1, dtype=np.int64)
    np.cumsum(np.bincount(yc, minlength=n_classes)[:n_classes], out=starts[1:])
    width = partial_width(Xa.shape[1], PLAIN, squares)
    P = np.zeros((Xa.shape[0], n_sets, n_classes, width))
    if Xa.shape[0] and len(yc):
        with _ONE_AT_A_TIME:
            d_P = to_device(P)
            _score_kernel[_blocks(Xa.shape[0]), ANCHORS](
                to_device(Xa),
                to_device(np.asarray(ia, np.int64)),
                to_device(np.ascontiguousarray(Xc, np.float64)[order]),
                to_device(np.asarray(ic, np.int64)[order]),
                to_device(starts),
                to_device(np.asarray(near, np.float64)),
                to_device(np.asarray(far, np.float64)),
                n_sets,
                bool(squares),
                d_P,
            )
            P = d_P.copy_to_host()
    return P


def plain_scoring(how, soft):
    """Whether the GPU passes take a fit scored by ``how`` (:class:`~.surf.Scoring`):
    ``PLAIN`` rows, class labels, unit weights (``soft``: the SWRF family's are not)."""
    return how.kind == PLAIN and not how.bound > 0.0 and not soft


def moments_pairs_cuda(Xp, ip, Xq, iq, dm, dw, kind, mode):
    """:func:`~.surf.moments_pairs` on the GPU (``PLAIN`` rows): ``(Mp, Mq)``."""
    if mode == WITHIN:
        Mp = _moments(Xp, ip, Xp, ip)
        return Mp, Mp
    Mp = _moments(Xp, ip, Xq, iq)
    return Mp, _moments(Xq, iq, Xp, ip) if mode == CROSS else np.zeros((0, 3))


def score_pairs_cuda(Xp, ip, yp, Xq, iq, yq, n_classes, n_sets, how, thr_p, thr_q, mode, tp, tq):
    """:func:`~.surf.score_pairs` on the GPU (:func:`plain_scoring`): ``(Pp, Pq)``."""
    sq = how.squares
    if mode == WITHIN:
        Pp = _scores(Xp, ip, Xp, yp, ip, n_classes, n_sets, sq, thr_p.near, thr_p.far)
        return Pp, Pp
    Pp = _scores(Xp, ip, Xq, yq, iq, n_classes, n_sets, sq, thr_p.near, thr_p.far)
    if mode != CROSS:
        return Pp, np.zeros((0, *Pp.shape[1:]))
    return Pp, _scores(Xq, iq, Xp, yp, ip, n_classes, n_sets, sq, thr_q.near, thr_q.far)


def moments_tile_cuda(Xa, ia, Xc, ic, dm, dw, kind):
    """``surf._moments_tile`` (anchors against candidates) on the GPU."""
    return moments_pairs_cuda(Xa, ia, Xc, ic, dm, dw, kind, ORDERED)[0]


def score_tile_cuda(Xa, ia, Xc, yc, ic, n_classes, n_sets, how, thr, ta, tc):
    """``surf._score_tile`` (anchors against candidates) on the GPU."""
    return _scores(Xa, ia, Xc, yc, ic, n_classes, n_sets, how.squares, thr.near, thr.far)
