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
``z`` is recomputed rather than stored.
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


@_helper
def by_class(Xc, yc, ic, n_classes):
    """Candidates sorted by class (stable), as a contiguous copy.

    Returns the sorted rows ``Xs``, their global indices, and ``starts``
    (class ``c`` occupies rows ``starts[c]:starts[c + 1]``).
    """
    order = np.argsort(yc, kind="mergesort")
    n_cand, n_features = Xc.shape
    Xs = np.empty((n_cand, n_features))
    ic_sorted = np.empty(n_cand, dtype=np.int64)
    for r in range(n_cand):
        j = order[r]
        ic_sorted[r] = ic[j]
        Xs[r] = Xc[j]
    starts = np.zeros(n_classes + 1, dtype=np.int64)
    for j in range(n_cand):
        starts[yc[j] + 1] += 1
    for c in range(n_classes):
        starts[c + 1] += starts[c]
    return Xs, ic_sorted, starts


@_helper
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


@_helper
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


@_helper
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
                    v[c] *= r
                m[c] = best
            n = c1 - c0
            tot = 0.0
            for j in range(n):
                buf[j] = math.exp(buf[j] - m[c])
                tot += buf[j]
            s[c] += tot
            _weighted_absdiff(xa, Xs, c0, c1, buf, v[c])


@_helper
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
    m = np.full((n_anchors, n_classes), -np.inf)
    s = np.zeros((n_anchors, n_classes))
    v = np.zeros((n_anchors, n_classes, n_features))
    inv_sigma = 1.0 / sigma
    for a in numba.prange(n_anchors):
        buf = np.empty(_CAND_BLOCK)
        lse_anchor(Xa[a], ia[a], Xs, ics, starts, w, inv_sigma, m[a], s[a], v[a], buf)
    return m, s, v


def _logz_tile(Xa, ia, Xc, yc, ic, w, sigma, n_classes):
    """Pass 1 of the two-pass mode: ``(m, s)`` of :func:`_lse_tile` only."""
    n_anchors = Xa.shape[0]
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    m = np.full((n_anchors, n_classes), -np.inf)
    s = np.zeros((n_anchors, n_classes))
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
    partial = np.zeros((n_chunks, n_features))
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
    out = np.zeros(n_features)
    for t in range(n_chunks):
        out += partial[t]
    return out


@_helper
def _distances32(xa, Xs, c0, c1, d):
    """Unweighted Manhattan distances in float32 (8 lanes per vector)."""
    n_features = Xs.shape[1]
    for j in range(c0, c1):
        acc = np.float32(0.0)
        for k in range(n_features):
            acc += abs(xa[k] - Xs[j, k])
        d[j - c0] = acc


@_helper
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
    dist = np.full((n_anchors, n_classes, k), np.inf)
    idx = np.full((n_anchors, n_classes, k), -1, dtype=np.int64)
    z = np.zeros((n_anchors, n_classes, k, n_features))
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
# The quadratic kernels are GEMM-bound: numba builds the pair differences and
# does the per-pair bookkeeping (GIL released), numpy's BLAS does the two
# products per block of pairs (Z @ U for q, Z^T (c Z) for Sigma).  A block is
# _Q_ANCHORS anchors x up to _Q_CANDS candidates of one class.

_Q_ANCHORS = 32
_Q_CANDS = 512
# Rows per segment of the in-process symmetric pass: a pair of segments is one
# block of at most _Q_ANCHORS * _Q_CANDS pairs.
_Q_SEGMENT = 128


@_helper
def _pair_diffs(Xa, a0, a1, Xs, c0, c1, Z):
    """``Z[(a - a0) * (c1 - c0) + j - c0] = |x_a - x_j|``; returns the row count."""
    nc = c1 - c0
    for a in range(a0, a1):
        base = (a - a0) * nc
        for j in range(nc):
            for k in range(Xs.shape[1]):
                Z[base + j, k] = abs(Xa[a, k] - Xs[c0 + j, k])
    return (a1 - a0) * nc


