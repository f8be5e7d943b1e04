"""Sequential kernels: loops whose every step needs the state the previous step left.

They run on the driver, one call per batch: online I-RELIEF (each anchor's
term uses the weights the previous anchors left; the work per anchor is one
row of the pairwise engine, :func:`dmargin.engine.kernels.lse.lse_anchor`),
Simba (each step's nearest hit and miss depend on the current weights), and
LDM's dual coordinate descent (the official package's ``solve_cd``, Zhang &
Zhou 2014) with its linear-primal twin.
"""

import math

import numba
import numpy as np

from .._numba import helper, pick, strict, twins
from .distance import MISSING, split_missing
from .lse import CAND_BLOCK, by_class, general_rows, lse_anchor, lse_anchor_general
from .terms import irelief_anchor_term, irelief_anchor_term_missing


@numba.njit(cache=True, nogil=True, inline="always")  # strict arithmetic, as its callers
def _online_step(nu, w, pi, t, a):
    """Step ``t`` of the online update: ``nu += eta (pi - nu)`` with ``eta = 1 / (a t + 1)``,
    then ``w = nu+ / ||nu+||`` (unchanged while ``nu`` has no positive entry)."""
    eta = 1.0 / (a * t + 1.0)
    norm = 0.0
    for k in range(nu.shape[0]):
        nu[k] += eta * (pi[k] - nu[k])
        if nu[k] > 0.0:
            norm += nu[k] * nu[k]
    if norm > 0.0:
        norm = math.sqrt(norm)
        for k in range(nu.shape[0]):
            w[k] = nu[k] / norm if nu[k] > 0.0 else 0.0


@strict
def online_irelief_steps(
    Xa, ia, ya, order, Xc, yc, ic, w, nu, t, a, sigma, pooled, miss_prior, outliers
):
    """Visit the anchors ``Xa[order]`` in turn; update ``w`` and ``nu`` in place.

    Step ``t`` (counting over the whole stream) with anchor ``n``:

    .. math::
        \\pi^{(t)} = \\gamma_n (\\bar m_n - \\bar h_n), \\quad
        \\eta^{(t)} = \\frac{1}{a t + 1}, \\quad
        \\nu^{(t)} = \\nu^{(t-1)} + \\eta^{(t)} (\\pi^{(t)} - \\nu^{(t-1)}), \\quad
        w^{(t)} = \\nu^+ / \\|\\nu^+\\|_2

    (online I-RELIEF, Sun 2007, section 5; ``w`` is kept when
    ``nu^+`` is zero).  Returns the new step count.
    """
    n_classes = miss_prior.shape[0]
    n_features = Xa.shape[1]
    m = np.empty(n_classes)
    s = np.empty(n_classes)
    v = np.empty((n_classes, n_features))
    buf = np.empty(CAND_BLOCK)
    pi = np.empty(n_features)
    Xs, ics, starts = by_class(Xc, yc, ic, n_classes)
    inv_sigma = 1.0 / sigma
    for r in range(order.shape[0]):
        n = order[r]
        m[:] = -np.inf
        s[:] = 0.0
        v[:] = 0.0
        lse_anchor(Xa[n], ia[n], Xs, ics, starts, w, inv_sigma, m, s, v, buf)
        pi[:] = 0.0
        irelief_anchor_term(m, s, v, ya[n], pooled, miss_prior, outliers, pi)
        t += 1
        _online_step(nu, w, pi, t, a)
    return t


@strict
def online_irelief_steps_general(
    Xa, ia, ya, order, Xc, yc, ic, w, nu, t, a, sigma, pooled, miss_prior, outliers, dm, kind
):
    """:func:`online_irelief_steps` for discrete features or missing values: each
    anchor's term from :func:`~.lse.lse_anchor_general` and, with missing values
    (``MISSING``), :func:`~dmargin.engine.kernels.terms.irelief_anchor_term_missing`
    (IRelief's rule).  Compiled only for such data."""
    n_classes = miss_prior.shape[0]
    n_features = Xa.shape[1]
    width = 2 * n_features if kind == MISSING else n_features
    m = np.empty(n_classes)
    s = np.empty(n_classes)
    v = np.empty((n_classes, width))
    buf = np.empty(CAND_BLOCK)
    pi = np.empty(n_features)
    Xs0, Ps, ics, starts, cm, dmk = general_rows(Xc, yc, ic, n_classes, dm)
    Xa0, Pa = split_missing(Xa)
    inv_sigma = 1.0 / sigma
    for r in range(order.shape[0]):
        n = order[r]
        m[:] = -np.inf
        s[:] = 0.0
        v[:] = 0.0
        lse_anchor_general(
            Xa0[n], Pa[n], ia[n], Xs0, Ps, ics, starts, w, inv_sigma, cm, dmk, kind, m, s, v, buf
        )
        pi[:] = 0.0
        if kind == MISSING:
            irelief_anchor_term_missing(m, s, v, ya[n], pooled, miss_prior, outliers, pi)
        else:
            irelief_anchor_term(m, s, v, ya[n], pooled, miss_prior, outliers, pi)
        t += 1
        _online_step(nu, w, pi, t, a)
    return t


