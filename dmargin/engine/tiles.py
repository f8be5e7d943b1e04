"""Tile kernels: (anchor block, candidate block) -> small partials.

Pure numba kernels.  They take arrays and scalars only, never estimator
objects, and know nothing about dask: :mod:`dmargin.engine.execution` lays
them out over blocks.  Every tile kernel exists twice, compiled from one
source: ``parallel=True`` (threads over anchors, used in-process on large
work) and serial (inside dask tasks, where dask already runs one task per
core).

Notation (``ALGORITHMS.md`` section 1): for anchor ``x_a`` and candidate
``x_j`` the difference vector is ``z_aj = |x_a - x_j|`` and the weighted
Manhattan distance ``d_aj = w^T z_aj``; the softmax logit is
``l_aj = -d_aj / sigma``.  Candidates carry class codes ``0..K-1`` and
global row indices; a candidate whose index equals the anchor's is the
anchor itself and is skipped (self is excluded by index, never by distance
zero).

Layout: a tile first sorts its candidates by class (stable, so row order is
kept within a class).  Every inner loop then runs over contiguous
candidates of one class, branch-free and vectorised over features, and
``z`` is recomputed rather than stored.  The quadratic (IMMIGRATE) kernels
at the end of the module are GEMM-bound and work on pairs of row sets
instead; see the notes there.
"""

import math
import types

import numba
import numpy as np

# Reassociation lets LLVM vectorise the candidate loops; no 'nnan'/'ninf':
# -inf is a legitimate running maximum and a masked logit here.
_FASTMATH = {"reassoc", "contract", "arcp"}
# Candidates per inner block: the distance and weight buffers stay in L1.
_CAND_BLOCK = 256
# exp(x) for x below this is under 1e-304: such a probability cannot change a
# double-precision sum whose largest term is 1, and as a subnormal it would
# slow every later multiplication by two orders of magnitude.  Set to 0.
_EXP_FLOOR = -700.0


def _jit(fn):
    """Compile ``fn`` twice: (serial, parallel).

    The parallel twin is a renamed copy of the function: numba's on-disk
    cache is keyed by qualified name, and both must not share one entry.
    """
    serial = numba.njit(fastmath=_FASTMATH, cache=True, nogil=True)(fn)
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_parallel",
                              fn.__defaults__, fn.__closure__)
    twin.__qualname__ = fn.__qualname__ + "_parallel"
    twin.__doc__ = fn.__doc__
    parallel = numba.njit(fastmath=_FASTMATH, cache=True, parallel=True)(twin)
    return serial, parallel


_helper = numba.njit(fastmath=_FASTMATH, cache=True, nogil=True)
# Helpers of the Relief kernels are inlined into their callers as numba IR:
# compiled on their own, each would be optimised and turned into machine code
# once by itself and again in every caller that links it, most of a first
# fit's compilation time.  Inlined code takes its caller's flags, so only
# helpers whose callers all use _FASTMATH, or that do no floating-point
# arithmetic, are inlined (lse_anchor, called by the online kernel, is not;
# inlined into _lse_tile as well, it made that compilation slower than both).
_inline = numba.njit(fastmath=_FASTMATH, cache=True, nogil=True, inline="always")


@_inline
def _filled(shape, value):
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


@_inline
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


@_inline
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


@_inline
def _distances(xa, Xs, c0, c1, w, d):
    """``d[j - c0] = sum_k w_k |xa_k - Xs[j, k]|`` for ``c0 <= j < c1``.

    .. math:: d_{aj} = \\sum_k w_k |x_{ak} - x_{jk}|
    """
    n_features = Xs.shape[1]
    for j in range(c0, c1):
        acc = 0.0
        for k in range(n_features):
            acc += w[k] * abs(xa[k] - Xs[j, k])
        d[j - c0] = acc


@_inline
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
            out[k] += (e0 * abs(x - Xs[j, k]) + e1 * abs(x - Xs[j + 1, k])
                       + e2 * abs(x - Xs[j + 2, k]) + e3 * abs(x - Xs[j + 3, k]))
        j += 4
    while j < c1:
        ej = e[j - c0]
        for k in range(n_features):
            out[k] += ej * abs(xa[k] - Xs[j, k])
        j += 1