@_helper
def _quad_form(G, lam, q):
    """``q_p = sum_i lam_i G[p, i]^2`` (``G = Z U``)."""
    for p in range(G.shape[0]):
        acc = 0.0
        for i in range(lam.shape[0]):
            acc += lam[i] * G[p, i] * G[p, i]
        q[p] = acc


def quad_distances(Xa, a0, a1, Xs, c0, c1, U, lam, Z, G):
    """Pair differences and quadratic distances of a block of pairs.

    .. math:: q_{aj} = z_{aj}^T W z_{aj} = \\sum_i \\lambda_i (u_i^T z_{aj})^2

    ``Z`` and ``G`` are scratch (rows x features, rows x rank).  Returns
    ``(Z[:n], q)`` with rows ordered anchor-major.
    """
    n = _pair_diffs(Xa, a0, a1, Xs, c0, c1, Z)
    q = np.empty(n)
    _quad_form(np.matmul(Z[:n], U, out=G[:n]), lam, q)
    return Z[:n], q


def _scratch(n_features, rank):
    rows = _Q_ANCHORS * _Q_CANDS
    return np.empty((rows, n_features)), np.empty((rows, rank)), np.empty((rows, n_features))


@_helper
def _fold_quad(q, nc, self_ic, ia, a0, a1, c, inv_sigma, m, s, u):
    """Fold a block's distances to class ``c`` into the anchors' ``(m, s, u)``."""
    for a in range(a0, a1):
        base = (a - a0) * nc
        best = -np.inf
        for j in range(nc):
            if self_ic[j] != ia[a]:
                best = max(best, -q[base + j] * inv_sigma)
        if best == -np.inf:
            continue
        if best > m[a, c]:
            r = math.exp(m[a, c] - best)
            s[a, c] *= r
            u[a, c] *= r
            m[a, c] = best
        for j in range(nc):
            x = -q[base + j] * inv_sigma - m[a, c]
            if self_ic[j] != ia[a] and x > _EXP_FLOOR:
                e = math.exp(x)
                s[a, c] += e
                u[a, c] += e * q[base + j]


@_helper
def _weighted_rows(q, Z, nc, self_ic, ia, a0, a1, c, inv_sigma, log_z, coef, out):
    """``out[p] = w_p Z[p]`` with ``w_p = coef[a, c] exp(-q_p / sigma - log_z[a, c])``
    (0 for the anchor itself)."""
    for a in range(a0, a1):
        base = (a - a0) * nc
        for j in range(nc):
            w = 0.0
            x = -q[base + j] * inv_sigma - log_z[a, c]
            if coef[a, c] != 0.0 and self_ic[j] != ia[a] and x > _EXP_FLOOR:
                w = coef[a, c] * math.exp(x)
            for k in range(Z.shape[1]):
                out[base + j, k] = w * Z[base + j, k]


def _quad_blocks(n_anchors, starts):
    for a0 in range(0, n_anchors, _Q_ANCHORS):
        a1 = min(a0 + _Q_ANCHORS, n_anchors)
        for c in range(starts.shape[0] - 1):
            for c0 in range(starts[c], starts[c + 1], _Q_CANDS):
                yield a0, a1, c, c0, min(c0 + _Q_CANDS, starts[c + 1])


def qlse_tile(Xa, ia, Xc, yc, ic, U, lam, sigma, n_classes):
    """Per-anchor, per-class partials ``(m, s, u)`` of the quadratic softmax.

    As :func:`_lse_tile` with logits ``l = -q / sigma`` and, instead of the
    vector ``v``, the scalar ``u_ac = sum_j e^{l_aj - m_ac} q_aj`` (expected
    distance, entropy and cost all follow from it).  Merged by
    :func:`dmargin.engine.merge.lse_combine`.
    """
    n_anchors, n_features = Xa.shape
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    m = np.full((n_anchors, n_classes), -np.inf)
    s = np.zeros((n_anchors, n_classes))
    u = np.zeros((n_anchors, n_classes))
    Z, G, _ = _scratch(n_features, U.shape[1])
    for a0, a1, c, c0, c1 in _quad_blocks(n_anchors, starts):
        _, q = quad_distances(Xa, a0, a1, Xs, c0, c1, U, lam, Z, G)
        _fold_quad(q, c1 - c0, ics[c0:c1], ia, a0, a1, c, 1.0 / sigma, m, s, u)
    return m, s, u


