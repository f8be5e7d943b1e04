"""Kernel quadratic forms with one feature left out, and LDM's solver kernels.

LDM-RFE and kernel SVM-RFE rank feature ``j`` by ``S(j) = -alpha^T K(-j) alpha``
(``ALGORITHMS.md`` section 9b; papers/ldm_rfe.txt eq. (4)), where ``K(-j)`` is the
RBF kernel matrix of the data without feature ``j``.  Recomputing a kernel
matrix per feature costs ``A`` distance matrices; here every surviving feature
is scored in one pass over the pairs of rows, with the identity

.. math:: K(-j)_{ab} = \\exp(-\\gamma \\max(D^2_{ab} - (x_{aj} - x_{bj})^2, 0))

(``D^2`` the full squared distance), evaluated as the product
``K_ab exp(gamma (x_aj - x_bj)^2)`` where every feature's spread over a
sub-tile is bounded (one exponential per pair, a vectorised polynomial per
pair-feature) and in the clipped form, which cannot overflow, elsewhere.  The sum is symmetric
in ``(a, b)``, so row blocks are visited as unordered pairs ``I <= J``; a tile
returns an ``(A + 1)``-vector: ``sum_ab c_ab K(-j)_ab`` for every feature and, in
the last slot, ``sum_ab c_ab K_ab``, with ``c_ab = sum_p alpha_ap alpha_bp`` over
the binary machines ``p`` of a one-vs-one model.  No N x N array exists.

In-process (numpy input, no client) one numba call threads over anchor
chunks; for dask input or an active ``distributed.Client`` one task per pair
of persisted row blocks, tree-summed (graph built like
:func:`execution.lse_statistic`).

The second half holds LDM's dual coordinate descent (section 9.3) and its
linear-primal twin (section 9.4): small driver-side loops, compiled because
each pass visits every coordinate.
"""

from __future__ import annotations

import numba
import numpy as np

from .execution import SPLIT_EVERY, Rows, _blas_single_thread, _Graph, _sum
from .tiles import _jit

_FASTMATH = {"reassoc", "contract", "arcp"}
_helper = numba.njit(fastmath=_FASTMATH, cache=True, nogil=True)

# The rows arrive scaled by sqrt(gamma), so a pair's kernel value is
# exp(-D2_ab) and K(-j)_ab = exp(-D2_ab) exp(u_j) with u_j = (z_aj - z_bj)^2.
#
# Product form (a sub-tile whose features all have u_j <= _POLY_SPAN 2^s):
# D2 from one GEMM per sub-tile, one exp per pair, and
# exp(u_j) = p(u_j / 2^s)^(2^s) with p the degree-7 Chebyshev interpolant of
# exp on [0, _POLY_SPAN] (relative error < 1e-15, times 2^s after the
# squarings).  No call and no table in the feature loop, so it vectorises:
# about 2x the clipped form below.  s (at most _MAX_SQUARINGS) is fixed per
# call from the columns' spread.
_POLY_SPAN = 0.125
_MAX_SQUARINGS = 6
_EXP_POLY = tuple(float(c) for c in np.polynomial.Chebyshev.interpolate(
    np.exp, 7, domain=[0.0, _POLY_SPAN]).convert(kind=np.polynomial.Polynomial).coef)
# Rows per sub-tile: its D2 block (128 x 128 doubles) stays in L2.
_SUB_ROWS = 128

# Clipped form (a feature spread wider than the product form covers):
# exp(x) for x <= 0 without a call, so that the compiler vectorises it over
# features (numba has no vector exp without SVML): x = n ln2 / 32 + r with
# |r| <= ln2 / 64 (Cody-Waite, two-part ln2), exp(r) by its degree-6 Taylor
# polynomial (truncation < 4e-18) and 2^(n/32) from one table (256 KiB; the
# entries a tile touches are few).  Relative error a few ulp.
_STEPS = 32
_LOG2E_STEPS = _STEPS * 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01 / _STEPS
_LN2_LO = 1.90821492927058770002e-10 / _STEPS
_ROUND = 6755399441055744.0  # 1.5 * 2**52: x + _ROUND - _ROUND rounds to an integer
# Below this the kernel value is < 1e-304: it cannot change a sum whose terms
# are products of kernel values <= 1.
_EXP_FLOOR = -700.0
_N_MIN = -int(np.ceil(-_EXP_FLOOR * _LOG2E_STEPS)) - 2
_POWER = 2.0 ** (np.arange(_N_MIN, 1, dtype=np.float64) / _STEPS)


