"""Brute-force numpy references for the regression targets of the Relief family.

One anchor at a time, every distance to every row, plain loops: no tiles,
no merges, no bisection.  Features are range-scaled as dmargin's
``scale="minmax"`` (a constant feature maps to 0).
"""

import numpy as np


def minmax(X):
    X = np.asarray(X, dtype=np.float64)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return (X - lo) / span


def _order(Xs, a):
    """Rows other than ``a`` by (Manhattan distance, row index)."""
    d = np.abs(Xs - Xs[a]).sum(axis=1)
    order = np.lexsort((np.arange(len(d)), d))
    return order[order != a]


def relieff_continuous(X, y, k, anchors=None):
    """skrebate 0.8.4's continuous-endpoint ReliefF (``_find_neighbors`` and
    ``compute_score``), divided by the number of anchors.

    The scan goes over the rows sorted by distance and then the anchor
    itself (skrebate puts it at distance ``sys.maxsize``), taking the first
    ``k`` hits (``|y_a - y_j| < std(y, ddof=1)``) and ``k`` misses.
    """
    Xs, y = minmax(X), np.asarray(y, dtype=np.float64)
    bound = np.std(y, ddof=1)
    anchors = np.arange(len(y)) if anchors is None else np.asarray(anchors)
    W = np.zeros(X.shape[1])
    for a in anchors:
        hits, misses = [], []
        for j in list(_order(Xs, a)) + [a]:
            if abs(y[a] - y[j]) < bound:
                if len(hits) < k:
                    hits.append(j)
            elif len(misses) < k:
                misses.append(j)
            if len(hits) >= k and len(misses) >= k:
                break
        term = np.zeros(X.shape[1])
        if hits:
            term -= np.abs(Xs[hits] - Xs[a]).sum(axis=0) / len(hits)
        if misses:
            term += np.abs(Xs[misses] - Xs[a]).sum(axis=0) / len(misses)
        W += term
    return W / len(anchors)


def rrelieff(X, y, k, sigma, anchors=None):
    """RReliefF as in Robnik-Sikonja & Kononenko (2003), Fig. 3, with
    ``d1 = exp(-(rank / sigma)^2)`` (``sigma=None``: ``1 / k``) normalised over
    the neighbours, ``diff(y) = |dy| / (max y - min y)``."""
    Xs, y = minmax(X), np.asarray(y, dtype=np.float64)
    anchors = np.arange(len(y)) if anchors is None else np.asarray(anchors)
    span = y.max() - y.min()
    a_ = X.shape[1]
    n_dc, n_da, n_dcda = 0.0, np.zeros(a_), np.zeros(a_)
    for a in anchors:
        near = _order(Xs, a)[:k]
        ranks = np.arange(1, len(near) + 1)
        d1 = np.ones(len(near)) if sigma is None else np.exp(-((ranks / sigma) ** 2))
        d = d1 / d1.sum()
        for j, dj in zip(near, d):
            dc = abs(y[a] - y[j]) / span
            da = np.abs(Xs[a] - Xs[j])
            n_dc += dc * dj
            n_da += da * dj
            n_dcda += dc * da * dj
    m = len(anchors)
    return n_dcda / n_dc - (n_da - n_dcda) / (m - n_dc)