# Simba (Gilad-Bachrach, Navot & Tishby 2004): sequential over samples as well.


@strict
def _nearest(X, y, n, w2):
    """Squared weighted distances to ``n``'s nearest hit and miss, and their rows.

    ``||z||_w^2 = sum_j w_j^2 z_j^2``; ``n`` itself is excluded by index;
    ties go to the lower row.  A missing hit or miss has index -1.
    """
    best_h, best_m = math.inf, math.inf
    ih, im = -1, -1
    for i in range(X.shape[0]):
        if i == n:
            continue
        d = 0.0
        for j in range(X.shape[1]):
            z = X[n, j] - X[i, j]
            d += w2[j] * z * z
        if y[i] == y[n]:
            if d < best_h:
                best_h, ih = d, i
        elif d < best_m:
            best_m, im = d, i
    return best_h, ih, best_m, im


@strict
def simba_steps(X, y, order, sigmoid, beta, w):
    """Simba's steps over the visiting ``order`` from the weights ``w`` (updated in
    place, and returned).

    Step (paper's, with the 1/2 of ``theta``): ``w_j += u'(theta) * 1/2 *
    ((x_j - nm_j)^2 / ||x - nm||_w - (x_j - nh_j)^2 / ||x - nh||_w) * w_j``.
    A sample without a hit or at distance 0 from its hit or miss is skipped,
    as the authors' code does.
    """
    a = X.shape[1]
    w2 = np.empty(a)
    for j in range(a):
        w2[j] = w[j] * w[j]
    for t in range(order.shape[0]):
        n = order[t]
        dh2, ih, dm2, im = _nearest(X, y, n, w2)
        if ih < 0 or im < 0 or dh2 <= 0.0 or dm2 <= 0.0:
            continue
        dh, dm = math.sqrt(dh2), math.sqrt(dm2)
        up = 1.0
        if sigmoid:
            e = math.exp(-beta * 0.5 * (dm - dh))
            up = beta * e / ((1.0 + e) * (1.0 + e))
        for j in range(a):
            zm = X[n, j] - X[im, j]
            zh = X[n, j] - X[ih, j]
            w[j] += up * 0.5 * (zm * zm / dm - zh * zh / dh) * w[j]
        for j in range(a):
            w2[j] = w[j] * w[j]
    return w


#: Row-features one call of :func:`simba_steps` reads at most (a fraction of a
#: second): between calls the driver's thread sees a ``KeyboardInterrupt``.
SIMBA_CALL_WORK = 1e8


