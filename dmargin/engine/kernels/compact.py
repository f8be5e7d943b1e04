"""The SURF family's kernels on compact discrete rows (``uint8``): every feature
discrete, values below 256, nothing missing.

The distance is the mismatch count (:func:`.distance.mismatches`, on bit
planes), the scored difference of a feature 0 or 1: the same integers as
the float64 kernels' (:mod:`.surf`) MASKED kind with every feature discrete
and weight 1, so the moments, the thresholds, the neighbours and the
partials are equal exactly.  Anchors against every row (a sample or all
rows), ``GROUP`` anchors per sweep over the candidates so that each
candidate's planes are read once for the group; pass 2 returns one anchor
tile's partials at a time, which the caller turns into scores before the
next tile (memory O(tile x A), not O(N x A)).
"""

import numba
import numpy as np

from .._numba import helper, inline, twins
from .distance import mismatches
from .graph import GRAPH_WIDTH, graph_row
from .lse import filled

#: Anchors that share one read of each candidate's bit planes.
GROUP = 8
#: Features per chunk of pass 2's sums: the candidates' chunk of bytes stays
#: in cache while every anchor of a thread sums its neighbours over it.
CHUNK = 2048


@inline
def _group_distances(planes, anchors, g0, g1, D):
    """``D[i, j] = mismatches(anchors[i], j)`` for ``g0 <= i < g1``, every row ``j``."""
    for j in range(planes.shape[0]):
        for i in range(g0, g1):
            D[i, j] = mismatches(planes, anchors[i], j)