@_inline
def _logits(xa, self_idx, Xs, ics, c0, c1, w, inv_sigma, buf):
    """Logits ``-d / sigma`` into ``buf``; the anchor itself gets ``-inf``.

    Returns the block maximum.
    """
    _distances(xa, Xs, c0, c1, w, buf)
    n = c1 - c0
    best = -np.inf
    for j in range(n):
        buf[j] = -buf[j] * inv_sigma
        if ics[c0 + j] == self_idx:
            buf[j] = -np.inf
        best = max(best, buf[j])
    return best


@_inline
def _scale_row(row, r):
    """``row *= r`` element by element.

    The same products as the array statement, which would compile numba's
    shape-mismatch error path (seconds of string formatting code) on first use.
    """
    for k in range(row.shape[0]):
        row[k] *= r


@_helper
def lse_anchor(xa, self_idx, Xs, ics, starts, w, inv_sigma, m, s, v, buf):
    """Fold the class-sorted candidates into one anchor's running ``(m, s, v)``.

    ``buf`` is scratch of length ``_CAND_BLOCK``; ``starts`` and ``ics`` come
    from :func:`by_class`.
    """
    for c in range(starts.shape[0] - 1):
        for c0 in range(starts[c], starts[c + 1], _CAND_BLOCK):
            c1 = min(c0 + _CAND_BLOCK, starts[c + 1])
            best = _logits(xa, self_idx, Xs, ics, c0, c1, w, inv_sigma, buf)
            if best == -np.inf:
                continue
            if best > m[c]:
                # Raise the running maximum, rescaling what was summed so far.
                if s[c] > 0.0:
                    r = math.exp(m[c] - best)
                    s[c] *= r
                    # A loop, not ``v[c] *= r``: see _scale_row.
                    _scale_row(v[c], r)
                m[c] = best
            n = c1 - c0
            tot = 0.0
            for j in range(n):
                buf[j] = math.exp(buf[j] - m[c])
                tot += buf[j]
            s[c] += tot
            _weighted_absdiff(xa, Xs, c0, c1, buf, v[c])


@_inline
def logz_anchor(xa, self_idx, Xs, ics, starts, w, inv_sigma, m, s, buf):
    """As :func:`lse_anchor` without ``v``: the per-class log-normalisers."""
    for c in range(starts.shape[0] - 1):
        for c0 in range(starts[c], starts[c + 1], _CAND_BLOCK):
            c1 = min(c0 + _CAND_BLOCK, starts[c + 1])
            best = _logits(xa, self_idx, Xs, ics, c0, c1, w, inv_sigma, buf)
            if best == -np.inf:
                continue
            if best > m[c]:
                s[c] *= math.exp(m[c] - best)
                m[c] = best
            tot = 0.0
            for j in range(c1 - c0):
                tot += math.exp(buf[j] - m[c])
            s[c] += tot


def _lse_tile(Xa, ia, Xc, yc, ic, w, sigma, n_classes):
    """Per-anchor, per-class log-sum-exp partials ``(m, s, v)``.

    For anchor ``a`` and class ``c`` over the candidates ``j`` of class ``c``:

    .. math::
        m_{ac} = \\max_j l_{aj}, \\quad
        s_{ac} = \\sum_j e^{l_{aj} - m_{ac}}, \\quad
        v_{ac} = \\sum_j e^{l_{aj} - m_{ac}} z_{aj}

    Partials over disjoint candidate blocks merge exactly
    (:func:`dmargin.engine.merge.lse_combine`).  Empty classes keep
    ``m = -inf, s = 0, v = 0``.
    """
    n_anchors, n_features = Xa.shape
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    m = _filled((n_anchors, n_classes), -np.inf)
    s = _filled((n_anchors, n_classes), 0.0)
    v = _filled((n_anchors, n_classes, n_features), 0.0)
    inv_sigma = 1.0 / sigma
    for a in numba.prange(n_anchors):
        buf = np.empty(_CAND_BLOCK)
        lse_anchor(Xa[a], ia[a], Xs, ics, starts, w, inv_sigma, m[a], s[a], v[a], buf)
    return m, s, v


