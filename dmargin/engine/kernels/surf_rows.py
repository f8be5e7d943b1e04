"""A row's neighbours in the SURF family's pass 2: placed exactly, and their differences summed.

:func:`add_rows` adds the scoring differences of one row to a list of
neighbours (every neighbour weighing 1), :func:`add_rows_soft` with a weight
per neighbour (the SWRF family); :mod:`.surf` finds the neighbours and calls
them once per row, neighbour set and class of a sub-tile.  Where it finds
them by float32 distances, :func:`recheck` places those within
:func:`threshold_band` of a threshold by their float64 distance.
"""

import numpy as np

from .._numba import inline
from .distance import (
    MISSING,
    PLAIN,
    feature_diff,
    float32_band,
    float32_error_bound,
    plain_distance,
)


@inline
def add_rows(x, Xo, rows, m, dm, ramp, kind, out, squares):
    """``out[:A] += sum_r diff(x, Xo[rows[r]])`` over ``r < m`` (scoring differences,
    ramped, in float64 whatever the rows' float type), ``out[A] += m``; ``MISSING``: a difference with a missing side is
    left out, and ``out[A + f]`` counts the rows scored on feature ``f``.
    ``squares``: the squared differences are summed after those, from
    ``out[partial_width(A, kind, False)]`` (:func:`.surf.partial_width`) on (STIR's variances).

    Eight rows per sweep over ``out`` (four with ``squares``): one load and
    store of ``out`` serves eight pair-features, and the eight differences
    are summed as a tree, not a chain.
    """
    n_features = x.shape[0]
    sq = 2 * n_features if kind == MISSING else n_features + 1
    r = 0
    if kind == PLAIN:
        while not squares and r + 8 <= m:
            j0, j1, j2, j3 = rows[r], rows[r + 1], rows[r + 2], rows[r + 3]
            j4, j5, j6, j7 = rows[r + 4], rows[r + 5], rows[r + 6], rows[r + 7]
            for f in range(n_features):
                v = float(x[f])
                out[f] += (
                    (abs(v - Xo[j0, f]) + abs(v - Xo[j1, f]))
                    + (abs(v - Xo[j2, f]) + abs(v - Xo[j3, f]))
                ) + (
                    (abs(v - Xo[j4, f]) + abs(v - Xo[j5, f]))
                    + (abs(v - Xo[j6, f]) + abs(v - Xo[j7, f]))
                )
            r += 8
        while r + 4 <= m:
            j0, j1, j2, j3 = rows[r], rows[r + 1], rows[r + 2], rows[r + 3]
            if squares:
                for f in range(n_features):
                    v = float(x[f])
                    z0, z1 = abs(v - Xo[j0, f]), abs(v - Xo[j1, f])
                    z2, z3 = abs(v - Xo[j2, f]), abs(v - Xo[j3, f])
                    out[f] += z0 + z1 + z2 + z3
                    out[sq + f] += z0 * z0 + z1 * z1 + z2 * z2 + z3 * z3
            else:
                for f in range(n_features):
                    v = float(x[f])
                    out[f] += (
                        abs(v - Xo[j0, f])
                        + abs(v - Xo[j1, f])
                        + abs(v - Xo[j2, f])
                        + abs(v - Xo[j3, f])
                    )
            r += 4
        while r < m:
            j0 = rows[r]
            for f in range(n_features):
                z = abs(float(x[f]) - Xo[j0, f])
                out[f] += z
                if squares:
                    out[sq + f] += z * z
            r += 1
    elif kind == MISSING:
        while r < m:
            j0 = rows[r]
            for f in range(n_features):
                z = feature_diff(float(x[f]), float(Xo[j0, f]), dm[f], ramp[f])
                if z == z:
                    out[f] += z
                    out[n_features + f] += 1.0
                    if squares:
                        out[sq + f] += z * z
            r += 1
        return
    else:
        while r < m:
            j0 = rows[r]
            for f in range(n_features):
                z = feature_diff(float(x[f]), float(Xo[j0, f]), dm[f], ramp[f])
                out[f] += z
                if squares:
                    out[sq + f] += z * z
            r += 1
    out[n_features] += m


