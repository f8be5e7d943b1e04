"""Hard nearest-neighbour tiles (Relief, ReliefF): k nearest per anchor and class."""

from typing import NamedTuple

import numba
import numpy as np

from .._numba import TileKernel, bare, helper, inline
from .distance import (
    PLAIN,
    distance,
    feature_diff,
    float32_error_bound,
    pair_distance,
    plain_tile,
    trailing_zeros,
    transpose,
)
from .lse import ANCHOR_GROUP, by_class, class_order, filled

#: Candidates per float32 block: the block's rows (features by rows) and a
#: group's distances to it stay in L1/L2 while the group's sweeps run.
KNN_BLOCK = 128


@inline
def insert_nearest(dc, ix, loc, d, g, pos):
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


@inline
def _smallest(row, nq, buf):
    """The ``len(buf)``-th smallest of ``row[:nq]`` (``buf``: scratch, left sorted)."""
    m = buf.shape[0]
    buf[:] = np.inf
    for j in range(nq):
        v = row[j]
        if v < buf[m - 1]:
            i = m - 1
            while i > 0 and buf[i - 1] > v:
                buf[i] = buf[i - 1]
                i -= 1
            buf[i] = v
    return buf[m - 1]


@inline
def _within(row, t0, t1, limit):
    """Bit ``t - t0`` set for each ``t`` in ``[t0, t1)`` (at most 64) with ``row[t] <=
    limit``: a branch-free pass the compiler vectorises, after which only the few
    candidates within an anchor's limit are visited (:func:`trailing_zeros`)."""
    word = np.uint64(0)
    for t in range(t0, t1):
        word |= np.uint64(row[t] <= limit) << np.uint64(t - t0)
    return word


@inline
def _pool_add(pool_d, pool_j, n, d, j):
    """Insert candidate ``j`` at float32 distance ``d`` into the pool, ascending in
    ``pool_d[:n]``; returns the pool's new size."""
    i = n
    while i > 0 and pool_d[i - 1] > d:
        pool_d[i] = pool_d[i - 1]
        pool_j[i] = pool_j[i - 1]
        i -= 1
    pool_d[i] = d
    pool_j[i] = j
    return n + 1


@helper
def _flush(pool_d, pool_j, n, limit, xa, Xs, ics, dc, ix, loc, bound):
    """Remeasure in float64 the pooled candidates (float32 distance ``pool_d``,
    position ``pool_j``) still within ``limit`` and insert them into the k-nearest
    lists ``dc, ix, loc``; returns the new limit."""
    k = dc.shape[0]
    for e in range(n):
        if pool_d[e] <= limit:
            j = pool_j[e]
            if insert_nearest(dc, ix, loc, distance(xa, Xs, j), ics[j], j):
                limit = min(limit, dc[k - 1] + bound)
    return limit


@inline
def _take(v, j, limit, pool_d, pool_j, n, xa, Xs, ics, dc, ix, loc, bound):
    """Offer candidate ``j`` (position in ``Xs``) at float32 distance ``v`` to an
    anchor's pool (``pool_d[:n]`` ascending, ``pool_j``) under its limit; returns
    ``(n, limit)``.  A full pool first drops what lies beyond the limit; full of
    ties within it, it is ranked in float64 into the lists ``dc, ix, loc``."""
    if v > limit:
        return n, limit
    k = dc.shape[0]
    if n == pool_d.shape[0]:
        while n > 0 and pool_d[n - 1] > limit:
            n -= 1
        if n == pool_d.shape[0]:
            limit = _flush(pool_d, pool_j, n, limit, xa, Xs, ics, dc, ix, loc, bound)
            n = 0
            if v > limit:
                return n, limit
    n = _pool_add(pool_d, pool_j, n, v, j)
    if n >= k:
        limit = min(limit, pool_d[k - 1] + 2.0 * bound)
    return n, limit