def _logz_tile(Xa, ia, Xc, yc, ic, w, sigma, n_classes):
    """Pass 1 of the two-pass mode: ``(m, s)`` of :func:`_lse_tile` only."""
    n_anchors = Xa.shape[0]
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    m = _filled((n_anchors, n_classes), -np.inf)
    s = _filled((n_anchors, n_classes), 0.0)
    inv_sigma = 1.0 / sigma
    for a in numba.prange(n_anchors):
        buf = np.empty(_CAND_BLOCK)
        logz_anchor(Xa[a], ia[a], Xs, ics, starts, w, inv_sigma, m[a], s[a], buf)
    return m, s


def _pair_sum_tile(Xa, ia, Xc, yc, ic, w, sigma, log_z, coef):
    """Pass 2 of the two-pass mode: the pair-coefficient sum.

    With the per-anchor log-normalisers ``log_z[a, c]`` and signed
    multipliers ``coef[a, c]`` (indexed by the candidate's class):

    .. math::
        \\nu = \\sum_a \\sum_j \\mathrm{coef}_{a, y_j}
               e^{l_{aj} - \\log Z_{a, y_j}} z_{aj}

    (``ALGORITHMS.md`` section 1, rule 5).  Anchors are split into a fixed
    number of chunks whose sums are added in order, so the result does not
    depend on the thread count.
    """
    n_anchors, n_features = Xa.shape
    n_classes = coef.shape[1]
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    inv_sigma = 1.0 / sigma
    n_chunks = min(n_anchors, 64)
    partial = _filled((n_chunks, n_features), 0.0)
    for t in numba.prange(n_chunks):
        buf = np.empty(_CAND_BLOCK)
        for a in range(t, n_anchors, n_chunks):
            for c in range(n_classes):
                if coef[a, c] == 0.0:
                    continue
                for c0 in range(starts[c], starts[c + 1], _CAND_BLOCK):
                    c1 = min(c0 + _CAND_BLOCK, starts[c + 1])
                    _logits(Xa[a], ia[a], Xs, ics, c0, c1, w, inv_sigma, buf)
                    for j in range(c1 - c0):
                        buf[j] = coef[a, c] * math.exp(buf[j] - log_z[a, c])
                    _weighted_absdiff(Xa[a], Xs, c0, c1, buf, partial[t])
    out = _filled((n_features,), 0.0)
    for t in range(n_chunks):
        out += partial[t]
    return out


@_inline
def _distances32(xa, Xs, c0, c1, d):
    """Unweighted Manhattan distances in float32 (8 lanes per vector)."""
    n_features = Xs.shape[1]
    for j in range(c0, c1):
        acc = np.float32(0.0)
        for k in range(n_features):
            acc += abs(xa[k] - Xs[j, k])
        d[j - c0] = acc


@_inline
def _distance(xa, Xs, j):
    acc = 0.0
    for k in range(Xs.shape[1]):
        acc += abs(xa[k] - Xs[j, k])
    return acc


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
    dist = _filled((n_anchors, n_classes, k), np.inf)
    idx = np.empty(n_anchors * n_classes * k, dtype=np.int64).reshape((n_anchors, n_classes, k))
    idx[:] = -1
    z = _filled((n_anchors, n_classes, k, n_features), 0.0)
    for a in numba.prange(n_anchors):
        buf = np.empty(_CAND_BLOCK, dtype=np.float32)
        loc = np.empty(k, dtype=np.int64)
        xa = Xa[a]
        xa32 = xa.astype(np.float32)
        for c in range(n_classes):
            dc = dist[a, c]
            ix = idx[a, c]
            # Candidates whose float32 distance exceeds ``cut`` cannot enter.
            cut = np.inf
            for c0 in range(starts[c], starts[c + 1], _CAND_BLOCK):
                c1 = min(c0 + _CAND_BLOCK, starts[c + 1])
                _distances32(xa32, Xs32, c0, c1, buf)
                for j in range(c1 - c0):
                    if buf[j] > cut:
                        continue
                    g = ics[c0 + j]
                    if g == ia[a]:
                        continue
                    d = _distance(xa, Xs, c0 + j)
                    # Sorted insertion by (distance, index).
                    if d > dc[k - 1] or (d == dc[k - 1] and g > ix[k - 1] >= 0):
                        continue
                    r = k - 1
                    while r > 0 and (dc[r - 1] > d or (dc[r - 1] == d and ix[r - 1] > g)):
                        dc[r] = dc[r - 1]
                        ix[r] = ix[r - 1]
                        loc[r] = loc[r - 1]
                        r -= 1
                    dc[r] = d
                    ix[r] = g
                    loc[r] = c0 + j
                    cut = dc[k - 1] + bound
            for r in range(k):
                if ix[r] >= 0:
                    for f in range(n_features):
                        z[a, c, r, f] = abs(xa[f] - Xs[loc[r], f])
    return dist, idx, z