def _compact_moments(planes, anchors):
    """Pass 1 on compact rows: per anchor ``(count, sum d, sum d^2)`` over every other
    row (exact: integer distances, sums below 2**53)."""
    n_a, n = anchors.shape[0], planes.shape[0]
    M = filled((n_a, 3), 0.0)
    for g in numba.prange((n_a + GROUP - 1) // GROUP):
        g0 = g * GROUP
        g1 = min(g0 + GROUP, n_a)
        D = np.empty((GROUP, n), dtype=np.int64)
        _group_distances(planes, anchors[g0:g1], 0, g1 - g0, D)
        for i in range(g0, g1):
            s1, s2 = 0.0, 0.0
            for j in range(n):
                if j != anchors[i]:
                    d = float(D[i - g0, j])
                    s1 += d
                    s2 += d * d
            M[i, 0] = float(n - 1)
            M[i, 1] = s1
            M[i, 2] = s2
    return M


def _compact_scores(X, planes, y, anchors, n_classes, n_sets, near, far):
    """Pass 2 on compact rows for one tile of anchors: ``P[i, s, c, :A]`` the
    mismatch counts summed over anchor ``i``'s neighbours of set ``s`` and class
    ``c``, ``P[i, s, c, A]`` their number (:func:`score_pairs`' partials).

    The sums run one chunk of features at a time for every anchor of the
    tile: the rows' bytes of that chunk are read from memory once per tile.
    """
    n_a, n, n_features = anchors.shape[0], X.shape[0], X.shape[1]
    P = filled((n_a, n_sets, n_classes, n_features + 1), 0.0)
    D = np.empty((n_a, n), dtype=np.int64)
    for g in numba.prange((n_a + GROUP - 1) // GROUP):
        g0 = g * GROUP
        _group_distances(planes, anchors, g0, min(g0 + GROUP, n_a), D)
    # Neighbours of each anchor and set, grouped by class:
    # lists[i, s, starts[i, s, c]:starts[i, s, c + 1]]
    lists = np.empty((n_a, n_sets, n), dtype=np.int64)
    starts = np.zeros((n_a, n_sets, n_classes + 1), dtype=np.int64)
    for i in numba.prange(n_a):
        a = anchors[i]
        fill = np.empty(n_classes, dtype=np.int64)
        for s in range(n_sets):
            for j in range(n):
                d = float(D[i, j])
                if j != a and ((d < near[i]) if s == 0 else (d > far[i])):
                    starts[i, s, y[j] + 1] += 1
            for c in range(n_classes):
                starts[i, s, c + 1] += starts[i, s, c]
                fill[c] = starts[i, s, c]
            for j in range(n):
                d = float(D[i, j])
                if j != a and ((d < near[i]) if s == 0 else (d > far[i])):
                    lists[i, s, fill[y[j]]] = j
                    fill[y[j]] += 1
            for c in range(n_classes):
                P[i, s, c, n_features] = float(starts[i, s, c + 1] - starts[i, s, c])
    for f0 in range(0, n_features, CHUNK):
        f1 = min(f0 + CHUNK, n_features)
        for i in numba.prange(n_a):
            xa = X[anchors[i], f0:f1]
            acc = np.empty(f1 - f0, dtype=np.int64)
            acc8 = np.empty(f1 - f0, dtype=np.uint8)
            for s in range(n_sets):
                for c in range(n_classes):
                    _sum_mismatches(
                        X, xa, lists[i, s], starts[i, s, c], starts[i, s, c + 1], f0, acc, acc8
                    )
                    for f in range(f1 - f0):
                        P[i, s, c, f0 + f] = float(acc[f])
    return P


@inline
def _sum_mismatches(X, xa, rows, lo, hi, f0, acc, acc8):
    """``acc[f] = sum_{r in [lo, hi)} [xa[f] != X[rows[r], f0 + f]]``.

    Byte counters (64 per AVX-512 instruction), added to ``acc`` every 255
    rows before they could wrap.
    """
    width = xa.shape[0]
    acc[:] = 0
    r = lo
    while r < hi:
        r1 = min(r + 255, hi)
        acc8[:] = 0
        for rr in range(r, r1):
            xj = X[rows[rr], f0 : f0 + width]
            for f in range(width):
                acc8[f] -= np.uint8(0) - (xa[f] != xj[f])
        for f in range(width):
            acc[f] += acc8[f]
        r = r1


def _compact_graph(planes, anchors, y, finders, n_parts):
    """Pass 3 on compact rows: every row's graph partials ``(N, GRAPH_WIDTH)``
    (:func:`graph_pairs`), anchors against every row, a pair of two anchors
    taken from the lower one; ``finders`` is per row (``near = -inf`` off the
    anchors).  ``n_parts`` threads over groups of anchors, each adding into
    its own copy."""
    n_a, n = anchors.shape[0], planes.shape[0]
    n_groups = (n_a + GROUP - 1) // GROUP
    n_parts = max(1, min(n_groups, n_parts))
    fT = np.ascontiguousarray(finders.T)
    G = filled((n_parts, n, GRAPH_WIDTH), 0.0)
    cols = filled((n_parts, GRAPH_WIDTH, n), 0.0)
    index = np.arange(n)
    for part in numba.prange(n_parts):
        D = np.empty((GROUP, n), dtype=np.int64)
        row = np.empty(n)
        for g in range(part, n_groups, n_parts):
            g0 = g * GROUP
            g1 = min(g0 + GROUP, n_a)
            _group_distances(planes, anchors[g0:g1], 0, g1 - g0, D)
            for i in range(g0, g1):
                a = anchors[i]
                for j in range(n):
                    row[j] = float(D[i - g0, j])
                graph_row(
                    row, 0, n, 0, y[a], a, fT[:, a], y, index, fT, True, cols[part], G[part, a]
                )
    out = G.sum(axis=0)
    out += cols.sum(axis=0).T
    return out


@helper
def compact_distance_matrix(planes):
    """The mismatch counts between every two rows of ``planes``, as float64."""
    n = planes.shape[0]
    out = np.zeros((n, n))
    for a in range(n):
        for j in range(a + 1, n):
            d = float(mismatches(planes, a, j))
            out[a, j] = d
            out[j, a] = d
    return out


COMPACT_MOMENTS_TWINS = twins(_compact_moments)
COMPACT_GRAPH_TWINS = twins(_compact_graph)
COMPACT_SCORE_TWINS = twins(_compact_scores)