def _knn_tile(Xa, ia, Xc, yc, ic, n_classes, n_neighbors):
    """Hard k nearest candidates per anchor and class (unweighted Manhattan).

    Returns ``dist[a, c, r]``, ``idx[a, c, r]`` (global row index) and
    ``z[a, c, r, :] = |x_a - x_idx|`` of the ``r``-th nearest candidate of
    class ``c``, ordered by (distance, index) so ties go to the lower row
    index.  Unfilled slots hold ``dist = inf, idx = -1, z = 0``.

    Exact in float64.  A group of anchors measures each block of candidates
    in float32 (:func:`~.distance.plain_tile`, error at most
    ``bound``, :func:`~.distance.float32_error_bound`).  Each anchor keeps a
    limit ``L`` such that ``k`` candidates other than itself lie within
    ``L - bound`` in float64: a candidate farther than ``L`` in float32 is
    farther than ``L - bound`` in float64, so it cannot be one of the ``k``
    nearest (nor tie with the k-th) and is dropped.  The others go to a pool
    sorted by float32 distance, whose k-th smallest plus ``2 bound`` is the
    new ``L``.  The pool's survivors within ``L``, about ``k``, are
    remeasured in float64 and ranked by that.
    """
    n_anchors, n_features = Xa.shape
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    n_cand = Xs.shape[0]
    # The candidates once in float32, features by rows: each block a slice of every row.
    XT = np.empty(n_features * n_cand, dtype=np.float32).reshape((n_features, n_cand))
    transpose(Xs, 0, n_cand, XT)
    scale = 0.0
    for v in Xs.ravel():
        scale = max(scale, abs(v))
    for v in Xa.ravel():
        scale = max(scale, abs(v))
    bound = float32_error_bound(scale, n_features)
    k = n_neighbors
    n_pool = k + 2
    dist = filled((n_anchors, n_classes, k), np.inf)
    idx = np.empty(n_anchors * n_classes * k, dtype=np.int64).reshape((n_anchors, n_classes, k))
    idx[:] = -1
    z = filled((n_anchors, n_classes, k, n_features), 0.0)
    # A group of anchors scans each block of candidates while it is in cache.
    for g in numba.prange((n_anchors + ANCHOR_GROUP - 1) // ANCHOR_GROUP):
        a0 = g * ANCHOR_GROUP
        n_a = min(ANCHOR_GROUP, n_anchors - a0)
        D = np.empty(n_a * KNN_BLOCK, dtype=np.float32).reshape((n_a, KNN_BLOCK))
        Xa32 = np.empty(n_a * n_features, dtype=np.float32).reshape((n_a, n_features))
        for r in range(n_a):
            for f in range(n_features):
                Xa32[r, f] = Xa[a0 + r, f]
        loc = np.empty(n_a * k, dtype=np.int64).reshape((n_a, k))
        cut = np.empty(n_a)  # each anchor's limit L
        pool_d = np.empty(n_a * n_pool, dtype=np.float32).reshape((n_a, n_pool))
        pool_j = np.empty(n_a * n_pool, dtype=np.int64).reshape((n_a, n_pool))
        pooled = np.zeros(n_a, dtype=np.int64)
        small = np.empty(k + 1, dtype=np.float32)
        _knn_group(
            Xa, ia, a0, Xa32, Xs, ics, starts, XT, bound, dist, idx, z,
            D, loc, cut, pool_d, pool_j, pooled, small,
        )  # fmt: skip
    return dist, idx, z


@bare
def _knn_group(
    Xa, ia, a0, Xa32, Xs, ics, starts, XT, bound, dist, idx, z,
    D, loc, cut, pool_d, pool_j, pooled, small,
):  # fmt: skip
    """The anchors ``a0, ..., a0 + len(Xa32) - 1`` of :func:`_knn_tile` (``Xa32``:
    them in float32) against every block of candidates, with the scratch arrays
    its caller made (``D``: a block's float32 distances; ``loc``, ``cut``,
    ``pool_d``, ``pool_j``, ``pooled``: each anchor's positions, limit and pool;
    ``small``: :func:`_smallest`'s)."""
    n_a, n_features = Xa32.shape
    n_classes, k = dist.shape[1], dist.shape[2]
    for c in range(n_classes):
        cut[:] = np.inf
        pooled[:] = 0
        for c0 in range(starts[c], starts[c + 1], KNN_BLOCK):
            c1 = min(c0 + KNN_BLOCK, starts[c + 1])
            nq = c1 - c0
            plain_tile(Xa32, 0, n_a, XT, c0, nq, D)
            for r in range(n_a):
                a = a0 + r
                row = D[r]
                limit = cut[r]
                if limit == np.inf and nq > k:
                    # k of the block's k + 1 nearest in float32 are not the anchor.
                    limit = _smallest(row, nq, small) + 2.0 * bound
                n = pooled[r]
                for w0 in range(0, nq, 64):
                    word = _within(row, w0, min(w0 + 64, nq), limit)
                    while word:
                        j = w0 + trailing_zeros(word)
                        word &= word - np.uint64(1)
                        if ics[c0 + j] != ia[a]:
                            n, limit = _take(
                                row[j], c0 + j, limit, pool_d[r], pool_j[r], n,
                                Xa[a], Xs, ics, dist[a, c], idx[a, c], loc[r], bound,
                            )  # fmt: skip
                pooled[r] = n
                cut[r] = limit
        for r in range(n_a):
            a = a0 + r
            _flush(
                pool_d[r], pool_j[r], pooled[r], cut[r], Xa[a], Xs, ics,
                dist[a, c], idx[a, c], loc[r], bound,
            )  # fmt: skip
            for q in range(k):
                if idx[a, c, q] >= 0:
                    for f in range(n_features):
                        z[a, c, q, f] = abs(Xa[a, f] - Xs[loc[r, q], f])


@inline
def _class_blocks(starts, size):
    """Blocks of at most ``size`` consecutive rows, none across a class boundary:
    ``(first rows, ends, classes)``."""
    n_classes = starts.shape[0] - 1
    n = 0
    for c in range(n_classes):
        n += (starts[c + 1] - starts[c] + size - 1) // size
    b0 = np.empty(n, dtype=np.int64)
    b1 = np.empty(n, dtype=np.int64)
    bc = np.empty(n, dtype=np.int64)
    i = 0
    for c in range(n_classes):
        for s in range(starts[c], starts[c + 1], size):
            b0[i], b1[i], bc[i] = s, min(s + size, starts[c + 1]), c
            i += 1
    return b0, b1, bc


def _knn_all_pairs(X, ids, y, n_classes, n_neighbors, threads):
    """Every row's k nearest other rows per class, each distance measured once.

    The in-process form of :func:`_knn_tile` with every row an anchor and a
    candidate: ``(dist, idx)`` as its (global indices ``ids``; the caller
    takes ``z`` from ``idx``).  The rows, sorted by class, are cut into
    blocks of one class; the float32 tile of a pair of blocks ``I < J``
    serves the anchors of ``I`` (its rows) and those of ``J`` (its columns),
    so each pair's distance is measured once where :func:`_knn_tile`
    measures it from both ends.  The limits, pools and float64 recheck are
    :func:`_knn_tile`'s, per row and class, so the result is the same.
    Threads take the pairs of a round of a round-robin schedule over groups
    of blocks (``4 * threads`` groups): no two pairs of a round share a
    block, so no two threads touch one row's pool.
    """
    n, n_features = X.shape
    Xs, ics, starts = by_class(X, y, ids, n_classes)
    XT = np.empty(n_features * n, dtype=np.float32).reshape((n_features, n))
    transpose(Xs, 0, n, XT)
    X32 = np.empty(n * n_features, dtype=np.float32).reshape((n, n_features))
    scale = 0.0
    for r in range(n):
        for f in range(n_features):
            X32[r, f] = Xs[r, f]
            scale = max(scale, abs(Xs[r, f]))
    bound = float32_error_bound(scale, n_features)
    k = n_neighbors
    n_pool = k + 2
    dist = filled((n, n_classes, k), np.inf)
    idx = np.empty(n * n_classes * k, dtype=np.int64).reshape((n, n_classes, k))
    idx[:] = -1
    loc = np.empty(n * n_classes * k, dtype=np.int64).reshape((n, n_classes, k))
    lim = filled((n, n_classes), np.inf)
    pool_d = np.empty(n * n_classes * n_pool, dtype=np.float32).reshape((n, n_classes, n_pool))
    pool_j = np.empty(n * n_classes * n_pool, dtype=np.int64).reshape((n, n_classes, n_pool))
    pooled = np.zeros(n * n_classes, dtype=np.int64).reshape((n, n_classes))
    b0, b1, bc = _class_blocks(starts, KNN_BLOCK)
    n_blocks = b0.shape[0]
    # Consecutive blocks in groups, a few per thread: a thread takes a group's pairs,
    # or all the pairs between two groups, so that the threads meet at a barrier once
    # per round of groups, not once per round of blocks (each costs tens of
    # microseconds when the caller is not the main thread).
    n_groups = max(1, min(n_blocks, 4 * threads))
    g0 = np.empty(n_groups + 1, dtype=np.int64)
    for g in range(n_groups + 1):
        g0[g] = g * n_blocks // n_groups
    for g in numba.prange(n_groups):  # the pairs within a group, the diagonal ones too
        D, small, words = _pair_scratch(k)
        for I in range(g0[g], g0[g + 1]):
            for J in range(I, g0[g + 1]):
                _pair_tile(
                    I, J, b0, b1, bc, X32, XT, Xs, ics, k, bound,
                    lim, pool_d, pool_j, pooled, dist, idx, loc, D, small, words,
                )  # fmt: skip
    # The pairs between groups in rounds of the circle method over an even number of
    # slots (a slot past the last group is a rest): each round pairs every slot once,
    # so the group pairs of a round share no block.
    slots = n_groups + n_groups % 2
    for rnd in range(slots - 1):
        for h in numba.prange(slots // 2):
            D, small, words = _pair_scratch(k)
            p, q = slots - 1, rnd
            if h > 0:
                p, q = (rnd + h) % (slots - 1), (rnd - h + slots - 1) % (slots - 1)
            if p < n_groups and q < n_groups:
                for I in range(g0[min(p, q)], g0[min(p, q) + 1]):
                    for J in range(g0[max(p, q)], g0[max(p, q) + 1]):
                        _pair_tile(
                            I, J, b0, b1, bc, X32, XT, Xs, ics, k, bound,
                            lim, pool_d, pool_j, pooled, dist, idx, loc, D, small, words,
                        )  # fmt: skip
    for s in numba.prange(n):
        for c in range(n_classes):
            _flush(
                pool_d[s, c], pool_j[s, c], pooled[s, c], lim[s, c],
                Xs[s], Xs, ics, dist[s, c], idx[s, c], loc[s, c], bound,
            )  # fmt: skip
    # Back to the rows' own order.
    order = class_order(y, n_classes)[0]
    out_d = filled((n, n_classes, k), 0.0)
    out_i = np.empty(n * n_classes * k, dtype=np.int64).reshape((n, n_classes, k))
    for s in range(n):
        for c in range(n_classes):
            for r in range(k):  # element by element: no shape checks to compile
                out_d[order[s], c, r] = dist[s, c, r]
                out_i[order[s], c, r] = idx[s, c, r]
    return out_d, out_i


@inline
def _pair_scratch(k):
    """A thread's scratch for :func:`_pair_tile`: a tile's distances, :func:`_smallest`'s
    buffer, and the columns' bit words."""
    return (
        np.empty((KNN_BLOCK, KNN_BLOCK), dtype=np.float32),
        np.empty(k + 1, dtype=np.float32),
        np.empty(((KNN_BLOCK + 63) // 64, KNN_BLOCK), dtype=np.uint64),
    )


@bare
def _pair_tile(
    I, J, b0, b1, bc, X32, XT, Xs, ics, k, bound, lim, pool_d, pool_j, pooled, dist, idx, loc,
    D, small, words,
):  # fmt: skip
    """One pair of blocks of :func:`_knn_all_pairs`: its float32 tile, offered to
    the anchors of ``I`` along its rows and, when ``I < J``, to those of ``J``
    along its columns."""
    i0, n_i, j0, n_j = b0[I], b1[I] - b0[I], b0[J], b1[J] - b0[J]
    ci, cj = bc[I], bc[J]
    plain_tile(X32, i0, i0 + n_i, XT, j0, n_j, D)
    for r in range(n_i):
        s = i0 + r
        row = D[r]
        limit = lim[s, cj]
        if limit == np.inf and n_j > k:
            limit = _smallest(row, n_j, small) + 2.0 * bound
        n = pooled[s, cj]
        for w0 in range(0, n_j, 64):
            word = _within(row, w0, min(w0 + 64, n_j), limit)
            while word:
                t = w0 + trailing_zeros(word)
                word &= word - np.uint64(1)
                if j0 + t != s:
                    n, limit = _take(
                        row[t], j0 + t, limit, pool_d[s, cj], pool_j[s, cj], n,
                        Xs[s], Xs, ics, dist[s, cj], idx[s, cj], loc[s, cj], bound,
                    )  # fmt: skip
        pooled[s, cj] = n
        lim[s, cj] = limit
    if I == J:
        return
    # The columns: the anchors of J, their limits side by side, and per anchor the bits
    # of the rows within its limit, set a row at a time for every anchor (vectorised).
    limits = lim[j0 : j0 + n_j, ci]
    for t in range(n_j):
        if limits[t] == np.inf and n_i > k:
            limits[t] = _smallest(D[:, t], n_i, small) + 2.0 * bound
    n_words = (n_i + 63) // 64
    words[:n_words, :n_j] = 0
    for r in range(n_i):
        row = D[r]
        bits = words[r // 64]
        shift = np.uint64(r % 64)
        for t in range(n_j):
            bits[t] |= np.uint64(row[t] <= limits[t]) << shift
    for t in range(n_j):
        s = j0 + t
        limit = lim[s, ci]
        n = pooled[s, ci]
        for w in range(n_words):
            word = words[w, t]
            while word:
                r = 64 * w + trailing_zeros(word)
                word &= word - np.uint64(1)
                n, limit = _take(
                    D[r, t], i0 + r, limit, pool_d[s, ci], pool_j[s, ci], n,
                    Xs[s], Xs, ics, dist[s, ci], idx[s, ci], loc[s, ci], bound,
                )  # fmt: skip
        pooled[s, ci] = n
        lim[s, ci] = limit


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
    if kind == PLAIN:  # continuous rows: their distances in float64 sub-tiles
        for grp in numba.prange((n_anchors + ANCHOR_GROUP - 1) // ANCHOR_GROUP):
            a0 = grp * ANCHOR_GROUP
            n_a = min(ANCHOR_GROUP, n_anchors - a0)
            XT = np.empty(n_features * KNN_BLOCK).reshape((n_features, KNN_BLOCK))
            D = np.empty(n_a * KNN_BLOCK).reshape((n_a, KNN_BLOCK))
            loc = np.empty(n_a * n_out * k, dtype=np.int64).reshape((n_a, n_out, k))
            for c in range(n_classes):
                for c0 in range(starts[c], starts[c + 1], KNN_BLOCK):
                    c1 = min(c0 + KNN_BLOCK, starts[c + 1])
                    transpose(Xs, c0, c1, XT)
                    plain_tile(Xa, a0, a0 + n_a, XT, 0, c1 - c0, D)
                    _rank_block(D, a0, c, c0, c1, ia, ics, centres, target, bound, dist, idx, loc)
            for r in range(n_a):
                for cc in range(n_out):
                    for q in range(k):
                        if idx[a0 + r, cc, q] >= 0:
                            for f in range(n_features):
                                z[a0 + r, cc, q, f] = abs(Xa[a0 + r, f] - Xs[loc[r, cc, q], f])
        return dist, idx, z
    for a in numba.prange(n_anchors):
        loc = np.empty(n_out * k, dtype=np.int64).reshape((n_out, k))
        xa = Xa[a]
        _rank_anchor(
            a, Xa, ia, Xs, ics, starts, ones, dm, dw, kind, centres, target, bound, dist, idx, loc
        )
        for cc in range(n_out):
            for r in range(k):
                if idx[a, cc, r] >= 0:
                    for f in range(n_features):
                        z[a, cc, r, f] = feature_diff(xa[f], Xs[loc[cc, r], f], dm[f], ramp[f])
    return dist, idx, z


@bare
def _rank_block(D, a0, c, c0, c1, ia, ics, centres, target, bound, dist, idx, loc):
    """:func:`_knn_tile_general`'s anchors ``a0, ..., a0 + len(D) - 1`` offered the
    candidates ``c0, ..., c1 - 1`` of class ``c`` at the distances ``D``."""
    ranked = centres.shape[0] > 0
    for r in range(D.shape[0]):
        a = a0 + r
        for t in range(c1 - c0):
            g = ics[c0 + t]
            if g == ia[a]:
                continue
            cc = _group(c, target, bound, ia[a], g)
            d = D[r, t]
            if ranked:
                d = -abs(centres[a, cc, 0] * d - centres[a, cc, 1])
            insert_nearest(dist[a, cc], idx[a, cc], loc[r, cc], d, g, c0 + t)


@bare
def _rank_anchor(
    a, Xa, ia, Xs, ics, starts, ones, dm, dw, kind, centres, target, bound, dist, idx, loc
):
    """:func:`_knn_tile_general`'s anchor ``a`` offered every candidate, measured by
    :func:`~.distance.pair_distance`."""
    ranked = centres.shape[0] > 0
    xa = Xa[a]
    for c in range(starts.shape[0] - 1):
        for j in range(starts[c], starts[c + 1]):
            g = ics[j]
            if g == ia[a]:
                continue
            cc = _group(c, target, bound, ia[a], g)
            d = pair_distance(xa, Xs[j], ones, dm, dw, kind)
            if ranked:
                d = -abs(centres[a, cc, 0] * d - centres[a, cc, 1])
            insert_nearest(dist[a, cc], idx[a, cc], loc[cc], d, g, j)


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
    if kind == PLAIN:  # continuous rows: their distances in float64 sub-tiles
        for grp in numba.prange((n_anchors + ANCHOR_GROUP - 1) // ANCHOR_GROUP):
            a0 = grp * ANCHOR_GROUP
            n_a = min(ANCHOR_GROUP, n_anchors - a0)
            XT = np.empty(n_features * KNN_BLOCK).reshape((n_features, KNN_BLOCK))
            D = np.empty(n_a * KNN_BLOCK).reshape((n_a, KNN_BLOCK))
            for c0 in range(0, Xc.shape[0], KNN_BLOCK):
                c1 = min(c0 + KNN_BLOCK, Xc.shape[0])
                transpose(Xc, c0, c1, XT)
                plain_tile(Xa, a0, a0 + n_a, XT, 0, c1 - c0, D)
                for r in range(n_a):
                    a = a0 + r
                    for t in range(c1 - c0):
                        if ic[c0 + t] != ia[a]:
                            cc = _group(yc[c0 + t], target, bound, ia[a], ic[c0 + t])
                            out[a, cc, 0] += 1.0
                            out[a, cc, 1] += D[r, t]
        return out
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


#: The k-nearest lists of every row against every row, each pair measured once:
#: ``(dist, idx)`` as :data:`KERNEL`'s (in-process; see :func:`_knn_all_pairs`).
ALL_PAIRS = TileKernel.compile(_knn_all_pairs, speed=8.0)
all_pairs = ALL_PAIRS.serial


@helper
def neighbour_differences(Xa, Xc, idx, start_c):
    """``z[a, c, r] = |x_a - x_idx|`` for the lists ``idx`` (global indices, rows of
    ``Xc`` from ``start_c``), zeros where a slot is empty (``-1``)."""
    n_a, n_classes, k = idx.shape
    n_features = Xa.shape[1]
    z = np.empty(n_a * n_classes * k * n_features).reshape((n_a, n_classes, k, n_features))
    for a in range(n_a):
        for c in range(n_classes):
            for r in range(k):
                j = idx[a, c, r] - start_c
                found = idx[a, c, r] >= 0
                for f in range(n_features):
                    z[a, c, r, f] = abs(Xa[a, f] - Xc[j, f]) if found else 0.0
    return z


def _neighbour_sums(Xa, Xc, idx, start_c):
    """:func:`neighbour_differences` summed over the ranks, without the rows: per
    anchor and class the neighbours found ``(anchors, classes, 1)`` and the sums
    of their differences ``(anchors, classes, A)``, added in rank order as numpy
    sums the rows (the same values, bit for bit)."""
    n_a, n_classes, k = idx.shape
    n_features = Xa.shape[1]
    found = filled((n_a, n_classes, 1), 0.0)
    sums = filled((n_a, n_classes, n_features), 0.0)
    for a in numba.prange(n_a):
        for c in range(n_classes):
            out = sums[a, c]
            for r in range(k):
                if idx[a, c, r] >= 0:
                    j = idx[a, c, r] - start_c
                    found[a, c, 0] += 1.0
                    for f in range(n_features):
                        out[f] += abs(Xa[a, f] - Xc[j, f])
    return found, sums


#: :func:`_neighbour_sums`, threaded over anchors where the lists came from threads
#: (picked by the same work as the all-pairs tile of the anchors).
NEIGHBOUR_SUMS = TileKernel.compile(_neighbour_sums)
neighbour_sums = NEIGHBOUR_SUMS.serial
