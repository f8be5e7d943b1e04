"""Sequential kernel of online I-RELIEF: one anchor at a time.

Each step needs the weights left by the previous step, so the stream runs
on the driver; the work per anchor is one row of the pairwise engine
(:func:`dmargin.engine.tiles.lse_anchor` against the candidate set) and one
anchor term (:func:`dmargin.engine.merge.irelief_anchor_term`).
"""

import math

import numba
import numpy as np

from .merge import irelief_anchor_term
from .tiles import _CAND_BLOCK, _jit, by_class, lse_anchor


@numba.njit(cache=True, nogil=True)
def online_irelief_steps(Xa, ia, ya, order, Xc, yc, ic, w, nu, t, a, sigma, pooled, miss_prior,
                         outliers):
    """Visit the anchors ``Xa[order]`` in turn; update ``w`` and ``nu`` in place.

    Step ``t`` (counting over the whole stream) with anchor ``n``:

    .. math::
        \\pi^{(t)} = \\gamma_n (\\bar m_n - \\bar h_n), \\quad
        \\eta^{(t)} = \\frac{1}{a t + 1}, \\quad
        \\nu^{(t)} = \\nu^{(t-1)} + \\eta^{(t)} (\\pi^{(t)} - \\nu^{(t-1)}), \\quad
        w^{(t)} = \\nu^+ / \\|\\nu^+\\|_2

    (``ALGORITHMS.md`` section 5, online I-RELIEF; ``w`` is kept when
    ``nu^+`` is zero).  Returns the new step count.
    """
    n_classes = miss_prior.shape[0]
    n_features = Xa.shape[1]
    m = np.empty(n_classes)
    s = np.empty(n_classes)
    v = np.empty((n_classes, n_features))
    buf = np.empty(_CAND_BLOCK)
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
        eta = 1.0 / (a * t + 1.0)
        norm = 0.0
        for k in range(n_features):
            nu[k] += eta * (pi[k] - nu[k])
            if nu[k] > 0.0:
                norm += nu[k] * nu[k]
        if norm > 0.0:
            norm = math.sqrt(norm)
            for k in range(n_features):
                w[k] = nu[k] / norm if nu[k] > 0.0 else 0.0
    return t


# Simba (ALGORITHMS.md section 7): sequential over samples as well.


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def simba_run(X, y, order, sigmoid, beta):
    """One Simba run from ``w = 1`` over the visiting ``order``; returns ``w``.

    Step (paper's, with the 1/2 of ``theta``): ``w_j += u'(theta) * 1/2 *
    ((x_j - nm_j)^2 / ||x - nm||_w - (x_j - nh_j)^2 / ||x - nh||_w) * w_j``.
    A sample without a hit or at distance 0 from its hit or miss is skipped,
    as the authors' code does.
    """
    a = X.shape[1]
    w = np.ones(a)
    w2 = np.ones(a)
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


def _margins(X, y, w2):
    """``d_m(x) - d_h(x)`` under ``w`` for every sample, NaN without hit or miss."""
    out = np.empty(X.shape[0])
    for n in numba.prange(X.shape[0]):
        dh2, ih, dm2, im = _nearest(X, y, n, w2)
        out[n] = math.sqrt(dm2) - math.sqrt(dh2) if ih >= 0 and im >= 0 else np.nan
    return out


_margins_serial, _margins_parallel = _jit(_margins)


def simba_margins(X, y, w2):
    """``d_m(x) - d_h(x)`` under the squared weights ``w2`` for every sample."""
    work = X.shape[0] ** 2 * X.shape[1]
    kernel = _margins_parallel if work > 1e7 else _margins_serial
    return kernel(X, y, w2)
