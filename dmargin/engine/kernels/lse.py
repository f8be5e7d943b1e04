"""Softmax tile kernels of the Relief family: (anchor block, candidate block) -> partials.

Pure numba kernels.  They take arrays and scalars only, never estimator
objects, and know nothing about dask: :mod:`dmargin.engine.execution` lays
them out over blocks.  Each kernel exists as serial and threaded twins
(:func:`dmargin.engine._numba.twins`).

Notation (Sun 2007, section 3): for anchor ``x_a`` and candidate
``x_j`` the difference vector is ``z_aj = |x_a - x_j|`` and the weighted
Manhattan distance ``d_aj = w^T z_aj``; the softmax logit is
``l_aj = -d_aj / sigma``.  Candidates carry class codes ``0..K-1`` and
global row indices; a candidate whose index equals the anchor's is the
anchor itself and is skipped (self is excluded by index, never by distance
zero).

Layout: a tile first sorts its candidates by class (stable, so row order is
kept within a class).  Every inner loop then runs over contiguous
candidates of one class, branch-free and vectorised over features, and
``z`` is recomputed rather than stored.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from .._numba import TileKernel, helper, inline
from .distance import MISSING, distances, masked_distance, split_missing

# Candidates per inner block: the distance and weight buffers stay in L1.
CAND_BLOCK = 256
#: Anchors that share each block of ``CAND_BLOCK`` candidates while it is in
#: cache: one anchor at a time would stream every candidate from memory once
#: per anchor, and two workers on one machine would share that bandwidth.
ANCHOR_GROUP = 64


@inline
def filled(shape, value):
    """``np.full(shape, value)`` (float64) from one 1-d ``np.empty``.

    Numba compiles each allocation function once per signature: every kind
    (``zeros``, ``full``, ``empty``) and every number of dimensions is another
    compilation on first use.  A flat buffer reshaped is one for all shapes.
    """
    n = 1
    for d in shape:
        n *= d
    out = np.empty(n)
    out[:] = value
    return out.reshape(shape)


@inline
def class_order(yc, n_classes):
    """Stable order of the candidates by class, and where each class starts.

    A counting sort: the same order as ``np.argsort(yc, kind="mergesort")``
    (row order kept within a class), without compiling numba's generic
    mergesort.  Class ``c`` occupies ``order[starts[c]:starts[c + 1]]``.
    """
    n_cand = yc.shape[0]
    starts = np.empty(n_classes + 1, dtype=np.int64)
    starts[:] = 0
    for j in range(n_cand):
        starts[yc[j] + 1] += 1
    for c in range(n_classes):
        starts[c + 1] += starts[c]
    nxt = starts[:n_classes].copy()
    order = np.empty(n_cand, dtype=np.int64)
    for j in range(n_cand):
        c = yc[j]
        order[nxt[c]] = j
        nxt[c] += 1
    return order, starts


@inline
def by_class(Xc, yc, ic, n_classes):
    """Candidates sorted by class (stable), as a contiguous copy.

    Returns the sorted rows ``Xs``, their global indices, and ``starts``
    (class ``c`` occupies rows ``starts[c]:starts[c + 1]``).
    """
    order, starts = class_order(yc, n_classes)
    n_cand, n_features = Xc.shape
    Xs = np.empty(n_cand * n_features).reshape((n_cand, n_features))
    ic_sorted = np.empty(n_cand, dtype=np.int64)
    for r in range(n_cand):
        j = order[r]
        ic_sorted[r] = ic[j]
        # Element by element: see _scale_row.
        for k in range(n_features):
            Xs[r, k] = Xc[j, k]
    return Xs, ic_sorted, starts


@inline
def _weighted_absdiff(xa, Xs, c0, c1, e, out):
    """``out[k] += sum_j e[j - c0] |xa_k - Xs[j, k]|`` for ``c0 <= j < c1``.

    Four candidates per sweep over ``out``: one load and store of ``out``
    serves four pair-features.
    """
    n_features = Xs.shape[1]
    j = c0
    while j + 4 <= c1:
        e0 = e[j - c0]
        e1 = e[j - c0 + 1]
        e2 = e[j - c0 + 2]
        e3 = e[j - c0 + 3]
        for k in range(n_features):
            x = xa[k]
            out[k] += (
                e0 * abs(x - Xs[j, k])
                + e1 * abs(x - Xs[j + 1, k])
                + e2 * abs(x - Xs[j + 2, k])
                + e3 * abs(x - Xs[j + 3, k])
            )
        j += 4
    while j < c1:
        ej = e[j - c0]
        for k in range(n_features):
            out[k] += ej * abs(xa[k] - Xs[j, k])
        j += 1


@inline
def _logits(xa, self_idx, Xs, ics, c0, c1, w, inv_sigma, buf):
    """Logits ``-d / sigma`` into ``buf``; the anchor itself gets ``-inf``.

    Returns the block maximum.
    """
    distances(xa, Xs, c0, c1, w, buf)
    n = c1 - c0
    best = -np.inf
    for j in range(n):
        buf[j] = -buf[j] * inv_sigma
        if ics[c0 + j] == self_idx:
            buf[j] = -np.inf
        best = max(best, buf[j])
    return best


@inline
def _scale_row(row, r):
    """``row *= r`` element by element.

    The same products as the array statement, which would compile numba's
    shape-mismatch error path (seconds of string formatting code) on first use.
    """
    for k in range(row.shape[0]):
        row[k] *= r


@inline
def _fold(m, s, v, c, best, buf, n):
    """Fold a block's logits ``buf[:n]`` (maximum ``best``) into class ``c``'s running
    ``(m, s)``; ``buf`` becomes ``exp(l - m[c])``, the block's softmax weights
    (the caller adds them into ``v[c]``).  A higher maximum first rescales
    what was summed so far."""
    if best > m[c]:
        if s[c] > 0.0:
            r = math.exp(m[c] - best)
            s[c] *= r
            # A loop, not ``v[c] *= r``: see _scale_row.
            _scale_row(v[c], r)
        m[c] = best
    tot = 0.0
    for j in range(n):
        buf[j] = math.exp(buf[j] - m[c])
        tot += buf[j]
    s[c] += tot


@inline
def _lse_block(xa, self_idx, Xs, ics, c, c0, c1, w, inv_sigma, m, s, v, buf):
    """Fold the candidates ``c0:c1`` (all of class ``c``) into one anchor's
    running ``(m, s, v)``."""
    best = _logits(xa, self_idx, Xs, ics, c0, c1, w, inv_sigma, buf)
    if best == -np.inf:
        return
    _fold(m, s, v, c, best, buf, c1 - c0)
    _weighted_absdiff(xa, Xs, c0, c1, buf, v[c])


@helper
def lse_anchor(xa, self_idx, Xs, ics, starts, w, inv_sigma, m, s, v, buf):
    """Fold the class-sorted candidates into one anchor's running ``(m, s, v)``.

    ``buf`` is scratch of length ``CAND_BLOCK``; ``starts`` and ``ics`` come
    from :func:`by_class`.  Compiled on its own with fast-math: its callers
    (the online kernels) are strict, and inlined it took their flags, its
    distance and ``exp`` loops unvectorised (the online pass took twice as
    long).
    """
    for c in range(starts.shape[0] - 1):
        for c0 in range(starts[c], starts[c + 1], CAND_BLOCK):
            c1 = min(c0 + CAND_BLOCK, starts[c + 1])
            _lse_block(xa, self_idx, Xs, ics, c, c0, c1, w, inv_sigma, m, s, v, buf)


def _lse_tile(Xa, ia, Xc, yc, ic, w, sigma, n_classes):
    """Per-anchor, per-class log-sum-exp partials ``(m, s, v)``.

    For anchor ``a`` and class ``c`` over the candidates ``j`` of class ``c``:

    .. math::
        m_{ac} = \\max_j l_{aj}, \\quad
        s_{ac} = \\sum_j e^{l_{aj} - m_{ac}}, \\quad
        v_{ac} = \\sum_j e^{l_{aj} - m_{ac}} z_{aj}

    Partials over disjoint candidate blocks merge exactly
    (:func:`dmargin.engine.merge.lse_combine`).  Empty classes keep
    ``m = -inf, s = 0, v = 0``.  Each anchor folds the candidates in the
    order :func:`lse_anchor` does (the same sums), a group of anchors at a
    time per block of candidates, while the block is in cache.
    """
    n_anchors, n_features = Xa.shape
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    m = filled((n_anchors, n_classes), -np.inf)
    s = filled((n_anchors, n_classes), 0.0)
    v = filled((n_anchors, n_classes, n_features), 0.0)
    inv_sigma = 1.0 / sigma
    for g in numba.prange((n_anchors + ANCHOR_GROUP - 1) // ANCHOR_GROUP):
        a0 = g * ANCHOR_GROUP
        a1 = min(a0 + ANCHOR_GROUP, n_anchors)
        buf = np.empty(CAND_BLOCK)
        for c in range(n_classes):
            for c0 in range(starts[c], starts[c + 1], CAND_BLOCK):
                c1 = min(c0 + CAND_BLOCK, starts[c + 1])
                for a in range(a0, a1):
                    _lse_block(
                        Xa[a], ia[a], Xs, ics, c, c0, c1, w, inv_sigma, m[a], s[a], v[a], buf
                    )
    return m, s, v


class SoftPartial(NamedTuple):
    """What the softmax tiles return per anchor and class, and what
    :func:`dmargin.engine.merge.lse_combine` merges (split-K softmax)."""

    #: The largest logit met, ``-inf`` for a class with no candidate.
    m: np.ndarray
    #: ``sum_j exp(l_j - m)``.
    s: np.ndarray
    #: ``sum_j exp(l_j - m) z_j`` (per feature), or IMMIGRATE's ``sum_j exp(l_j - m) q_j``.
    v: np.ndarray


#: The soft-neighbour tile: partials :class:`SoftPartial`.
KERNEL = TileKernel.compile(_lse_tile, partial=SoftPartial)
lse_tile = KERNEL.serial


# ---------------------------------------------------------------------------
# Discrete features and missing values (compiled only for data that have them)
# ---------------------------------------------------------------------------


@helper
def lse_anchor_general(
    xa, pa, self_idx, Xs, Ps, ics, starts, w, inv_sigma, cm, dmk, kind, m, s, v, buf
):
    """:func:`lse_anchor` for discrete features or missing values (:mod:`.distance`).

    Rows in :func:`~.distance.split_missing`'s form (``xa, pa``; ``Xs, Ps``);
    ``cm``, ``dmk``: the continuous and discrete masks as floats.  ``z_jf`` is
    0/1 for a discrete feature, ``|x_af - x_jf|`` otherwise (no ramp), and
    ``d_aj = sum_f w_f z_ajf``; with missing values (``MISSING``) the sum runs
    over the features present in both rows and is scaled by ``A / n_aj``
    (skrebate's mean over the features present, times ``A``: a complete pair
    keeps its distance), a pair with no feature in common is no candidate,
    and ``v[c]`` has ``2 A`` entries: ``v[c, :A]`` sums ``e_j z_jf`` over
    the candidates that have feature ``f``, ``v[c, A:]`` sums their ``e_j``
    (the per-feature normaliser).
    """
    n_features = Xs.shape[1]
    for c in range(starts.shape[0] - 1):
        for c0 in range(starts[c], starts[c + 1], CAND_BLOCK):
            c1 = min(c0 + CAND_BLOCK, starts[c + 1])
            n = c1 - c0
            best = -np.inf
            for j in range(n):
                acc, count = masked_distance(xa, pa, Xs[c0 + j], Ps[c0 + j], w, cm, dmk)
                if kind == MISSING:
                    lj = -(acc * n_features / count) * inv_sigma if count > 0.0 else -np.inf
                else:
                    lj = -acc * inv_sigma
                if ics[c0 + j] == self_idx:
                    lj = -np.inf
                buf[j] = lj
                best = max(best, lj)
            if best == -np.inf:
                continue
            _fold(m, s, v, c, best, buf, n)
            vc = v[c]
            for j in range(n):
                e = buf[j]
                if e == 0.0:
                    continue
                xj = Xs[c0 + j]
                pj = Ps[c0 + j]
                if kind == MISSING:
                    for f in range(n_features):
                        d = xa[f] - xj[f]
                        ep = e * pa[f] * pj[f]
                        vc[f] += ep * (cm[f] * abs(d) + dmk[f] * (d != 0.0))
                        vc[n_features + f] += ep
                else:
                    for f in range(n_features):
                        d = xa[f] - xj[f]
                        vc[f] += e * (cm[f] * abs(d) + dmk[f] * (d != 0.0))


@inline
def general_rows(Xc, yc, ic, n_classes, dm):
    """The candidates sorted by class in :func:`~.distance.split_missing`'s form, and
    the continuous and discrete masks as floats."""
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    Xs0, Ps = split_missing(Xs)
    cm = np.empty(dm.shape[0])
    dmk = np.empty(dm.shape[0])
    for f in range(dm.shape[0]):
        dmk[f] = 1.0 if dm[f] else 0.0
        cm[f] = 1.0 - dmk[f]
    return Xs0, Ps, ics, starts, cm, dmk


def _lse_tile_general(Xa, ia, Xc, yc, ic, w, sigma, n_classes, dm, kind):
    """:func:`_lse_tile` for discrete features or missing values
    (:func:`lse_anchor_general`; ``v`` is ``(anchors, classes, 2 A)`` with
    missing values)."""
    n_anchors, n_features = Xa.shape
    Xs0, Ps, ics, starts, cm, dmk = general_rows(Xc, yc, ic, n_classes, dm)
    Xa0, Pa = split_missing(Xa)
    width = 2 * n_features if kind == MISSING else n_features
    m = filled((n_anchors, n_classes), -np.inf)
    s = filled((n_anchors, n_classes), 0.0)
    v = filled((n_anchors, n_classes, width), 0.0)
    inv_sigma = 1.0 / sigma
    for a in numba.prange(n_anchors):
        buf = np.empty(CAND_BLOCK)
        lse_anchor_general(
            Xa0[a],
            Pa[a],
            ia[a],
            Xs0,
            Ps,
            ics,
            starts,
            w,
            inv_sigma,
            cm,
            dmk,
            kind,
            m[a],
            s[a],
            v[a],
            buf,
        )
    return m, s, v


#: Compiled on first use by data with discrete features or missing values.
GENERAL_KERNEL = TileKernel.compile(_lse_tile_general, cost=2.0, partial=SoftPartial)
