"""Hard nearest-neighbour tiles (Relief, ReliefF): k nearest per anchor and class."""

from typing import NamedTuple

import numba
import numpy as np

from .._numba import TileKernel, inline
from .distance import distance, distances32, feature_diff, pair_distance
from .lse import ANCHOR_GROUP, CAND_BLOCK, by_class, filled


@inline
def _insert(dc, ix, loc, d, g, pos):
    """Insert candidate ``g`` (position ``pos``) at distance ``d`` into the sorted
    k-nearest lists ``dc, ix, loc``, ordered by (distance, index); returns
    whether it entered.  A NaN distance (no feature in common) never does."""
    k = dc.shape[0]
    if not d <= dc[k - 1] or (d == dc[k - 1] and g > ix[k - 1] >= 0):
        return False
    r = k - 1
    while r > 0 and (dc[r - 1] > d or (dc[r - 1] == d and ix[r - 1] > g)):
        dc[r] = dc[r - 1]
        ix[r] = ix[r - 1]
        loc[r] = loc[r - 1]
        r -= 1
    dc[r] = d
    ix[r] = g
    loc[r] = pos
    return True


def _knn_tile(Xa, ia, Xc, yc, ic, n_classes, n_neighbors):
    """Hard k nearest candidates per anchor and class (unweighted Manhattan).

    Returns ``dist[a, c, r]``, ``idx[a, c, r]`` (global row index) and
    ``z[a, c, r, :] = |x_a - x_idx|`` of the ``r``-th nearest candidate of
    class ``c``, ordered by (distance, index) so ties go to the lower row
    index.  Unfilled slots hold ``dist = inf, idx = -1, z = 0``.

    Exact in float64: distances are first computed in float32, and a
    candidate is dropped only when its float32 distance minus a rigorous
    bound on the float32 rounding error exceeds the current k-th float64
    distance; every other candidate is re-measured in float64.
    """
    n_anchors, n_features = Xa.shape
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    Xs32 = Xs.astype(np.float32)
    scale = 0.0
    for v in Xs.ravel():
        scale = max(scale, abs(v))
    for v in Xa.ravel():
        scale = max(scale, abs(v))
    # |fl32(d) - d| <= 2^-24 M (4A + 2A^2) for |x| <= M; doubled for margin.
    bound = 2.0 * 2.0**-24 * scale * (4 * n_features + 2 * n_features * n_features)
    k = n_neighbors
    dist = filled((n_anchors, n_classes, k), np.inf)
    idx = np.empty(n_anchors * n_classes * k, dtype=np.int64).reshape((n_anchors, n_classes, k))
    idx[:] = -1
    z = filled((n_anchors, n_classes, k, n_features), 0.0)
    # A group of anchors scans each block of candidates while it is in cache.
    for g in numba.prange((n_anchors + ANCHOR_GROUP - 1) // ANCHOR_GROUP):
        a0 = g * ANCHOR_GROUP
        n_a = min(ANCHOR_GROUP, n_anchors - a0)
        buf = np.empty(CAND_BLOCK, dtype=np.float32)
        Xa32 = np.empty(n_a * n_features, dtype=np.float32).reshape((n_a, n_features))
        for r in range(n_a):
            for f in range(n_features):
                Xa32[r, f] = Xa[a0 + r, f]
        loc = np.empty(n_a * k, dtype=np.int64).reshape((n_a, k))
        # Candidates whose float32 distance exceeds ``cut[r]`` cannot enter.
        cut = np.empty(n_a)
        for c in range(n_classes):
            for r in range(n_a):
                cut[r] = np.inf
            for c0 in range(starts[c], starts[c + 1], CAND_BLOCK):
                c1 = min(c0 + CAND_BLOCK, starts[c + 1])
                for r in range(n_a):
                    a = a0 + r
                    distances32(Xa32[r], Xs32, c0, c1, buf)
                    dc = dist[a, c]
                    ix = idx[a, c]
                    for j in range(c1 - c0):
                        if buf[j] > cut[r]:
                            continue
                        gj = ics[c0 + j]
                        if gj == ia[a]:
                            continue
                        if _insert(dc, ix, loc[r], distance(Xa[a], Xs, c0 + j), gj, c0 + j):
                            cut[r] = dc[k - 1] + bound
            for r in range(n_a):
                for q in range(k):
                    if idx[a0 + r, c, q] >= 0:
                        for f in range(n_features):
                            z[a0 + r, c, q, f] = abs(Xa[a0 + r, f] - Xs[loc[r, q], f])
    return dist, idx, z


class NearestPartial(NamedTuple):
    """What the k-nearest tiles return, per anchor, class and rank (nearest
    first), and what :func:`dmargin.engine.merge.knn_combine` merges."""

    #: Distances ``(anchors, classes, k)``, ``inf`` in a slot not filled.
    dist: np.ndarray
    #: The neighbours' global row indices, ``-1`` in a slot not filled.
    idx: np.ndarray
    #: Their difference rows ``(anchors, classes, k, A)``.
    z: np.ndarray


#: The hard k-nearest tile: partials :class:`NearestPartial`; about 4x faster per
#: pair-feature than the soft tile.
KERNEL = TileKernel.compile(_knn_tile, speed=4.0, partial=NearestPartial)
knn_tile = KERNEL.serial


@inline
def _group(c, target, bound, a_row, c_row):
    """A candidate's class for the anchor: its own (class labels), or, with a
    ``target``, 0 where ``|y_a - y_j| < bound`` (a hit) and 1 otherwise."""
    if target.shape[0] == 0:
        return c
    return 0 if abs(target[a_row] - target[c_row]) < bound else 1


def _knn_tile_general(
    Xa, ia, Xc, yc, ic, n_classes, n_neighbors, dm, dw, ramp, kind, centres, target, bound
):
    """:func:`_knn_tile` for discrete features or missing values (``MASKED``, ``MISSING``
    of :mod:`.distance`), with ``centres`` or with a ``target``; compiled only
    for data that need it.

    Distances are :func:`~.distance.pair_distance` in float64 (no float32
    prefilter: its error bound assumes the plain sum); ``z`` holds the scored
    differences (:func:`~.distance.feature_diff`: 0/1 discrete, ramped
    continuous, NaN where a value is missing).  A candidate at distance NaN
    (no feature in common with the anchor) is never a neighbour.

    ``centres`` (``(anchors, classes, 2)``, each anchor's count and distance
    sum over the rows of each class; empty for none): the candidates of class
    ``c`` are ranked by ``-|n_c d - s_c|`` instead of ``d`` (MuRelief: the
    rows whose distance lies farthest from the class's mean distance first;
    in integers, so exact, when the distances are mismatch counts).

    ``target`` (every row's, indexed by global row index; empty for class
    labels, else ``n_classes`` is 1): the candidates fall into two classes
    per anchor, hits within ``bound`` of its target and misses (skrebate's
    continuous endpoint); the result has 2 classes.
    """
    n_anchors, n_features = Xa.shape
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    n_out = n_classes if target.shape[0] == 0 else 2
    ones = np.empty(n_features)
    ones[:] = 1.0
    k = n_neighbors
    dist = filled((n_anchors, n_out, k), np.inf)
    idx = np.empty(n_anchors * n_out * k, dtype=np.int64).reshape((n_anchors, n_out, k))
    idx[:] = -1
    z = filled((n_anchors, n_out, k, n_features), 0.0)
    ranked = centres.shape[0] > 0
    for a in numba.prange(n_anchors):
        loc = np.empty(n_out * k, dtype=np.int64).reshape((n_out, k))
        xa = Xa[a]
        for c in range(n_classes):
            for j in range(starts[c], starts[c + 1]):
                g = ics[j]
                if g == ia[a]:
                    continue
                cc = _group(c, target, bound, ia[a], g)
                d = pair_distance(xa, Xs[j], ones, dm, dw, kind)
                if ranked:
                    d = -abs(centres[a, cc, 0] * d - centres[a, cc, 1])
                _insert(dist[a, cc], idx[a, cc], loc[cc], d, g, j)
        for cc in range(n_out):
            for r in range(k):
                if idx[a, cc, r] >= 0:
                    for f in range(n_features):
                        z[a, cc, r, f] = feature_diff(xa[f], Xs[loc[cc, r], f], dm[f], ramp[f])
    return dist, idx, z


#: Compiled on first use by data with discrete features or missing values.
GENERAL_KERNEL = TileKernel.compile(_knn_tile_general, cost=2.0, partial=NearestPartial)


def _class_moments_tile(Xa, ia, Xc, yc, ic, n_classes, dm, dw, kind, target, bound):
    """Per anchor and class of the candidates: the number of rows other than the
    anchor at a distance (not NaN) and the sum of those distances,
    ``(anchors, classes, 2)`` (MuRelief's class means; partials over disjoint
    candidate sets add).  ``target``: the classes are the anchor's hits and
    misses, as in :func:`_knn_tile_general`."""
    n_anchors, n_features = Xa.shape
    ones = np.empty(n_features)
    ones[:] = 1.0
    n_out = n_classes if target.shape[0] == 0 else 2
    out = filled((n_anchors, n_out, 2), 0.0)
    for a in numba.prange(n_anchors):
        xa = Xa[a]
        for j in range(Xc.shape[0]):
            if ic[j] == ia[a]:
                continue
            d = pair_distance(xa, Xc[j], ones, dm, dw, kind)
            if d == d:
                cc = _group(yc[j], target, bound, ia[a], ic[j])
                out[a, cc, 0] += 1.0
                out[a, cc, 1] += d
    return out


CLASS_MOMENTS_KERNEL = TileKernel.compile(_class_moments_tile, cost=2.0)