@numba.njit(fastmath=_FASTMATH, cache=True, nogil=True, inline="always")
def _pair_into(za, zb, cab, diff2, out):
    """Clipped form: ``out[j] += cab K(-j)_ab`` for every feature, ``out[A] += cab K_ab``."""
    n_features = za.shape[0]
    d2 = 0.0
    for k in range(n_features):
        t = za[k] - zb[k]
        diff2[k] = t * t
        d2 += t * t
    for k in range(n_features + 1):
        x = max(-max(d2 - diff2[k], 0.0), _EXP_FLOOR)  # diff2[A] stays 0
        n = (x * _LOG2E_STEPS + _ROUND) - _ROUND
        r = (x - n * _LN2_HI) - n * _LN2_LO
        p = 1.0 + r * (1.0 + r * (0.5 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120 + r * (
            1 / 720))))))
        out[k] += cab * p * _POWER[np.int64(n) - _N_MIN]


@_helper
def _spread(Z):
    """Per-feature minimum and maximum over the rows of ``Z``."""
    lo = Z[0].copy()
    hi = Z[0].copy()
    for a in range(1, Z.shape[0]):
        for k in range(Z.shape[1]):
            lo[k] = min(lo[k], Z[a, k])
            hi[k] = max(hi[k], Z[a, k])
    return lo, hi


@_helper
def _pairs_clipped(Zp, Zq, Cab, diagonal, out, diff2):
    """The clipped form for every pair of a sub-tile (a feature spread too wide)."""
    for a in range(Zp.shape[0]):
        for b in range(a + 1 if diagonal else 0, Zq.shape[0]):
            if Cab[a, b] != 0.0:
                _pair_into(Zp[a], Zq[b], 2.0 * Cab[a, b], diff2, out)


@numba.njit(fastmath=_FASTMATH, cache=True, nogil=True, inline="always")
def _product_loop(Zp, Zq, Cab, diagonal, out, norm_p, norm_q, G, s):
    """The pair loop of the product form; inlined with ``s`` a constant."""
    n_features = Zp.shape[1]
    c0, c1, c2, c3, c4, c5, c6, c7 = _EXP_POLY
    h = 0.5 ** s
    for a in range(Zp.shape[0]):
        za = Zp[a]
        for b in range(a + 1 if diagonal else 0, Zq.shape[0]):
            d2 = max(norm_p[a] + norm_q[b] - 2.0 * G[a, b], 0.0)
            # exp(-d2) e^u < e^-700 e^8: below anything the sum can resolve.
            if Cab[a, b] == 0.0 or d2 > -_EXP_FLOOR:
                continue
            e = 2.0 * Cab[a, b] * np.exp(-d2)
            zb = Zq[b]
            for k in range(n_features):
                t = za[k] - zb[k]
                u = t * t * h
                p = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * (c5 + u * (
                    c6 + u * c7))))))
                if s >= 1:  # constant after inlining: the branches fold away
                    p = p * p
                if s >= 2:
                    p = p * p
                if s >= 3:
                    p = p * p
                if s >= 4:
                    p = p * p
                if s >= 5:
                    p = p * p
                if s >= 6:
                    p = p * p
                out[k] += e * p
            out[n_features] += e


