"""Quadratic distances ``q = z^T W z`` of IMMIGRATE over pairs of row sets.

The kernels are GEMM-bound and work on pairs of row sets; see the notes below.
"""

import math

import numpy as np

from .._numba import EXP_FLOOR, TileKernel, helper
from .lse import SoftPartial, by_class, class_order
from .modes import CROSS, ORDERED, WITHIN

# W = U diag(lam) U^T.  The kernels are GEMM-bound.  Both row sets are sorted
# by class and cut into segments of rows of one class; a pair of segments is a
# block of pairs whose difference rows Z (pairs x features, about _BLOCK_BYTES) stay in
# the L2 cache for the two products of the block, Z @ U (distances) and
# Z^T (w * Z) (Sigma), made by BLAS from inside the kernel: OpenBLAS runs
# these thin products fastest on such small, cache-resident operands.
#
# ``z`` and ``q`` are symmetric in the pair, so a pair of row sets is visited
# once for both directions: the *pair modes* below.  Every block's rows are
# enumerated by _block_rows, so pass 1 and pass 2 see the pairs in the same
# order and pass 2 can read back the distances pass 1 stored.
#
# A factor with no columns (``U.shape[1] == 0``) means W = diag(lam): the
# first IMMIGRATE step (W = I / sqrt(A)) and a pruned diagonal W need no
# product for q.  An empty ``lam`` means ``U`` is W itself (A x A): wide data,
# where an eigendecomposition of W would cost more than the rank it saves.

#: Largest segment (rows); buffers are sized for SEG**2 pairs.
SEG = 32
#: Bytes of one block's difference rows Z.
_BLOCK_BYTES = 2**16
# A row whose normaliser lies more than this below the block's largest logit
# takes its own exponentials: e^(l - M) e^(M - m) could overflow.  Below it,
# a term the shared exponential drops is under e^-100 of the row's largest.
_SAFE_SHIFT = 600.0


@helper
def _segment_rows(n_features):
    """Rows per segment, so that a block's Z is about :data:`_BLOCK_BYTES` --
    but a block has at least ``A`` pairs on wide data, where each block's
    product adds an A x A matrix to Sigma."""
    rows = max(math.sqrt(_BLOCK_BYTES / (8.0 * n_features)), math.sqrt(n_features))
    return max(8, min(SEG, int(rows)))


def n_pairs(n_p, n_q, mode):
    """Pairs a pair-mode kernel visits (the length of its distance store)."""
    return n_p * (n_p - 1) // 2 if mode == WITHIN else n_p * n_q


@helper
def _segments(starts, seg):
    """``(row0, row1, class)`` of runs of at most ``seg`` rows of one class."""
    count = 0
    for c in range(starts.shape[0] - 1):
        count += (starts[c + 1] - starts[c] + seg - 1) // seg
    out = np.empty((count, 3), dtype=np.int64)
    r = 0
    for c in range(starts.shape[0] - 1):
        for r0 in range(starts[c], starts[c + 1], seg):
            out[r, 0], out[r, 1], out[r, 2] = r0, min(r0 + seg, starts[c + 1]), c
            r += 1
    return out


@helper
def _block_rows(Xp, r0, r1, Xq, t0, t1, upper, Z):
    """``Z`` rows ``|x_i - x_j|`` for ``i in r0:r1``, ``j in t0:t1`` (``j > i`` if
    ``upper``), i-major; returns the row count."""
    n = 0
    for i in range(r0, r1):
        for j in range(max(t0, i + 1) if upper else t0, t1):
            for k in range(Xp.shape[1]):
                Z[n, k] = abs(Xp[i, k] - Xq[j, k])
            n += 1
    return n


@helper
def _block_rows_scaled(Xp, r0, r1, Xq, t0, t1, upper, scale, Y):
    """As :func:`_block_rows`, row ``p`` multiplied by ``scale[p]``."""
    n = 0
    for i in range(r0, r1):
        for j in range(max(t0, i + 1) if upper else t0, t1):
            for k in range(Xp.shape[1]):
                Y[n, k] = scale[n] * abs(Xp[i, k] - Xq[j, k])
            n += 1
    return n


@helper
def _block_distances(Z, n, U, lam, q):
    """``q[p] = z_p^T W z_p = sum_i lam_i (u_i^T z_p)^2`` for the block's ``n`` rows."""
    if U.shape[1] == 0:
        for p in range(n):
            acc = 0.0
            for k in range(Z.shape[1]):
                acc += lam[k] * Z[p, k] * Z[p, k]
            q[p] = acc
        return
    G = np.dot(Z[:n], U)
    if lam.shape[0] == 0:  # U is W itself
        for p in range(n):
            acc = 0.0
            for k in range(Z.shape[1]):
                acc += Z[p, k] * G[p, k]
            q[p] = acc
        return
    for p in range(n):
        acc = 0.0
        for i in range(lam.shape[0]):
            acc += lam[i] * G[p, i] * G[p, i]
        q[p] = acc


