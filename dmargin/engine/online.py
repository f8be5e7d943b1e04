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
from .tiles import _CAND_BLOCK, by_class, lse_anchor


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