# ---------------------------------------------------------------------------
# Quadratic distances q = z^T W z (IMMIGRATE), W = U diag(lam) U^T
# ---------------------------------------------------------------------------
#
# The quadratic kernels are GEMM-bound.  Both row sets are sorted by class and
# cut into segments of rows of one class; a pair of segments is a block of
# pairs whose difference rows Z (pairs x features, about _BLOCK_BYTES) stay in
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

#: Largest segment (rows); buffers are sized for _SEG**2 pairs.
_SEG = 32
#: Bytes of one block's difference rows Z.
_BLOCK_BYTES = 2**16
# A row whose normaliser lies more than this below the block's largest logit
# takes its own exponentials: e^(l - M) e^(M - m) could overflow.  Below it,
# a term the shared exponential drops is under e^-100 of the row's largest.
_SAFE_SHIFT = 600.0


@_helper
def _segment_rows(n_features):
    """Rows per segment, so that a block's Z is about :data:`_BLOCK_BYTES` --
    but a block has at least ``A`` pairs on wide data, where each block's
    product adds an A x A matrix to Sigma."""
    rows = max(math.sqrt(_BLOCK_BYTES / (8.0 * n_features)), math.sqrt(n_features))
    return max(8, min(_SEG, int(rows)))


#: Pair modes.  ORDERED: rows of P are anchors against the candidates Q (new
#: points, leave-one-out; a candidate with the anchor's index is skipped).
#: CROSS: P and Q are disjoint row sets; every pair serves both anchors.
#: WITHIN: P is Q; each unordered pair i < j once, serving both anchors.
ORDERED, CROSS, WITHIN = 0, 1, 2


def n_pairs(n_p, n_q, mode):
    """Pairs a pair-mode kernel visits (the length of its distance store)."""
    return n_p * (n_p - 1) // 2 if mode == WITHIN else n_p * n_q


@_helper
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


@_helper
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


@_helper
def _block_rows_scaled(Xp, r0, r1, Xq, t0, t1, upper, scale, Y):
    """As :func:`_block_rows`, row ``p`` multiplied by ``scale[p]``."""
    n = 0
    for i in range(r0, r1):
        for j in range(max(t0, i + 1) if upper else t0, t1):
            for k in range(Xp.shape[1]):
                Y[n, k] = scale[n] * abs(Xp[i, k] - Xq[j, k])
            n += 1
    return n


@_helper
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


@_helper
def _rescale(m, s, u, a, c, best):
    if best > m[a, c]:
        r = math.exp(m[a, c] - best)
        s[a, c] *= r
        u[a, c] *= r
        m[a, c] = best


@_helper
def _shift_factor(shift):
    """``e^shift`` for a row whose terms are ``e^(l - M) e^shift``; ``-1`` when
    ``shift`` is too large for the product to be safe (the row then takes
    its own exponentials)."""
    if shift > _SAFE_SHIFT:
        return -1.0
    return math.exp(shift) if shift > _EXP_FLOOR else 0.0


@_helper
def _term(e, factor, lg, shift_to):
    """``e^(lg - shift_to)`` from the block's ``e = e^(lg - M)`` and the row's factor."""
    if factor >= 0.0:
        return e * factor
    x = lg - shift_to
    return math.exp(x) if x > _EXP_FLOOR else 0.0


@_helper
def _fold_block(q, r0, r1, t0, t1, upper, both, keep, op, oq, cs, ct, inv_sigma,
                mp, sp, up, mq, sq, uq, col):
    """Fold a block's distances into the softmax partials of its anchors.

    Row ``i`` (class ``cs``) gains the pair with ``j`` in its partial for class
    ``ct``; with ``both``, ``j`` gains it in its partial for class ``cs``.
    ``keep[p]`` is False for a pair of a row with itself.  Maxima first; then
    one exponential per pair against the block's maximum ``M``, scaled per
    row by ``e^(M - m_i)`` (:func:`_shift_factor`).
    """
    nt = t1 - t0
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
                e = math.exp(x) if x > _EXP_FLOOR else 0.0
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