@helper
def _rescale(m, s, u, a, c, best):
    if best > m[a, c]:
        r = math.exp(m[a, c] - best)
        s[a, c] *= r
        u[a, c] *= r
        m[a, c] = best


@helper
def _shift_factor(shift):
    """``e^shift`` for a row whose terms are ``e^(l - M) e^shift``; ``-1`` when
    ``shift`` is too large for the product to be safe (the row then takes
    its own exponentials)."""
    if shift > _SAFE_SHIFT:
        return -1.0
    return math.exp(shift) if shift > EXP_FLOOR else 0.0


@helper
def _term(e, factor, lg, shift_to):
    """``e^(lg - shift_to)`` from the block's ``e = e^(lg - M)`` and the row's factor."""
    if factor >= 0.0:
        return e * factor
    x = lg - shift_to
    return math.exp(x) if x > EXP_FLOOR else 0.0


@helper
def _fold_block(q, r0, r1, t0, t1, upper, both, keep, op, oq, cs, ct, inv_sigma, Pp, Pq, col):
    """Fold a block's distances into the softmax partials of its anchors
    (``Pp``, ``Pq``: the two row sets' :class:`SoftPartial` arrays ``(m, s, u)``).

    Row ``i`` (class ``cs``) gains the pair with ``j`` in its partial for class
    ``ct``; with ``both``, ``j`` gains it in its partial for class ``cs``.
    ``keep[p]`` is False for a pair of a row with itself.  Maxima first; then
    one exponential per pair against the block's maximum ``M``, scaled per
    row by ``e^(M - m_i)`` (:func:`_shift_factor`).
    """
    nt = t1 - t0
    mp, sp, up = Pp.m, Pp.s, Pp.v
    mq, sq, uq = Pq.m, Pq.s, Pq.v
    col_max, col_s, col_u, col_f = col[0], col[1], col[2], col[3]
    col_max[:nt] = -np.inf
    top = -np.inf
    p = 0
    for i in range(r0, r1):
        best = -np.inf
        for j in range(max(t0, i + 1) if upper else t0, t1):
            if keep[p]:
                lg = -q[p] * inv_sigma
                best = max(best, lg)
                col_max[j - t0] = max(col_max[j - t0], lg)
            p += 1
        if best > -np.inf:
            _rescale(mp, sp, up, op[i], ct, best)
            top = max(top, best)
    if top == -np.inf:
        return
    col_s[:nt] = 0.0
    col_u[:nt] = 0.0
    if both:
        for j in range(t0, t1):
            if col_max[j - t0] > -np.inf:
                _rescale(mq, sq, uq, oq[j], cs, col_max[j - t0])
            col_f[j - t0] = _shift_factor(top - mq[oq[j], cs])
    p = 0
    for i in range(r0, r1):
        shift = mp[op[i], ct]
        factor = _shift_factor(top - shift)
        acc_s = 0.0
        acc_u = 0.0
        for j in range(max(t0, i + 1) if upper else t0, t1):
            if keep[p]:
                lg = -q[p] * inv_sigma
                x = lg - top
                e = math.exp(x) if x > EXP_FLOOR else 0.0
                t = _term(e, factor, lg, shift)
                acc_s += t
                acc_u += t * q[p]
                if both:
                    t = _term(e, col_f[j - t0], lg, mq[oq[j], cs])
                    col_s[j - t0] += t
                    col_u[j - t0] += t * q[p]
            p += 1
        sp[op[i], ct] += acc_s
        up[op[i], ct] += acc_u
    if both:
        for j in range(t0, t1):
            sq[oq[j], cs] += col_s[j - t0]
            uq[oq[j], cs] += col_u[j - t0]


@helper
def _block_keep(ip, r0, r1, iq, t0, t1, upper, keep):
    p = 0
    for i in range(r0, r1):
        for j in range(max(t0, i + 1) if upper else t0, t1):
            keep[p] = ip[i] != iq[j]
            p += 1