def simba_run(X, y, order, sigmoid, beta):
    """One Simba run from ``w = 1`` over the visiting ``order``; returns ``w``.

    The steps run in calls of at most :data:`SIMBA_CALL_WORK` (each step reads
    every row), the same steps in the same order as one call.
    """
    w = np.ones(X.shape[1])
    step = max(1, int(SIMBA_CALL_WORK // max(1, X.shape[0] * X.shape[1])))
    for start in range(0, order.shape[0], step):
        simba_steps(X, y, order[start : start + step], sigmoid, beta, w)
    return w


def _margins(X, y, w2):
    """``d_m(x) - d_h(x)`` under ``w`` for every sample, NaN without hit or miss."""
    out = np.empty(X.shape[0])
    for n in numba.prange(X.shape[0]):
        dh2, ih, dm2, im = _nearest(X, y, n, w2)
        out[n] = math.sqrt(dm2) - math.sqrt(dh2) if ih >= 0 and im >= 0 else np.nan
    return out


MARGINS = twins(_margins)


def simba_margins(X, y, w2):
    """``d_m(x) - d_h(x)`` under the squared weights ``w2`` for every sample."""
    # A pair's step (squares, a compare) costs about 5 of the Relief kernels'.
    return pick(MARGINS, X.shape[0] ** 2 * X.shape[1], cost=5.0)(X, y, w2)


# ---------------------------------------------------------------------------
# LDM dual coordinate descent (the official package's ``solve_cd``)
# ---------------------------------------------------------------------------


@helper
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


@helper
def _end_of_pass(pg_max, pg_min, eps, n_active, m):
    """The official solver's end of a pass: ``(converged, n_active, pg_max_old, pg_min_old)``.

    Within ``eps`` with every coordinate active: converged.  Within ``eps``
    while some are shrunk: all coordinates come back for another pass.
    """
    if pg_max - pg_min <= eps:
        if n_active == m:
            return True, n_active, np.inf, -np.inf
        return False, m, np.inf, -np.inf
    return False, n_active, pg_max if pg_max > 0.0 else np.inf, pg_min if pg_min < 0.0 else -np.inf


@helper
def _descent(H, g, Z, V, w, h, C, eps, max_iter, seed):
    """The official ``solve_cd`` loop over ``0 <= b <= C`` from ``b = 0``: random order,
    shrinking, and the stop ``max PG - min PG <= eps``.

    Dual (``Z`` has no rows): the gradient ``g`` is kept and updated
    (``g += delta H[i]``), the curvature is ``H[i, i]``.  Primal (``Z`` has
    rows): ``g_i = z_i . w - 1`` from ``w``, which is updated
    (``w += delta v_i``), the curvature is ``h[i]``.  Returns ``(beta,
    passes, converged)``.
    """
    primal = Z.shape[0] > 0
    m = Z.shape[0] if primal else g.shape[0]
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
            if primal:
                gi, hi = -1.0, h[i]
                for k in range(Z.shape[1]):
                    gi += Z[i, k] * w[k]
            else:
                gi, hi = g[i], H[i, i]
            shrink, pg = _projected(gi, beta[i], C, pg_max_old, pg_min_old)
            if shrink:
                n_active -= 1
                active[s], active[n_active] = active[n_active], active[s]
                continue
            pg_max = max(pg_max, pg)
            pg_min = min(pg_min, pg)
            if abs(pg) > 1e-12 and hi > 1e-12:
                new = min(max(beta[i] - gi / hi, 0.0), C)
                delta = new - beta[i]
                beta[i] = new
                if primal:
                    for k in range(Z.shape[1]):
                        w[k] += delta * V[i, k]
                else:
                    for r in range(m):
                        g[r] += delta * H[i, r]  # H is symmetric: read row i, contiguous
            s += 1
        done, n_active, pg_max_old, pg_min_old = _end_of_pass(pg_max, pg_min, eps, n_active, m)
        if done:
            return beta, it, True
    return beta, max_iter, False


@helper
def ldm_dcd(H, g, C, eps, max_iter, seed):
    """Minimise ``1/2 b^T H b + q^T b`` over ``0 <= b <= C`` from ``b = 0``.

    ``H`` must be symmetric (its rows are read as columns).  ``g`` is the
    gradient at ``b = 0`` (``q``) and is updated in place.  Returns ``(beta,
    passes, converged)``.
    """
    none = np.empty((0, 0))
    return _descent(H, g, none, none, g[:0], g[:0], C, eps, max_iter, seed)


@helper
def ldm_dcd_linear(Z, V, w, C, eps, max_iter, seed):
    """The same descent in the primal ``w`` (the dual with ``G = X X^T``), O(d) per coordinate.

    Row ``z_i = y_i x_i`` of ``Z``; row ``v_i = Q_d^-1 z_i`` of ``V``; ``w``
    starts at ``(lambda2 / m) sum_i v_i`` and is updated in place.  The
    gradient is ``g_i = z_i . w - 1`` and ``H_ii = z_i . v_i``.
    """
    m, d = Z.shape
    h = np.empty(m)
    for i in range(m):
        acc = 0.0
        for k in range(d):
            acc += Z[i, k] * V[i, k]
        h[i] = acc
    none = np.empty((0, 0))
    return _descent(none, h[:0], Z, V, w, h, C, eps, max_iter, seed)