def sigma_tile(Xa, ia, Xc, yc, ic, U, lam, sigma, log_z, coef):
    """Pass 2 of IMMIGRATE: the pair-coefficient sum of outer products.

    .. math::
        \\Sigma = \\sum_a \\sum_j \\mathrm{coef}_{a, y_j}
                 e^{-q_{aj}/\\sigma - \\log Z_{a, y_j}} z_{aj} z_{aj}^T

    (``ALGORITHMS.md`` section 2, step 2), one product ``Z^T (c * Z)`` per
    block of pairs, summed in a fixed order.
    """
    n_anchors, n_features = Xa.shape
    n_classes = coef.shape[1]
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    out = np.zeros((n_features, n_features))
    Z, G, wZ = _scratch(n_features, U.shape[1])
    for a0, a1, c, c0, c1 in _quad_blocks(n_anchors, starts):
        if not coef[a0:a1, c].any():
            continue
        Zb, q = quad_distances(Xa, a0, a1, Xs, c0, c1, U, lam, Z, G)
        n = q.shape[0]
        _weighted_rows(q, Z, c1 - c0, ics[c0:c1], ia, a0, a1, c, 1.0 / sigma, log_z, coef, wZ)
        out += Zb.T @ wZ[:n]
    return out


@_helper
def symmetric_weighted_rows(q, Z, r0, r1, t0, t1, c_s, c_t, inv_sigma, log_z, coef, out):
    """Both directions of a block of unordered pairs at once.

    Rows ``(i - r0) * (t1 - t0) + (j - t0)`` hold the pair of sorted rows
    ``i`` (class ``c_s``) and ``j`` (class ``c_t``); ``out[p] = (w_ij + w_ji) Z[p]``
    with ``w_ij = coef[i, c_t] exp(-q / sigma - log_z[i, c_t])``.  On a diagonal
    block (``r0 == t0``) every ordered pair appears once and ``w_ji`` is not added;
    the anchor itself gets 0.
    """
    nt = t1 - t0
    diagonal = r0 == t0
    for i in range(r0, r1):
        for j in range(t0, t1):
            p = (i - r0) * nt + (j - t0)
            w = 0.0
            if i != j:
                x = -q[p] * inv_sigma - log_z[i, c_t]
                if coef[i, c_t] != 0.0 and x > _EXP_FLOOR:
                    w += coef[i, c_t] * math.exp(x)
                if not diagonal:
                    x = -q[p] * inv_sigma - log_z[j, c_s]
                    if coef[j, c_s] != 0.0 and x > _EXP_FLOOR:
                        w += coef[j, c_s] * math.exp(x)
            for k in range(Z.shape[1]):
                out[p, k] = w * Z[p, k]


lse_tile, lse_tile_parallel = _jit(_lse_tile)
logz_tile, logz_tile_parallel = _jit(_logz_tile)
pair_sum_tile, pair_sum_tile_parallel = _jit(_pair_sum_tile)
knn_tile, knn_tile_parallel = _jit(_knn_tile)

KERNELS = {
    "lse": (lse_tile, lse_tile_parallel),
    "logz": (logz_tile, logz_tile_parallel),
    "pair_sum": (pair_sum_tile, pair_sum_tile_parallel),
    "knn": (knn_tile, knn_tile_parallel),
    # BLAS-bound, threaded by the caller over anchor blocks.
    "qlse": (qlse_tile, qlse_tile),
    "sigma": (sigma_tile, sigma_tile),
}