@_helper
def _pairs_product(Zp, Zq, Cab, diagonal, out, s):
    """The product form: one exp per pair, ``p(u / 2^s)^(2^s)`` per pair-feature."""
    norm_p = np.zeros(Zp.shape[0])
    for a in range(Zp.shape[0]):
        norm_p[a] = np.dot(Zp[a], Zp[a])
    norm_q = np.zeros(Zq.shape[0])
    for b in range(Zq.shape[0]):
        norm_q[b] = np.dot(Zq[b], Zq[b])
    G = np.dot(Zp, Zq.T)
    # One copy of the loop per squaring count, each with s a constant, so
    # that the squarings unroll and the feature loop vectorises.
    if s == 0:
        _product_loop(Zp, Zq, Cab, diagonal, out, norm_p, norm_q, G, 0)
    elif s == 1:
        _product_loop(Zp, Zq, Cab, diagonal, out, norm_p, norm_q, G, 1)
    elif s == 2:
        _product_loop(Zp, Zq, Cab, diagonal, out, norm_p, norm_q, G, 2)
    elif s == 3:
        _product_loop(Zp, Zq, Cab, diagonal, out, norm_p, norm_q, G, 3)
    elif s == 4:
        _product_loop(Zp, Zq, Cab, diagonal, out, norm_p, norm_q, G, 4)
    elif s == 5:
        _product_loop(Zp, Zq, Cab, diagonal, out, norm_p, norm_q, G, 5)
    else:
        _product_loop(Zp, Zq, Cab, diagonal, out, norm_p, norm_q, G, 6)


@_helper
def _sub_tile(Zp, Cp, Zq, Cq, diagonal, out, diff2, squarings):
    """Add ``2 sum_{a, b} c_ab [K(-j)_ab ..., K_ab]`` over the pairs of a sub-tile.

    ``diagonal``: ``Zp`` and ``Zq`` are the same rows, pairs ``a < b`` only.
    The product form when every feature's spread is within what ``squarings``
    (``s``) covers, else the clipped one.
    """
    lo_p, hi_p = _spread(Zp)
    lo_q, hi_q = _spread(Zq)
    u_max = 0.0
    for k in range(Zp.shape[1]):
        w = max(hi_p[k], hi_q[k]) - min(lo_p[k], lo_q[k])
        u_max = max(u_max, w * w)
    Cab = np.dot(Cp, Cq.T)
    if u_max > _POLY_SPAN * 2.0 ** squarings:
        _pairs_clipped(Zp, Zq, Cab, diagonal, out, diff2)
    else:
        _pairs_product(Zp, Zq, Cab, diagonal, out, squarings)


@_helper
def rbf_block_pair(Zp, Cp, Zq, Cq, same, squarings):
    """One tile: ``sum_{a in P, b in Q} c_ab [K(-j)_ab ..., K_ab]`` over ordered pairs.

    Rows are scaled by ``sqrt(gamma)``.  ``same`` means P and Q are the same
    rows: the diagonal (``K(-j)_aa = 1``) and each unordered pair once,
    doubled.  Otherwise both orders of every cross pair (doubled).  Visited
    in sub-tiles of ``_SUB_ROWS`` x ``_SUB_ROWS`` rows.  Returns an
    ``(A + 1)``-vector.
    """
    n_p, n_features = Zp.shape
    n_q = Zq.shape[0]
    n_mach = Cp.shape[1]
    out = np.zeros(n_features + 1)
    diff2 = np.zeros(n_features + 1)
    if same:
        for a in range(n_p):
            caa = 0.0
            for m in range(n_mach):
                caa += Cp[a, m] * Cp[a, m]
            for k in range(n_features + 1):
                out[k] += caa
    for i0 in range(0, n_p, _SUB_ROWS):
        i1 = min(i0 + _SUB_ROWS, n_p)
        for j0 in range(i0 if same else 0, n_q, _SUB_ROWS):
            j1 = min(j0 + _SUB_ROWS, n_q)
            _sub_tile(Zp[i0:i1], Cp[i0:i1], Zq[j0:j1], Cq[j0:j1], same and i0 == j0, out,
                      diff2, squarings)
    return out


