"""The Relief family's one distance: per-pair feature differences and their weighted sum.

Every pairwise kernel of the Relief family (``knn``, ``lse``, ``sequential``
through :func:`dmargin.engine.kernels.lse.lse_anchor`, ``surf``) takes its
differences and distances from here, as helpers inlined into the caller
(no compilation of their own).

Three kinds of data, chosen once per fit from the data
(:func:`dmargin.engine.features.feature_kinds`):

- :data:`PLAIN` -- every feature continuous, no missing value: the
  difference is ``|x_af - x_jf|`` (range-scaled rows) and the distance
  ``d_aj = sum_f w_f |x_af - x_jf|``.  The default path: the kernels'
  vectorised loops, compiled once, unchanged by the other kinds.
- :data:`MASKED` -- some features discrete (``dm_f``), or weighted: a
  discrete difference is 0 (equal) or 1 (different), and each feature's
  difference weighs ``dw_f`` in the distance (a discrete mismatch in
  skrebate's mixed data: ``A / A_discrete``; times the user's feature
  weights, if any); a scored continuous difference above ``ramp_f`` counts
  1 (skrebate's "ramp"; ``inf``: none).
- :data:`MISSING` -- some values NaN: skrebate 0.8.4's rule
  (``get_row_missing``): a pair's distance sums the differences of the
  features present in both rows (a discrete mismatch counts 1) and divides
  by their number, so that pairs missing different numbers of values stay
  comparable (with feature weights ``dw_f``: their weighted mean); a
  difference with a missing side is NaN, and scoring leaves it out of both
  the sum and the neighbour count of that feature. A pair with no feature in
  common has distance NaN: never a neighbour.

The MASKED and MISSING kinds run in separately compiled kernel variants,
only for data that need them.
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .._numba import inline, strict

PLAIN, MASKED, MISSING = 0, 1, 2


# ---------------------------------------------------------------------------
# PLAIN: continuous features, no missing values
# ---------------------------------------------------------------------------


@inline
def distances(xa, Xs, c0, c1, w, d):
    """``d[j - c0] = sum_k w_k |xa_k - Xs[j, k]|`` for ``c0 <= j < c1``.

    .. math:: d_{aj} = \\sum_k w_k |x_{ak} - x_{jk}|
    """
    n_features = Xs.shape[1]
    for j in range(c0, c1):
        acc = 0.0
        for k in range(n_features):
            acc += w[k] * abs(xa[k] - Xs[j, k])
        d[j - c0] = acc


@inline
def distance(xa, Xs, j):
    """Unweighted Manhattan distance of ``xa`` and row ``j`` of ``Xs``."""
    acc = 0.0
    for k in range(Xs.shape[1]):
        acc += abs(xa[k] - Xs[j, k])
    return acc


# ---------------------------------------------------------------------------
# Every kind: one feature's difference, one pair's distance
# ---------------------------------------------------------------------------


@inline
def feature_diff(x, v, discrete, ramp):
    """The scored difference of one feature: 0/1 if ``discrete``, else ``|x - v|``
    (1 above ``ramp``); NaN when either value is missing."""
    z = abs(x - v)
    if discrete:
        if z != z:
            return z
        return 1.0 if z != 0.0 else 0.0
    if z > ramp:
        return 1.0
    return z


def scored_differences(a, b, discrete, ramp):
    """:func:`feature_diff` in numpy, over the last axis (features) of broadcast
    arrays ``a`` and ``b``; ``discrete`` and ``ramp`` per feature."""
    z = np.abs(a - b)
    with np.errstate(invalid="ignore"):
        scored = np.where(discrete, (z != 0.0).astype(np.float64), np.where(z > ramp, 1.0, z))
    return np.where(np.isnan(z), np.nan, scored)


@inline
def pair_distance(xa, xb, w, dm, dw, kind):
    """The distance of rows ``xa`` and ``xb`` under feature weights ``w``.

    ``PLAIN``: ``sum_f w_f |xa_f - xb_f|``; ``MASKED``: each difference (a
    discrete mismatch counts 1) times ``dw_f``; ``MISSING``: the
    ``dw``-weighted mean over the features present in both rows, NaN when
    there is none (or their weights sum to 0).  The sum runs over the features in order: the same value
    in every kernel and for either order of the pair.
    """
    acc = 0.0
    if kind == MISSING:
        count = 0.0
        for f in range(xa.shape[0]):
            z = abs(xa[f] - xb[f])
            if z != z:
                continue
            if dm[f]:
                z = 1.0 if z != 0.0 else 0.0
            acc += w[f] * (dw[f] * z)
            count += dw[f]
        return acc / count if count > 0.0 else math.nan
    for f in range(xa.shape[0]):
        z = abs(xa[f] - xb[f])
        if dm[f]:
            z = 1.0 if z != 0.0 else 0.0
        acc += w[f] * (dw[f] * z)
    return acc


# ---------------------------------------------------------------------------
# Sub-tiles of pairs (the SURF family's symmetric grid)
# ---------------------------------------------------------------------------


@strict
def plain_tile(Xp, p0, p1, XT, t0, nq, D):
    """``D[a - p0, t] = sum_f |Xp[a, f] - XT[f, t0 + t]|`` for ``t < nq``: :func:`tile_distances`
    of the ``PLAIN`` kind, in the arrays' own float type (float64, or float32 for the
    prefilters of :func:`float32_error_bound`).

    Register tiles of four anchors by two features: each sweep reads two rows
    of ``XT`` once for four anchors and adds ``|x_f - v_f| + |x_{f+1} -
    v_{f+1}|`` to each of their running rows (half the loads and stores of
    those rows of a feature a sweep).  The anchors after the last sweep of
    four, and :func:`plain_distance`, pair the features the same way: every
    distance is the same sum.  Compiled on its own without fast-math (the
    loop over the candidates vectorises without reassociation, which could
    regroup the pairs' sums differently in different loops).
    """
    n_features = Xp.shape[1]
    a = p0
    while a + 4 <= p1:
        r0, r1, r2, r3 = D[a - p0], D[a - p0 + 1], D[a - p0 + 2], D[a - p0 + 3]
        for t in range(nq):
            r0[t] = 0
            r1[t] = 0
            r2[t] = 0
            r3[t] = 0
        f = 0
        while f + 2 <= n_features:
            x0, x1, x2, x3 = Xp[a, f], Xp[a + 1, f], Xp[a + 2, f], Xp[a + 3, f]
            y0, y1, y2, y3 = Xp[a, f + 1], Xp[a + 1, f + 1], Xp[a + 2, f + 1], Xp[a + 3, f + 1]
            xt, yt = XT[f, t0 : t0 + nq], XT[f + 1, t0 : t0 + nq]
            for t in range(nq):
                v, u = xt[t], yt[t]
                r0[t] += abs(x0 - v) + abs(y0 - u)
                r1[t] += abs(x1 - v) + abs(y1 - u)
                r2[t] += abs(x2 - v) + abs(y2 - u)
                r3[t] += abs(x3 - v) + abs(y3 - u)
            f += 2
        if f < n_features:
            x0, x1, x2, x3 = Xp[a, f], Xp[a + 1, f], Xp[a + 2, f], Xp[a + 3, f]
            xt = XT[f, t0 : t0 + nq]
            for t in range(nq):
                v = xt[t]
                r0[t] += abs(x0 - v)
                r1[t] += abs(x1 - v)
                r2[t] += abs(x2 - v)
                r3[t] += abs(x3 - v)
        a += 4
    rest = a  # the anchors after the sweeps of four
    for a in range(rest, p1):
        row = D[a - p0]
        for t in range(nq):
            row[t] = 0
        f = 0
        while f + 2 <= n_features:
            x, y = Xp[a, f], Xp[a, f + 1]
            xt, yt = XT[f, t0 : t0 + nq], XT[f + 1, t0 : t0 + nq]
            for t in range(nq):
                row[t] += abs(x - xt[t]) + abs(y - yt[t])
            f += 2
        if f < n_features:
            x = Xp[a, f]
            xt = XT[f, t0 : t0 + nq]
            for t in range(nq):
                row[t] += abs(x - xt[t])


@strict
def plain_distance(xa, xb):
    """The ``PLAIN`` distance of rows ``xa`` and ``xb``, bit for bit
    :func:`plain_tile`'s (the features summed two at a time, in order)."""
    n_features = xa.shape[0]
    acc = 0.0
    f = 0
    while f + 2 <= n_features:
        acc += abs(xa[f] - xb[f]) + abs(xa[f + 1] - xb[f + 1])
        f += 2
    if f < n_features:
        acc += abs(xa[f] - xb[f])
    return acc


@inline
def tile_distances(Xp, p0, p1, XT, nq, dm, dw, kind, D, cnt):
    """``D[a - p0, t] = d(Xp[a], candidate t)`` for a sub-tile, from the candidates
    transposed to features by rows (``XT[f, t]``).

    Vectorised over the candidates, summed over the features in their order:
    every distance is the same sum in every kernel and mode, and ``d(a, j)
    == d(j, a)`` exactly.  ``PLAIN``: :func:`plain_tile` (four anchors by two
    features a sweep).  ``MISSING`` counts the features present in both rows
    in ``cnt`` (scratch of length ``nq``) and divides by it.
    """
    if kind == PLAIN:
        plain_tile(Xp, p0, p1, XT, 0, nq, D)
        return
    n_features = Xp.shape[1]
    for a in range(p0, p1):
        row = D[a - p0]
        for t in range(nq):
            row[t] = 0.0
        if kind == MISSING:
            for t in range(nq):
                cnt[t] = 0.0
            for f in range(n_features):
                x = Xp[a, f]
                if x != x:
                    continue
                xt = XT[f]
                disc = dm[f]
                wf = dw[f]
                for t in range(nq):
                    z = abs(x - xt[t])
                    if z == z:
                        if disc:
                            z = 1.0 if z != 0.0 else 0.0
                        row[t] += wf * z
                        cnt[t] += wf
            for t in range(nq):
                row[t] = row[t] / cnt[t] if cnt[t] > 0.0 else math.nan
            continue
        for f in range(n_features):
            x = Xp[a, f]
            xt = XT[f]
            wf = dw[f]
            if not dm[f]:
                for t in range(nq):
                    row[t] += wf * abs(x - xt[t])
            else:
                for t in range(nq):
                    row[t] += wf if x != xt[t] else 0.0


@inline
def transpose(Xq, q0, q1, XT):
    """``XT[f, t] = Xq[q0 + t, f]``: a sub-tile of candidates, features by rows (in
    ``XT``'s dtype: a float32 ``XT`` rounds the rows once)."""
    for t in range(q1 - q0):
        for f in range(Xq.shape[1]):
            XT[f, t] = Xq[q0 + t, f]


# ---------------------------------------------------------------------------
# Float32 sub-tiles: a prefilter whose decisions are rechecked in float64
# ---------------------------------------------------------------------------
#
# Where a distance only decides something (a neighbour's rank, a side of a
# threshold), it is first measured in float32, at twice the float64 rate, and
# remeasured in float64 only when the float32 value is within
# :func:`float32_error_bound` of the decision: every decision is the one the
# float64 distance makes, so the results do not change.


@inline
def float32_error_bound(scale, n_features):
    """A bound on ``|d32 - d|`` for the plain distance of two rows whose values
    are at most ``scale`` in magnitude: ``d32`` as :func:`plain_tile` on float32 rows
    computes it from the rows rounded to float32, ``d`` the exact distance.

    With ``u = 2^-24``: rounding a value moves it by at most ``u scale``, so a
    difference by at most ``2 u scale`` before its own rounding and ``4 u
    scale`` after; a sum of ``A`` terms of at most ``2 scale`` each, in any
    order, adds at most ``(A - 1) u 2 A scale``.  In all ``u scale (4 A + 2
    A^2)`` to first order; doubled, which covers the second-order terms and
    the float64 distance's own rounding, ``A 2^-53`` of it.
    """
    return 2.0 * 2.0**-24 * scale * (4 * n_features + 2 * n_features * n_features)


@inline
def float32_band(scale, n_features, distance):
    """:func:`float32_error_bound` for the pairs whose distance is at most ``distance``
    (``>= 0``): ``2^-24 ((A // 2 + 2) distance + 2 A scale)``, doubled.

    Rounding the two values moves a difference by at most ``2 u scale``, its
    own rounding and that of the pair's sum (features two at a time) by at most
    ``u`` of each difference: ``2 u d + 2 A u scale`` over the features; the
    ``ceil(A / 2) - 1`` additions of the running sum, every partial sum at most
    the distance (the terms are not negative), add at most ``u d`` each.  So
    ``u ((ceil(A / 2) + 1) d + 2 A scale)`` to first order, doubled as
    :func:`float32_error_bound`.  At most that bound whenever ``distance <= 2 A
    scale``, the largest distance of such rows; far smaller at the distances
    of a SURF threshold, so that few candidates are left for float64.
    """
    return 2.0 * 2.0**-24 * ((n_features // 2 + 2) * distance + 2 * n_features * scale)


# ---------------------------------------------------------------------------
# Compact discrete rows (uint8): mismatch counts on bit planes
# ---------------------------------------------------------------------------
#
# Rows whose features are all discrete with values below 256 (genotypes 0/1/2)
# are kept as bytes, and for the distances as bit planes: plane ``b`` of row
# ``j`` holds bit ``b`` of every value, 64 features per word, laid out
# ``planes[j, w, b]``.  Two values differ exactly when one of their bits does,
# so a pair's mismatch count (the all-discrete distance, a discrete mismatch
# weighing 1) is ``sum_w popcount(OR_b planes[a, w, b] ^ planes[j, w, b])``:
# one instruction per 64 features and plane instead of one per feature.  The
# count is an integer, so it equals the float64 kernels' sum of 1.0s exactly.


@intrinsic
def popcount(typingctx, x):
    """The number of set bits of a ``uint64`` (LLVM's ``ctpop``: one instruction), as
    ``int64`` so that sums of counts stay integers (numba adds int64 and uint64 in
    float64)."""

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.int64(types.uint64), codegen


@intrinsic
def trailing_zeros(typingctx, x):
    """The index of the lowest set bit of a nonzero ``uint64`` (LLVM's ``cttz``: one
    instruction), as ``int64``."""

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.int64(types.uint64), codegen


@inline
def mismatches(planes, a, j):
    """The number of features on which rows ``a`` and ``j`` of ``planes``
    (``(rows, words, bits)``, uint64) differ."""
    n_words, n_bits = planes.shape[1], planes.shape[2]
    acc = 0
    pa, pj = planes[a], planes[j]
    if n_bits == 2:  # genotypes 0/1/2: a loop the compiler unrolls and vectorises
        for w in range(n_words):
            acc += popcount((pa[w, 0] ^ pj[w, 0]) | (pa[w, 1] ^ pj[w, 1]))
        return acc
    if n_bits == 1:
        for w in range(n_words):
            acc += popcount(pa[w, 0] ^ pj[w, 0])
        return acc
    for w in range(n_words):
        diff = np.uint64(0)
        for b in range(n_bits):
            diff |= pa[w, b] ^ pj[w, b]
        acc += popcount(diff)
    return acc


def pack_planes(X, n_bits, block=512):
    """Bit planes ``(rows, ceil(A / 64), n_bits)`` of ``uint8`` rows ``X`` (see above),
    built ``block`` rows at a time (no copy of ``X`` wider than a byte)."""
    n, a = X.shape
    n_words = -(-a // 64)
    planes = np.zeros((n, n_words, n_bits), dtype=np.uint64)
    for r0 in range(0, n, block):
        chunk = X[r0 : r0 + block]
        for b in range(n_bits):
            bits = np.packbits((chunk >> b) & 1, axis=1, bitorder="little")
            padded = np.zeros((chunk.shape[0], n_words * 8), dtype=np.uint8)
            padded[:, : bits.shape[1]] = bits
            planes[r0 : r0 + block, :, b] = padded.view("<u8")
    return planes


# ---------------------------------------------------------------------------
# Branch-free form of MASKED and MISSING for the soft-neighbour kernels
# ---------------------------------------------------------------------------


@inline
def split_missing(X):
    """``(X0, P)``: the rows with NaN as 0 and the presence of each value (1.0 or 0.0).

    With them a pair's difference is ``z_f = c_f |a_f - b_f| + d_f [a_f != b_f]``
    (``c``, ``d``: the continuous and discrete masks as floats) counted
    ``p_f = P_af P_bf`` times: no branch in the loops over the features, which
    the compiler then vectorises.
    """
    n, a = X.shape
    X0 = np.empty(n * a).reshape((n, a))
    P = np.empty(n * a).reshape((n, a))
    for i in range(n):
        for f in range(a):
            v = X[i, f]
            if v != v:
                X0[i, f] = 0.0
                P[i, f] = 0.0
            else:
                X0[i, f] = v
                P[i, f] = 1.0
    return X0, P


@inline
def masked_distance(xa, pa, xb, pb, w, cm, dmk):
    """``(sum_f p_f w_f z_f, sum_f p_f)`` of two rows in :func:`split_missing`'s form."""
    acc = 0.0
    count = 0.0
    for f in range(xa.shape[0]):
        p = pa[f] * pb[f]
        d = xa[f] - xb[f]
        z = cm[f] * abs(d) + dmk[f] * (d != 0.0)
        acc += w[f] * z * p
        count += p
    return acc, count
