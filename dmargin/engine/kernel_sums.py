"""Kernel quadratic forms with one feature left out, and LDM's solver kernels.

LDM-RFE and kernel SVM-RFE rank feature ``j`` by ``S(j) = -alpha^T K(-j) alpha``
(``ALGORITHMS.md`` section 9b; papers/ldm_rfe.txt eq. (4)), where ``K(-j)`` is the
RBF kernel matrix of the data without feature ``j``.  Recomputing a kernel
matrix per feature costs ``A`` distance matrices; here every surviving feature
is scored in one pass over the pairs of rows, with the identity

.. math:: K(-j)_{ab} = \\exp(-\\gamma \\max(D^2_{ab} - (x_{aj} - x_{bj})^2, 0))

(``D^2`` the full squared distance; the clipped form equals
``K_ab exp(gamma (x_aj - x_bj)^2)`` but cannot overflow).  The sum is symmetric
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

from .execution import SPLIT_EVERY, Rows, _Graph, _sum
from .tiles import _jit

_FASTMATH = {"reassoc", "contract", "arcp"}
_helper = numba.njit(fastmath=_FASTMATH, cache=True, nogil=True)

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
def _pair_into(xa, xb, cab, gamma, diff2, out):
    """``out[j] += cab K(-j)_ab`` for every feature, ``out[A] += cab K_ab``."""
    n_features = xa.shape[0]
    d2 = 0.0
    for k in range(n_features):
        t = xa[k] - xb[k]
        diff2[k] = t * t
        d2 += t * t
    for k in range(n_features + 1):
        x = max(-gamma * max(d2 - diff2[k], 0.0), _EXP_FLOOR)  # diff2[A] stays 0
        n = (x * _LOG2E_STEPS + _ROUND) - _ROUND
        r = (x - n * _LN2_HI) - n * _LN2_LO
        p = 1.0 + r * (1.0 + r * (0.5 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120 + r * (
            1 / 720))))))
        out[k] += cab * p * _POWER[np.int64(n) - _N_MIN]


@_helper
def rbf_block_pair(Xp, Cp, Xq, Cq, gamma, same):
    """One tile: ``sum_{a in P, b in Q} c_ab [K(-j)_ab ..., K_ab]`` over ordered pairs.

    ``same`` means P and Q are the same rows: the diagonal (``K(-j)_aa = 1``)
    and each unordered pair once, doubled.  Otherwise both orders of every
    cross pair (doubled).  Returns an ``(A + 1)``-vector.
    """
    n_p, n_features = Xp.shape
    n_q = Xq.shape[0]
    n_mach = Cp.shape[1]
    out = np.zeros(n_features + 1)
    diff2 = np.zeros(n_features + 1)
    for a in range(n_p):
        if same:
            caa = 0.0
            for p in range(n_mach):
                caa += Cp[a, p] * Cp[a, p]
            for k in range(n_features + 1):
                out[k] += caa
        for b in range(a + 1 if same else 0, n_q):
            cab = 0.0
            for p in range(n_mach):
                cab += Cp[a, p] * Cq[b, p]
            if cab != 0.0:
                _pair_into(Xp[a], Xq[b], 2.0 * cab, gamma, diff2, out)
    return out


def _rbf_rows(X, C, gamma, n_chunks):
    """All pairs of ``X``: anchor chunks in parallel, each against the rows after it.

    Chunk ``i`` pairs its rows with every later row, so chunk work falls
    linearly; the loop visits chunks as (first, last, second, second-last,
    ...), so each thread's contiguous share of the loop gets equal work.  The
    partials are summed in chunk order: the result does not depend on threads.
    """
    n, n_features = X.shape
    parts = np.zeros((n_chunks, n_features + 1))
    for t in numba.prange(n_chunks):
        i = t // 2 if t % 2 == 0 else n_chunks - 1 - t // 2
        r0 = i * n // n_chunks
        r1 = (i + 1) * n // n_chunks
        if r1 > r0:
            parts[i] = rbf_block_pair(X[r0:r1], C[r0:r1], X[r0:r1], C[r0:r1], gamma, True)
            if r1 < n:
                parts[i] += rbf_block_pair(X[r0:r1], C[r0:r1], X[r1:], C[r1:], gamma, False)
    out = np.zeros(n_features + 1)
    for i in range(n_chunks):
        out += parts[i]
    return out


_rbf_rows_serial, _rbf_rows_parallel = _jit(_rbf_rows)

#: Below this many pair-features one thread beats waking a pool.
_PARALLEL_MIN_WORK = 2e7


def _columns(X, cols):
    return np.ascontiguousarray(X[:, cols], dtype=np.float64)


def _pair_task(Xp, Cp, Xq, Cq, cols, gamma, same):
    return rbf_block_pair(_columns(Xp, cols), Cp, _columns(Xq, cols), Cq, gamma, same)


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
        X = _columns(rows.X, cols)
        n = X.shape[0]
        work = n * n * (len(cols) + 1) / 2
        if work < _PARALLEL_MIN_WORK:
            return _rbf_rows_serial(X, coef, gamma, 1)
        return _rbf_rows_parallel(X, coef, gamma, max(2, min(64, n // 32)))

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
