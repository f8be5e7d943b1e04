"""Brute-force I-RELIEF with discrete features and missing values, pair by pair.

The rule (``dmargin/engine/kernels/distance.py``, ``IRelief``'s Notes): the
difference of feature ``f`` is 0/1 for a discrete feature and ``|x_f - x'_f|``
(range-scaled) for a continuous one, NaN when either value is missing; a
pair's distance is ``A / n_present * sum_{f present} w_f z_f`` (a pair with
nothing in common is no neighbour); each expected hit and miss difference
of a feature is taken over the neighbours that have it, with their softmax
probabilities renormalised.  Written from the rule, sharing no code with
dmargin.
"""

import numpy as np


def minmax_scale(X):
    lo, hi = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
    span = np.where(hi - lo > 0, hi - lo, 1.0)
    return (X - lo) / span


def differences(X, n, discrete):
    """``Z[j, f]``: the difference of row ``n`` and row ``j`` on feature ``f`` (NaN missing)."""
    Z = np.abs(X[n] - X)
    Z[:, discrete] = np.where(np.isnan(Z[:, discrete]), np.nan, (Z[:, discrete] != 0) * 1.0)
    return Z


def _expectation(Z, logits, members):
    """Per feature, ``sum_j p_j z_jf / sum_j p_j`` over the members that have ``f``."""
    p = np.exp(logits[members] - logits[members].max())
    present = ~np.isnan(Z[members])
    mass = (p[:, None] * present).sum(axis=0)
    total = (p[:, None] * np.where(present, Z[members], 0.0)).sum(axis=0)
    return np.divide(total, mass, out=np.zeros(Z.shape[1]), where=mass > 0)


def _lse(values):
    top = values.max()
    return top + np.log(np.exp(values - top).sum())


def _anchor_term(X, codes, n, w, sigma, discrete, multiclass, outliers, priors):
    """``gamma_n (mbar_n - hbar_n)`` of anchor ``n`` against every other row."""
    N, A = X.shape
    Z = differences(X, n, discrete)
    present = ~np.isnan(Z)
    count = present.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = A * ((np.where(present, Z, 0.0) * w).sum(axis=1) / count)
    valid = (count > 0) & (np.arange(N) != n)
    logits = -d / sigma
    hits = np.flatnonzero(valid & (codes == codes[n]))
    misses = np.flatnonzero(valid & (codes != codes[n]))
    if misses.size == 0:
        return np.zeros(A)
    log_h = _lse(logits[hits]) if hits.size else -np.inf
    log_m = _lse(logits[misses])
    if outliers:
        gamma = 0.0 if hits.size == 0 else np.exp(log_h - np.logaddexp(log_h, log_m))
    else:
        gamma = 1.0
    hbar = _expectation(Z, logits, hits) if hits.size else np.zeros(A)
    if multiclass == "margin":
        mbar = _expectation(Z, logits, misses)
    else:
        present_classes = [c for c in np.unique(codes[misses])]
        norm = sum(priors[c] / (1 - priors[codes[n]]) for c in present_classes)
        mbar = sum(
            priors[c]
            / (1 - priors[codes[n]])
            / norm
            * _expectation(Z, logits, misses[codes[misses] == c])
            for c in present_classes
        )
    return gamma * (mbar - hbar)


def irelief_nu(X, codes, w, sigma, discrete, multiclass="margin", outliers=True):
    """One E-step: ``nu = (1/N) sum_n gamma_n (mbar_n - hbar_n)``."""
    N, A = X.shape
    priors = np.bincount(codes) / N
    nu = np.zeros(A)
    for n in range(N):
        nu += _anchor_term(X, codes, n, w, sigma, discrete, multiclass, outliers, priors)
    return nu / N


def irelief(X, y, sigma, max_iter, discrete, multiclass="margin", outliers=True):
    """``max_iter`` I-RELIEF iterations from uniform weights on range-scaled ``X``."""
    X = minmax_scale(np.asarray(X, dtype=float))
    codes = np.unique(y, return_inverse=True)[1]
    w = np.ones(X.shape[1]) / X.shape[1]
    for _ in range(max_iter):
        nu = irelief_nu(X, codes, w, sigma, discrete, multiclass, outliers)
        pos = np.maximum(nu, 0.0)
        w = pos / np.linalg.norm(pos)
    return w


def online_irelief(X, y, sigma, a, n_passes, outliers=True, multiclass="margin", discrete=None):
    """Online I-RELIEF with missing values, rows visited in order, every row a candidate."""
    X = minmax_scale(np.asarray(X, dtype=float))
    codes = np.unique(y, return_inverse=True)[1]
    N, A = X.shape
    priors = np.bincount(codes) / N
    discrete = np.zeros(A, dtype=bool) if discrete is None else discrete
    w = np.ones(A) / A
    nu = np.zeros(A)
    t = 0
    for _ in range(n_passes):
        for n in range(N):
            pi = _anchor_term(X, codes, n, w, sigma, discrete, multiclass, outliers, priors)
            t += 1
            nu = nu + (pi - nu) / (a * t + 1.0)
            pos = np.maximum(nu, 0.0)
            if np.any(pos > 0):
                w = pos / np.linalg.norm(pos)
    return w