@helper
def _sorted_pair(Xp, ip, yp, Xq, iq, yq, n_classes, mode):
    """Both row sets sorted by class: rows, global indices, positions, segments."""
    seg = _segment_rows(Xp.shape[1])
    Xps, ips, sp = by_class(Xp, yp, ip, n_classes)
    op = class_order(yp, n_classes)[0]  # by_class's order
    if mode == WITHIN:
        return Xps, ips, op, _segments(sp, seg), Xps, ips, op, _segments(sp, seg)
    Xqs, iqs, sq = by_class(Xq, yq, iq, n_classes)
    oq = class_order(yq, n_classes)[0]
    return Xps, ips, op, _segments(sp, seg), Xqs, iqs, oq, _segments(sq, seg)


@helper
def _blocks(seg_p, seg_q, mode):
    """Segment pairs ``(a, b)`` a pair mode visits, in the order both passes use."""
    out = []
    for a in range(seg_p.shape[0]):
        for b in range(a if mode == WITHIN else 0, seg_q.shape[0]):
            out.append((a, b))
    return out


@helper
def qlse_pairs(Xp, ip, yp, Xq, iq, yq, U, lam, sigma, n_classes, mode, store):
    """Pass 1 of IMMIGRATE over a pair of row sets: quadratic softmax partials.

    Returns ``(m, s, u)`` per row of ``P`` and per row of ``Q`` and class: as
    :func:`_lse_tile` with logits ``l = -q / sigma`` and, instead of the
    vector ``v``, the scalar ``u_ac = sum_j e^{l_aj - m_ac} q_aj`` (expected
    distance, entropy and cost all follow from it); merged by
    :func:`dmargin.engine.merge.lse_combine`.  In ``WITHIN`` mode the ``Q``
    partials are the ``P`` partials (one set of arrays); in ``ORDERED`` mode
    they are empty.  A nonempty ``store`` (length :func:`n_pairs`) receives
    every distance for :func:`sigma_pairs`.
    """
    n_features = Xp.shape[1]
    Xps, ips, op, seg_p, Xqs, iqs, oq, seg_q = _sorted_pair(Xp, ip, yp, Xq, iq, yq, n_classes, mode)
    mp = np.full((Xp.shape[0], n_classes), -np.inf)
    sp = np.zeros((Xp.shape[0], n_classes))
    up = np.zeros((Xp.shape[0], n_classes))
    if mode == WITHIN:
        mq, sq, uq = mp, sp, up
    else:
        n_q = Xq.shape[0] if mode == CROSS else 0
        mq = np.full((n_q, n_classes), -np.inf)
        sq = np.zeros((n_q, n_classes))
        uq = np.zeros((n_q, n_classes))
    Z = np.empty((SEG * SEG, n_features))
    q = np.empty(SEG * SEG)
    keep = np.ones(SEG * SEG, dtype=np.bool_)
    col = np.empty((4, SEG))
    inv_sigma = 1.0 / sigma
    Pp, Pq = SoftPartial(mp, sp, up), SoftPartial(mq, sq, uq)
    offset = 0
    for a, b in _blocks(seg_p, seg_q, mode):
        r0, r1, cs = seg_p[a]
        t0, t1, ct = seg_q[b]
        upper = mode == WITHIN and a == b
        n = _block_rows(Xps, r0, r1, Xqs, t0, t1, upper, Z)
        _block_distances(Z, n, U, lam, q)
        if store.shape[0] > 0:
            store[offset : offset + n] = q[:n]
        offset += n
        if mode == ORDERED:
            _block_keep(ips, r0, r1, iqs, t0, t1, upper, keep)
        _fold_block(
            q,
            r0,
            r1,
            t0,
            t1,
            upper,
            mode != ORDERED,
            keep,
            op,
            oq,
            cs,
            ct,
            inv_sigma,
            Pp,
            Pq,
            col,
        )
    return mp, sp, up, mq, sq, uq