def _rbf_rows(Z, C, n_chunks, squarings):
    """All pairs of ``Z``: anchor chunks in parallel, each against the rows after it.

    Chunk ``i`` pairs its rows with every later row, so chunk work falls
    linearly; the loop visits chunks as (first, last, second, second-last,
    ...), so each thread's contiguous share of the loop gets equal work.  The
    partials are summed in chunk order: the result does not depend on threads.
    """
    n, n_features = Z.shape
    parts = np.zeros((n_chunks, n_features + 1))
    for t in numba.prange(n_chunks):
        i = t // 2 if t % 2 == 0 else n_chunks - 1 - t // 2
        r0 = i * n // n_chunks
        r1 = (i + 1) * n // n_chunks
        if r1 > r0:
            parts[i] = rbf_block_pair(Z[r0:r1], C[r0:r1], Z[r0:r1], C[r0:r1], True, squarings)
            if r1 < n:
                parts[i] += rbf_block_pair(Z[r0:r1], C[r0:r1], Z[r1:], C[r1:], False,
                                            squarings)
    out = np.zeros(n_features + 1)
    for i in range(n_chunks):
        out += parts[i]
    return out


_rbf_rows_serial, _rbf_rows_parallel = _jit(_rbf_rows)

#: Below this many pair-features one thread beats waking a pool.
_PARALLEL_MIN_WORK = 2e7


def _scaled_columns(X, cols, gamma):
    """The surviving columns times ``sqrt(gamma)``: the kernel becomes ``exp(-||z_a - z_b||^2)``."""
    return np.ascontiguousarray(X[:, cols], dtype=np.float64) * np.sqrt(gamma)


def _squarings(*Zs):
    """The fewest squarings ``s <= _MAX_SQUARINGS`` whose
    product form covers every feature's spread over the rows of ``Zs``."""
    lo = np.min([Z.min(axis=0) for Z in Zs], axis=0)
    hi = np.max([Z.max(axis=0) for Z in Zs], axis=0)
    u_max = float(np.max((hi - lo) ** 2, initial=0.0))
    s = 0
    while s < _MAX_SQUARINGS and u_max > _POLY_SPAN * 2.0 ** s:
        s += 1
    return s


def _pair_task(Xp, Cp, Xq, Cq, cols, gamma, same):
    Zp, Zq = _scaled_columns(Xp, cols, gamma), _scaled_columns(Xq, cols, gamma)
    with _blas_single_thread():  # the sub-tiles' GEMMs run inside the kernel
        return rbf_block_pair(Zp, Cp, Zq, Cq, same, _squarings(Zp, Zq))


