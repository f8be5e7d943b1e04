"""Kernel quadratic forms with one feature left out, and LDM's solver kernels.

LDM-RFE and kernel SVM-RFE rank feature ``j`` by ``S(j) = -alpha^T K(-j) alpha``
(Ou, Wang, Pang & Coghill 2017, equation 4), where ``K(-j)`` is the
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
"""

import numba
import numpy as np

from .._numba import EXP_FLOOR, FASTMATH, helper, twins

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
_EXP_POLY = tuple(
    float(c)
    for c in np.polynomial.Chebyshev.interpolate(np.exp, 7, domain=[0.0, _POLY_SPAN])
    .convert(kind=np.polynomial.Polynomial)
    .coef
)
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
_N_MIN = -int(np.ceil(-EXP_FLOOR * _LOG2E_STEPS)) - 2
_POWER = 2.0 ** (np.arange(_N_MIN, 1, dtype=np.float64) / _STEPS)


@numba.njit(fastmath=FASTMATH, cache=True, nogil=True, inline="always")
def _pair_into(za, zb, cab, diff2, out):
    """Clipped form: ``out[j] += cab K(-j)_ab`` for every feature, ``out[A] += cab K_ab``."""
    n_features = za.shape[0]
    d2 = 0.0
    for k in range(n_features):
        t = za[k] - zb[k]
        diff2[k] = t * t
        d2 += t * t
    for k in range(n_features + 1):
        x = max(-max(d2 - diff2[k], 0.0), EXP_FLOOR)  # diff2[A] stays 0
        n = (x * _LOG2E_STEPS + _ROUND) - _ROUND
        r = (x - n * _LN2_HI) - n * _LN2_LO
        p = 1.0 + r * (1.0 + r * (0.5 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120 + r * (1 / 720))))))
        out[k] += cab * p * _POWER[np.int64(n) - _N_MIN]


@helper
def _spread(Z):
    """Per-feature minimum and maximum over the rows of ``Z``."""
    lo = Z[0].copy()
    hi = Z[0].copy()
    for a in range(1, Z.shape[0]):
        for k in range(Z.shape[1]):
            lo[k] = min(lo[k], Z[a, k])
            hi[k] = max(hi[k], Z[a, k])
    return lo, hi


@helper
def _pairs_clipped(Zp, Zq, Cab, diagonal, out, diff2):
    """The clipped form for every pair of a sub-tile (a feature spread too wide)."""
    for a in range(Zp.shape[0]):
        for b in range(a + 1 if diagonal else 0, Zq.shape[0]):
            if Cab[a, b] != 0.0:
                _pair_into(Zp[a], Zq[b], 2.0 * Cab[a, b], diff2, out)


@numba.njit(fastmath=FASTMATH, cache=True, nogil=True, inline="always")
def _product_loop(Zp, Zq, Cab, diagonal, out, norm_p, norm_q, G, s):
    """The pair loop of the product form; inlined with ``s`` a constant."""
    n_features = Zp.shape[1]
    c0, c1, c2, c3, c4, c5, c6, c7 = _EXP_POLY
    h = 0.5**s
    for a in range(Zp.shape[0]):
        za = Zp[a]
        for b in range(a + 1 if diagonal else 0, Zq.shape[0]):
            d2 = max(norm_p[a] + norm_q[b] - 2.0 * G[a, b], 0.0)
            # exp(-d2) e^u < e^-700 e^8: below anything the sum can resolve.
            if Cab[a, b] == 0.0 or d2 > -EXP_FLOOR:
                continue
            e = 2.0 * Cab[a, b] * np.exp(-d2)
            zb = Zq[b]
            for k in range(n_features):
                t = za[k] - zb[k]
                u = t * t * h
                p = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * (c5 + u * (c6 + u * c7))))))
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


@helper
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


@helper
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
    if u_max > _POLY_SPAN * 2.0**squarings:
        _pairs_clipped(Zp, Zq, Cab, diagonal, out, diff2)
    else:
        _pairs_product(Zp, Zq, Cab, diagonal, out, squarings)


@helper
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
            _sub_tile(
                Zp[i0:i1], Cp[i0:i1], Zq[j0:j1], Cq[j0:j1], same and i0 == j0, out, diff2, squarings
            )
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
                parts[i] += rbf_block_pair(Z[r0:r1], C[r0:r1], Z[r1:], C[r1:], False, squarings)
    out = np.zeros(n_features + 1)
    for i in range(n_chunks):
        out += parts[i]
    return out


TWINS = twins(_rbf_rows)
#: A pair-feature here (a polynomial, a product) costs about 2.5 of the Relief kernels'.
COST = 2.5


def scaled_columns(X, cols, gamma):
    """The surviving columns times ``sqrt(gamma)``: the kernel becomes ``exp(-||z_a - z_b||^2)``."""
    return np.ascontiguousarray(X[:, cols], dtype=np.float64) * np.sqrt(gamma)


def squarings(*Zs):
    """The fewest squarings ``s <= _MAX_SQUARINGS`` whose
    product form covers every feature's spread over the rows of ``Zs``."""
    lo = np.min([Z.min(axis=0) for Z in Zs], axis=0)
    hi = np.max([Z.max(axis=0) for Z in Zs], axis=0)
    u_max = float(np.max((hi - lo) ** 2, initial=0.0))
    s = 0
    while s < _MAX_SQUARINGS and u_max > _POLY_SPAN * 2.0**s:
        s += 1
    return s