@helper
def sigma_pairs(Xp, ip, yp, Xq, iq, yq, U, lam, sigma, log_zp, coef_p, log_zq, coef_q, mode, store):
    """Pass 2 of IMMIGRATE over a pair of row sets: the coefficient sum of outer products.

    .. math::
        \\Sigma = \\sum_a \\sum_j \\mathrm{coef}_{a, y_j}
                 e^{-q_{aj}/\\sigma - \\log Z_{a, y_j}} z_{aj} z_{aj}^T

    (Zhao, Hong & Liu 2020, section 3.4.2) over the pairs of the mode, both
    anchors of a pair adding their weight to one row (``CROSS``,
    ``WITHIN``); one product ``Z^T (w * Z)`` per block, summed in block order.
    A nonempty ``store`` holds the distances :func:`qlse_pairs` wrote.
    """
    n_features = Xp.shape[1]
    Xps, ips, op, seg_p, Xqs, iqs, oq, seg_q = _sorted_pair(
        Xp, ip, yp, Xq, iq, yq, coef_p.shape[1], mode
    )
    out = np.zeros((n_features, n_features))
    Z = np.empty((SEG * SEG, n_features))
    wZ = np.empty((SEG * SEG, n_features))
    q = np.empty(SEG * SEG)
    wq = np.empty(SEG * SEG)
    col_f = np.empty(SEG)
    inv_sigma = 1.0 / sigma
    both = mode != ORDERED
    offset = 0
    for a, b in _blocks(seg_p, seg_q, mode):
        r0, r1, cs = seg_p[a]
        t0, t1, ct = seg_q[b]
        upper = mode == WITHIN and a == b
        n = (r1 - r0) * (t1 - t0) if not upper else (r1 - r0) * (r1 - r0 - 1) // 2
        offset += n
        active = False
        for i in range(r0, r1):
            active = active or coef_p[op[i], ct] != 0.0
        if both:
            for j in range(t0, t1):
                active = active or coef_q[oq[j], cs] != 0.0
        if not active:
            continue
        stored = store.shape[0] > 0
        if stored:
            q[:n] = store[offset - n : offset]
        else:
            _block_rows(Xps, r0, r1, Xqs, t0, t1, upper, Z)
            _block_distances(Z, n, U, lam, q)
        top = -np.inf
        for p in range(n):
            top = max(top, -q[p] * inv_sigma)
        for j in range(t0, t1):
            cj = coef_q[oq[j], cs] if both else 0.0
            col_f[j - t0] = _shift_factor(top - log_zq[oq[j], cs]) if cj != 0.0 else 0.0
        p = 0
        n_pos = 0
        n_neg = 0
        for i in range(r0, r1):
            ci, li = coef_p[op[i], ct], log_zp[op[i], ct]
            fi = _shift_factor(top - li) if ci != 0.0 else 0.0
            for j in range(max(t0, i + 1) if upper else t0, t1):
                lg = -q[p] * inv_sigma
                x = lg - top
                e = math.exp(x) if x > EXP_FLOOR else 0.0
                w = 0.0
                if ci != 0.0 and ips[i] != iqs[j]:
                    w = ci * _term(e, fi, lg, li)
                if both and col_f[j - t0] != 0.0:
                    w += coef_q[oq[j], cs] * _term(e, col_f[j - t0], lg, log_zq[oq[j], cs])
                wq[p] = w
                n_pos += w > 0.0
                n_neg += w < 0.0
                p += 1
        if n_pos > 0 and n_neg > 0:
            # Mixed signs (not IMMIGRATE's: a block is all hits or all misses).
            if stored:
                _block_rows(Xps, r0, r1, Xqs, t0, t1, upper, Z)
            for p in range(n):
                for k in range(n_features):
                    wZ[p, k] = wq[p] * Z[p, k]
            out += np.dot(Z[:n].T, wZ[:n])
            continue
        # One sign: the block adds sign * Y^T Y with Y = sqrt|w| * Z, built
        # straight from the rows when the distances were stored.
        for p in range(n):
            wq[p] = math.sqrt(abs(wq[p]))
        if stored:
            _block_rows_scaled(Xps, r0, r1, Xqs, t0, t1, upper, wq, wZ)
        else:
            for p in range(n):
                for k in range(n_features):
                    wZ[p, k] = wq[p] * Z[p, k]
        if n_neg > 0:
            out -= np.dot(wZ[:n].T, wZ[:n])
        elif n_pos > 0:
            out += np.dot(wZ[:n].T, wZ[:n])
    return out


def qlse_tile(Xa, ia, Xc, yc, ic, U, lam, sigma, n_classes):
    """Quadratic softmax partials ``(m, s, u)`` of new anchors against candidates
    (the ``ORDERED`` mode of :func:`qlse_pairs`)."""
    ya = np.zeros(Xa.shape[0], dtype=np.int64)
    m, s, u = qlse_pairs(Xa, ia, ya, Xc, ic, yc, U, lam, sigma, n_classes, ORDERED, np.empty(0))[:3]
    return m, s, u


#: Serial only: BLAS-bound, threaded by the caller over pairs of row sets; its
#: cost counts flops (BLAS: fast per flop).
KERNEL = TileKernel(qlse_tile, qlse_tile, cost=0.05, blas=True, partial=SoftPartial)


def pair_side(partials, side) -> SoftPartial:
    """The ``(m, s, u)`` partials of the first (0) or second (1) row set of a pair
    (:func:`qlse_pairs`' six arrays)."""
    return SoftPartial(*partials[3 * side : 3 * side + 3])