@inline
def add_rows_soft(x, Xo, rows, wts, m, dm, ramp, kind, out):
    """:func:`add_rows` with a weight ``wts[r]`` per row (the SWRF family):
    ``out[:A] += sum_r w_r diff(x, Xo[rows[r]])``, then the (unweighted)
    neighbour count ``out[A]`` and the weight sum ``out[A + 1]``; ``MISSING``:
    per feature, of the rows scored on it, in ``out[A:2A]`` and ``out[2A:3A]``."""
    n_features = x.shape[0]
    r = 0
    if kind == PLAIN:  # four rows per sweep over ``out``, as :func:`add_rows`
        while r + 4 <= m:
            j0, j1, j2, j3 = rows[r], rows[r + 1], rows[r + 2], rows[r + 3]
            w0, w1, w2, w3 = wts[r], wts[r + 1], wts[r + 2], wts[r + 3]
            for f in range(n_features):
                v = float(x[f])
                out[f] += (
                    w0 * abs(v - Xo[j0, f])
                    + w1 * abs(v - Xo[j1, f])
                    + w2 * abs(v - Xo[j2, f])
                    + w3 * abs(v - Xo[j3, f])
                )
            out[n_features + 1] += w0 + w1 + w2 + w3
            r += 4
    while r < m:
        j0 = rows[r]
        w = wts[r]
        r += 1
        if kind == MISSING:
            for f in range(n_features):
                z = feature_diff(float(x[f]), float(Xo[j0, f]), dm[f], ramp[f])
                if z == z:
                    out[f] += w * z
                    out[n_features + f] += 1.0
                    out[2 * n_features + f] += w
        else:
            for f in range(n_features):
                out[f] += w * feature_diff(float(x[f]), float(Xo[j0, f]), dm[f], ramp[f])
            out[n_features + 1] += w
    if kind != MISSING:
        out[n_features] += m


@inline
def recheck(x, Xo, o0, drow, rows, m, s, thr, eps):
    """Of the candidates ``rows[:m]``, found by float32 distances within ``eps`` of
    their float64 ones, keep those in set ``s`` of threshold ``thr``: where the
    float32 value is within ``eps`` of ``thr``, the float64 distance
    (:func:`.distance.plain_distance`, bit for bit pass 1's) decides.  Returns
    the new count; the order is kept."""
    lo, hi = thr - eps, thr + eps
    k = 0
    for r in range(m):
        t = rows[r]
        d = drow[t]
        inside = True
        if d >= lo and d <= hi:
            e = plain_distance(x, Xo[o0 + t])
            inside = e < thr if s == 0 else e > thr
        rows[k] = t
        k += inside
    return k


@inline
def value_scale(Xp, Xq):
    """The largest magnitude of a value of two row sets, ``inf`` beyond what float32
    holds (their distances stay float64)."""
    scale = 0.0
    for X in (Xp, Xq):
        for i in range(X.shape[0]):
            for f in range(X.shape[1]):
                scale = max(scale, abs(X[i, f]))
    return scale if scale < 1e30 else np.inf


@inline
def threshold_band(scale, n_features, thr):
    """How far a float32 distance (of rows of values at most ``scale``) may be from
    the float64 one, for the candidates that threshold ``thr`` could place
    wrongly: :func:`.distance.float32_band` of the distances up to ``|thr| + 1``.
    A candidate farther from ``thr`` is farther than the band in float32 too
    while the band is under ``1/2``; a wider one (huge rows, an infinite
    threshold) is the bound for every distance
    (:func:`.distance.float32_error_bound`)."""
    band = float32_band(scale, n_features, abs(thr) + 1.0)
    return band if band < 0.25 else float32_error_bound(scale, n_features)