@_helper
def _block_keep(ip, r0, r1, iq, t0, t1, upper, keep):
    p = 0
    for i in range(r0, r1):
        for j in range(max(t0, i + 1) if upper else t0, t1):
            keep[p] = ip[i] != iq[j]
            p += 1


@_helper
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


@_helper
def _blocks(seg_p, seg_q, mode):
    """Segment pairs ``(a, b)`` a pair mode visits, in the order both passes use."""
    out = []
    for a in range(seg_p.shape[0]):
        for b in range(a if mode == WITHIN else 0, seg_q.shape[0]):
            out.append((a, b))
    return out


@_helper
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
    Xps, ips, op, seg_p, Xqs, iqs, oq, seg_q = _sorted_pair(Xp, ip, yp, Xq, iq, yq, n_classes,
                                                            mode)
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
    Z = np.empty((_SEG * _SEG, n_features))
    q = np.empty(_SEG * _SEG)
    keep = np.ones(_SEG * _SEG, dtype=np.bool_)
    col = np.empty((4, _SEG))
    inv_sigma = 1.0 / sigma
    offset = 0
    for a, b in _blocks(seg_p, seg_q, mode):
        r0, r1, cs = seg_p[a]
        t0, t1, ct = seg_q[b]
        upper = mode == WITHIN and a == b
        n = _block_rows(Xps, r0, r1, Xqs, t0, t1, upper, Z)
        _block_distances(Z, n, U, lam, q)
        if store.shape[0] > 0:
            store[offset:offset + n] = q[:n]
        offset += n
        if mode == ORDERED:
            _block_keep(ips, r0, r1, iqs, t0, t1, upper, keep)
        _fold_block(q, r0, r1, t0, t1, upper, mode != ORDERED, keep, op, oq, cs, ct,
                    inv_sigma, mp, sp, up, mq, sq, uq, col)
    return mp, sp, up, mq, sq, uq


@_helper
def sigma_pairs(Xp, ip, yp, Xq, iq, yq, U, lam, sigma, log_zp, coef_p, log_zq, coef_q,
                mode, store):
    """Pass 2 of IMMIGRATE over a pair of row sets: the coefficient sum of outer products.

    .. math::
        \\Sigma = \\sum_a \\sum_j \\mathrm{coef}_{a, y_j}
                 e^{-q_{aj}/\\sigma - \\log Z_{a, y_j}} z_{aj} z_{aj}^T

    (``ALGORITHMS.md`` section 2, step 2) over the pairs of the mode, both
    anchors of a pair adding their weight to one row (``CROSS``,
    ``WITHIN``); one product ``Z^T (w * Z)`` per block, summed in block order.
    A nonempty ``store`` holds the distances :func:`qlse_pairs` wrote.
    """
    n_features = Xp.shape[1]
    Xps, ips, op, seg_p, Xqs, iqs, oq, seg_q = _sorted_pair(Xp, ip, yp, Xq, iq, yq,
                                                            coef_p.shape[1], mode)
    out = np.zeros((n_features, n_features))
    Z = np.empty((_SEG * _SEG, n_features))
    wZ = np.empty((_SEG * _SEG, n_features))
    q = np.empty(_SEG * _SEG)
    wq = np.empty(_SEG * _SEG)
    col_f = np.empty(_SEG)
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
            q[:n] = store[offset - n:offset]
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
                e = math.exp(x) if x > _EXP_FLOOR else 0.0
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
    m, s, u = qlse_pairs(Xa, ia, ya, Xc, ic, yc, U, lam, sigma, n_classes, ORDERED,
                         np.empty(0))[:3]
    return m, s, u


lse_tile, lse_tile_parallel = _jit(_lse_tile)
logz_tile, logz_tile_parallel = _jit(_logz_tile)
pair_sum_tile, pair_sum_tile_parallel = _jit(_pair_sum_tile)
knn_tile, knn_tile_parallel = _jit(_knn_tile)

KERNELS = {
    "lse": (lse_tile, lse_tile_parallel),
    "logz": (logz_tile, logz_tile_parallel),
    "pair_sum": (pair_sum_tile, pair_sum_tile_parallel),
    "knn": (knn_tile, knn_tile_parallel),
    # BLAS-bound, threaded by the caller over pairs of row sets.
    "qlse": (qlse_tile, qlse_tile),
}
