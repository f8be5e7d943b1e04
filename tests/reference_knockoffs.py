"""Brute-force NumPy references for the knockoff filter.

The knockoff+ threshold of Barber & Candès (2015) by scanning every candidate
``t``, the e-BH procedure of Wang & Ramdas (2022) by scanning every ``k``, and
the e-values of derandomised knockoffs (Ren & Barber, 2024) by their
definition.  Nothing is imported from ``dmargin``.
"""

import math

import numpy as np


def knockoff_threshold(W, q, offset=1):
    """``min {t in {|W_j| > 0} : (offset + #{W <= -t}) / max(1, #{W >= t}) <= q}``."""
    W = [float(w) for w in W]
    best = math.inf
    for t in {abs(w) for w in W if w != 0}:
        below = sum(1 for w in W if w <= -t)
        above = sum(1 for w in W if w >= t)
        if (offset + below) / max(1, above) <= q and t < best:
            best = t
    return best


def ebh(evalues, q):
    """The indices of the ``k`` largest e-values, ``k = max {k : e_(k) >= A / (q k)}``."""
    e = [float(v) for v in evalues]
    a = len(e)
    ranked = sorted(e, reverse=True)
    k = 0
    for i in range(1, a + 1):
        if ranked[i - 1] >= a / (q * i):
            k = i
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    order = sorted(range(a), key=lambda j: -e[j])
    return np.array(sorted(order[:k]), dtype=np.int64)


def evalues(W, q, offset=1):
    """``A 1{W_j >= T} / (1 + #{W_k <= -T})`` with ``T`` the knockoff+ threshold at ``q``."""
    W = np.asarray(W, dtype=np.float64)
    t = knockoff_threshold(W, q, offset)
    out = np.zeros(W.size)
    if math.isinf(t):
        return out
    negatives = sum(1 for w in W if w <= -t)
    for j, w in enumerate(W):
        out[j] = W.size * (1.0 if w >= t else 0.0) / (1 + negatives)
    return out