def rbf_left_out_sums(rows: Rows, coef, cols, gamma, split_every=SPLIT_EVERY):
    """``[alpha^T K(-j) alpha for j in cols] + [alpha^T K alpha]``, summed over machines.

    Parameters
    ----------
    rows : Rows
        The training rows (all features), numpy or persisted dask blocks.
    coef : ndarray of shape (n_samples, n_machines)
        Each binary machine's kernel coefficients (labels absorbed), zero
        on rows a machine did not train on.
    cols : ndarray of int
        The surviving features; the kernel is over these columns only.
    gamma : float
        RBF width, ``k(u, v) = exp(-gamma ||u - v||^2)``.

    Returns
    -------
    sums : ndarray of shape (len(cols) + 1,)
    """
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    cols = np.asarray(cols, dtype=np.int64)
    gamma = float(gamma)
    if not rows.on_dask:
        Z = _scaled_columns(rows.X, cols, gamma)
        n = Z.shape[0]
        work = n * n * (len(cols) + 1) / 2
        with _blas_single_thread():  # the sub-tiles' GEMMs run inside the kernel threads
            if work < _PARALLEL_MIN_WORK:
                return _rbf_rows_serial(Z, coef, 1, _squarings(Z))
            # Anchor chunks of >= 64 rows: sub-tile overheads stay small.
            return _rbf_rows_parallel(Z, coef, max(2, min(64, n // 64)), _squarings(Z))

    g = _Graph(rows, "kernel-sums", coef, cols, gamma, split_every=split_every)
    blocks = range(len(rows.bounds))
    parts = []
    for i in blocks:
        si, ti = rows.bounds[i]
        for j in blocks:
            if j < i:
                continue
            sj, tj = rows.bounds[j]
            parts.append(g.add("pair", _pair_task, g.x(i), coef[si:ti], g.x(j), coef[sj:tj],
                               cols, gamma, i == j))
    return g.compute(g.tree(parts, _sum, "total"))


# ---------------------------------------------------------------------------
# LDM dual coordinate descent (ALGORITHMS.md 9.3, the official ``solve_cd``)
# ---------------------------------------------------------------------------


@_helper
def _projected(g, beta_i, C, pg_max_old, pg_min_old):
    """(shrink?, projected gradient) of one coordinate of the box [0, C]."""
    if beta_i == 0.0:
        if g > pg_max_old:
            return True, 0.0
        return False, min(g, 0.0)
    if beta_i == C:
        if g < pg_min_old:
            return True, 0.0
        return False, max(g, 0.0)
    return False, g


@_helper
def ldm_dcd(H, g, C, eps, max_iter, seed):
    """Minimise ``1/2 b^T H b + q^T b`` over ``0 <= b <= C`` from ``b = 0``.

    ``H`` must be symmetric (its rows are read as columns).  ``g`` is the
    gradient at ``b = 0`` (``q``) and is updated in place (``g += delta H[i]``).  Shrinking and the stopping rule
    ``max PG - min PG <= eps`` are the official solver's.  Returns
    ``(beta, passes, converged)``.
    """
    m = g.shape[0]
    np.random.seed(seed)
    beta = np.zeros(m)
    active = np.arange(m)
    n_active = m
    pg_max_old, pg_min_old = np.inf, -np.inf
    for it in range(1, max_iter + 1):
        np.random.shuffle(active[:n_active])
        pg_max, pg_min = -np.inf, np.inf
        s = 0
        while s < n_active:
            i = active[s]
            shrink, pg = _projected(g[i], beta[i], C, pg_max_old, pg_min_old)
            if shrink:
                n_active -= 1
                active[s], active[n_active] = active[n_active], active[s]
                continue
            pg_max = max(pg_max, pg)
            pg_min = min(pg_min, pg)
            if abs(pg) > 1e-12 and H[i, i] > 1e-12:
                new = min(max(beta[i] - g[i] / H[i, i], 0.0), C)
                delta = new - beta[i]
                beta[i] = new
                for r in range(m):
                    g[r] += delta * H[i, r]  # H is symmetric: read row i, contiguous
            s += 1
        if pg_max - pg_min <= eps:
            if n_active == m:
                return beta, it, True
            n_active = m
            pg_max_old, pg_min_old = np.inf, -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    return beta, max_iter, False


@_helper
def ldm_dcd_linear(Z, V, w, C, eps, max_iter, seed):
    """The same descent in the primal ``w`` (ALGORITHMS.md 9.4), O(d) per coordinate.

    Row ``z_i = y_i x_i`` of ``Z``; row ``v_i = Q_d^-1 z_i`` of ``V``; ``w``
    starts at ``(lambda2 / m) sum_i v_i`` and is updated in place.  The
    gradient is ``g_i = z_i . w - 1`` and ``H_ii = z_i . v_i``.
    """
    m, d = Z.shape
    np.random.seed(seed)
    beta = np.zeros(m)
    h = np.empty(m)
    for i in range(m):
        acc = 0.0
        for k in range(d):
            acc += Z[i, k] * V[i, k]
        h[i] = acc
    active = np.arange(m)
    n_active = m
    pg_max_old, pg_min_old = np.inf, -np.inf
    for it in range(1, max_iter + 1):
        np.random.shuffle(active[:n_active])
        pg_max, pg_min = -np.inf, np.inf
        s = 0
        while s < n_active:
            i = active[s]
            gi = -1.0
            for k in range(d):
                gi += Z[i, k] * w[k]
            shrink, pg = _projected(gi, beta[i], C, pg_max_old, pg_min_old)
            if shrink:
                n_active -= 1
                active[s], active[n_active] = active[n_active], active[s]
                continue
            pg_max = max(pg_max, pg)
            pg_min = min(pg_min, pg)
            if abs(pg) > 1e-12 and h[i] > 1e-12:
                new = min(max(beta[i] - gi / h[i], 0.0), C)
                delta = new - beta[i]
                beta[i] = new
                for k in range(d):
                    w[k] += delta * V[i, k]
            s += 1
        if pg_max - pg_min <= eps:
            if n_active == m:
                return beta, it, True
            n_active = m
            pg_max_old, pg_min_old = np.inf, -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    return beta, max_iter, False
