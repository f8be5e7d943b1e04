"""Brute-force references for boosting with stumps, the margin fraction and Simba.

Plain loops written like the equations: AdaBoost with decision stumps, the margin
and the margin fraction of Alshawabkeh, Aslam, Dy & Kaeli ("Feature weighting and
selection using hypothesis margin of boosting", ICDM 2012, eqs. 2-10), and Simba
(Gilad-Bachrach, Navot & Tishby, ICML 2004): no histograms, no cumulative sums.
"""

import math

import numpy as np


def exact_thresholds(col):
    """Midpoints between consecutive distinct values."""
    v = np.unique(col)
    return (v[:-1] + v[1:]) / 2.0


def quantile_thresholds(col, max_bins):
    """Midpoints of ``max_bins`` quantiles, distinct, below the maximum (sklearn's rule)."""
    t = []
    for q in np.linspace(0, 100, max_bins + 1)[1:-1]:
        e = np.percentile(col, q, method="midpoint")
        if e < col.max() and e not in t:
            t.append(e)
    return np.sort(np.array(t))


def stump_output(x, threshold, polarity):
    """``h(x) = polarity`` if ``x > threshold`` else ``-polarity``."""
    return np.array([polarity if v > threshold else -polarity for v in x])


def brute_stump(X, ys, D, thresholds):
    """Best stump by |edge| over every feature and threshold (loops).

    Returns ``(feature, threshold index, signed edge)``; ties to the lower
    feature then threshold.
    """
    best = (-1, -1, 0.0)
    for f in range(X.shape[1]):
        for b, th in enumerate(thresholds[f]):
            r = 0.0
            for i in range(X.shape[0]):
                h = 1.0 if X[i, f] > th else -1.0
                r += D[i] * ys[i] * h
            if abs(r) > abs(best[2]) or best[0] < 0:
                best = (f, b, r)
    return best


def brute_adaboost(X, ys, T, thresholds, D1):
    """Discrete AdaBoost with stumps (spec 8.1), ``ys`` in {-1, +1}."""
    D = np.asarray(D1, dtype=float) / np.sum(D1)
    out = []
    for _ in range(T):
        f, b, r = brute_stump(X, ys, D, thresholds)
        if f < 0 or abs(r) <= 1e-12:
            break
        s = 1.0 if r > 0 else -1.0
        r = abs(r)
        rc = min(r, 1 - 1e-10)
        alpha = 0.5 * math.log((1 + rc) / (1 - rc))
        th = thresholds[f][b]
        h = stump_output(X[:, f], th, s)
        out.append((f, th, s, alpha))
        D = D * np.exp(-alpha * ys * h)
        D = D / D.sum()
        if r >= 1 - 1e-10:
            break
    return out


def margins(X, ys, stumps):
    """``rho(x_i) = y_i sum_t alpha_t h_t(x_i) / sum_t |alpha_t|`` (eq. 3)."""
    total = sum(abs(a) for _, _, _, a in stumps)
    rho = np.zeros(X.shape[0])
    for i in range(X.shape[0]):
        F = sum(a * (s if X[i, f] > th else -s) for f, th, s, a in stumps)
        rho[i] = ys[i] * F / total
    return rho


def margin_fractions(X, ys, stumps, n_features):
    """MF_f (eq. 10) by its double sums."""
    num = np.zeros(n_features)
    den = 0.0
    for i in range(X.shape[0]):
        for f, th, s, a in stumps:
            v = ys[i] * a * (s if X[i, f] > th else -s)
            num[f] += v
            den += v
    return num / den


def contribution_ratios(stumps, n_features):
    """Gamma_f (eq. 7)."""
    out = np.zeros(n_features)
    for f, _, _, a in stumps:
        out[f] += a
    return out / sum(abs(a) for _, _, _, a in stumps)


def brute_simba(X, y, order, sigmoid=False, beta=1.0):
    """One Simba run (Gilad-Bachrach, Navot & Tishby 2004, the paper's step with its 1/2)
    with the given visiting order; a sample at distance 0 from its nearest hit or miss
    is skipped, as the authors' code does."""
    n, d = X.shape
    w = np.ones(d)
    for t in order:
        dist = np.array(
            [
                math.sqrt(sum(w[j] ** 2 * (X[t, j] - X[i, j]) ** 2 for j in range(d)))
                for i in range(n)
            ]
        )
        hits = [i for i in range(n) if i != t and y[i] == y[t]]
        misses = [i for i in range(n) if y[i] != y[t]]
        if not hits or not misses:
            continue
        nh = min(hits, key=lambda i: (dist[i], i))
        nm = min(misses, key=lambda i: (dist[i], i))
        dh, dm = dist[nh], dist[nm]
        if dh == 0 or dm == 0:
            continue
        theta = 0.5 * (dm - dh)
        up = 1.0
        if sigmoid:
            e = math.exp(-beta * theta)
            up = beta * e / (1 + e) ** 2
        grad = np.array(
            [
                0.5 * ((X[t, j] - X[nm, j]) ** 2 / dm - (X[t, j] - X[nh, j]) ** 2 / dh) * w[j]
                for j in range(d)
            ]
        )
        w = w + up * grad
    return w
