"""Brute-force NumPy references for the Relief family.

Every function here is written for clarity, not speed: O(N^2) double loops over
anchors ``n`` and candidates ``i``, each line mirroring an equation of

* Y. Sun, "Iterative RELIEF for Feature Weighting: Algorithms, Theories, and
  Applications", IEEE TPAMI 29(6), 2007 (I-RELIEF and Relief; the equation,
  section and figure numbers below are this paper's), and
* M. Robnik-Šikonja, I. Kononenko, "Theoretical and Empirical Analysis of
  ReliefF and RReliefF", Machine Learning 53, 2003, Fig. 3 (ReliefF, with the
  semantics of Weka's ``ReliefFAttributeEval``),

with dmargin's numerical rules (below) where the papers are silent.

Nothing is imported from ``dmargin``: these functions are the oracle the library is
tested against (``tests/test_reference.py``), so they must not share its code.

Conventions shared by all functions
-----------------------------------
* ``X`` is an ``(N, A)`` array that is used as given (no scaling inside, except in
  :func:`minmax_scale`); ``y`` is any array of hashable labels (strings allowed).
* Sample ``n`` is never its own neighbour: it is excluded **by index**, never by
  "distance == 0", so an exact duplicate of ``x_n`` is a regular candidate
  (dmargin's rule: dropping zero distances would also drop a duplicate that
  carries another label).
* Soft-max probabilities use log-sum-exp, so no ``exp(-d / sigma)`` underflows to
  an all-zero row (dmargin's rule).
* Ties in hard nearest-neighbour searches are broken by the lower row index.
"""

import numpy as np

__all__ = [
    "minmax_scale",
    "irelief",
    "online_irelief",
    "relieff",
    "relief",
]


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def knn_lists(Xa, ia, Xc, yc, ic, n_classes, k):
    """Every anchor's ``k`` nearest rows of each class by (Manhattan distance, index),
    the anchor itself left out, from all pairs: ``(dist, idx)``, ``inf`` / ``-1`` in
    slots not filled (the k-nearest tiles' lists)."""
    dist = np.full((len(Xa), n_classes, k), np.inf)
    idx = np.full((len(Xa), n_classes, k), -1)
    for a in range(len(Xa)):
        full = np.abs(Xc - Xa[a]).sum(axis=1)
        for c in range(n_classes):
            members = np.flatnonzero((yc == c) & (ic != ia[a]))
            order = members[np.lexsort((ic[members], full[members]))][:k]
            dist[a, c, : len(order)] = full[order]
            idx[a, c, : len(order)] = ic[order]
    return dist, idx


def _logsumexp(values):
    """Return ``log(sum(exp(values)))`` computed stably; ``-inf`` for no values.

    dmargin's numerical rule: ``LSE(v) = m + log(sum(exp(v - m)))`` with
    ``m = max(v)``, so no ``exp`` of a large negative number is ever summed
    unnormalised.
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return -np.inf
    largest = values.max()
    return largest + np.log(np.sum(np.exp(values - largest)))


def _abs_difference(X, n, i):
    """Return the vector ``|x_n - x_i|`` (Sun 2007, section 2)."""
    return np.abs(X[n] - X[i])


def _weighted_manhattan(X, n, i, w):
    """Return ``d_w(n, i) = sum_k w_k |x_nk - x_ik|`` (Sun 2007, section 3).

    This is the distance ``||x_n - x_i||_w`` used in eqs. (8)-(10) of
    Sun (2007).
    """
    diff = _abs_difference(X, n, i)
    distance = 0.0
    for k in range(X.shape[1]):
        distance += w[k] * diff[k]
    return distance


def _manhattan(X, n, i):
    """Return the unweighted Manhattan distance ``sum_k |x_nk - x_ik|``."""
    return _weighted_manhattan(X, n, i, np.ones(X.shape[1]))


def _normalise_positive_part(z):
    """Return ``z^+ / ||z^+||_2``, or zeros if ``z^+`` is zero (eqs. (6), (12)).

    Eq. (6) of Sun (2007) (Relief's closed form) and eq. (12)
    (the I-RELIEF M-step) both have this form.
    """
    z_plus = np.maximum(z, 0.0)
    norm = np.sqrt(np.sum(z_plus**2))
    if norm == 0.0:
        return np.zeros_like(z_plus)
    return z_plus / norm


def _class_priors(y):
    """Return ``{c: P(c)}`` with ``P(c) = N_c / N``, the empirical class frequency."""
    classes = np.unique(y)
    return {c: np.sum(y == c) / len(y) for c in classes}


def _nearest_by_distance(candidates, distance, k):
    """Return the ``k`` candidates with the smallest distance, ties by lower index."""
    ordered = sorted(candidates, key=lambda i: (distance[i], i))
    return ordered[:k]


# ---------------------------------------------------------------------------
# Scaling
# ---------------------------------------------------------------------------


def minmax_scale(X):
    """Min-max scale every feature to [0, 1] over the given ``X``.

    ``x'_nk = (x_nk - min_k) / (max_k - min_k)``; a constant feature
    (``max_k == min_k``) becomes all zeros (dmargin's rule; Weka's ReliefF gives a
    zero range a diff of 0).

    Parameters
    ----------
    X : array-like of shape (N, A)
        Raw features.

    Returns
    -------
    X_scaled : ndarray of shape (N, A)
        Scaled copy of ``X``.
    """
    X = np.asarray(X, dtype=float)
    N, A = X.shape
    X_scaled = np.zeros((N, A))
    for k in range(A):
        low = np.min(X[:, k])
        high = np.max(X[:, k])
        if high == low:
            continue
        for n in range(N):
            X_scaled[n, k] = (X[n, k] - low) / (high - low)
    return X_scaled


# ---------------------------------------------------------------------------
# I-RELIEF: the E-step for one anchor
# ---------------------------------------------------------------------------


def _expected_difference(X, n, members, logit):
    """Soft nearest-neighbour expectation of ``|x_n - x_i|`` over a set.

    ``sum_{i in S} P_ni |x_n - x_i|`` with
    ``P_ni = exp(l_ni - LSE_{k in S} l_nk)``: ``hbar_n`` with ``S = H_n`` (eq. (9)
    of Sun 2007), ``mbar_n`` with ``S = M_n`` (eq. (8)).  An empty set gives the
    zero vector (dmargin's rule: a sample alone in its class has no hit term).
    """
    total = np.zeros(X.shape[1])
    if len(members) == 0:
        return total
    lse = _logsumexp([logit[i] for i in members])
    for i in members:
        probability = np.exp(logit[i] - lse)
        total += probability * _abs_difference(X, n, i)
    return total


def _anchor_statistic(X, y, n, w, sigma, candidates, multiclass, outliers, priors):
    """Return ``pi_n = gamma_n (mbar_n - hbar_n)`` for one anchor ``n``.

    This is the summand of eq. (11)/(12) of Sun (2007) and the
    ``pi^(t)`` of the online algorithm (eq. (24)), computed with the current
    weights ``w`` over the candidate rows ``candidates`` (the anchor itself is
    excluded by index).

    * ``l_ni = -d_w(n, i) / sigma`` (kernel ``f(d) = exp(-d / sigma)``).
    * ``H_n = {i != n : y_i == y_n}``, ``M_n = {i : y_i != y_n}`` (§3 of the paper).
    * ``multiclass="margin"`` (I-RELIEF-2, eq. (21)): one soft-max over all misses.
    * ``multiclass="relieff"`` (I-RELIEF-1, eq. (20) with ReliefF's weight
      ``P(c) / (1 - P(y_n))`` in place of the printed ``P(c) / (1 - P(c))``, so
      the weights sum to 1: dmargin's choice): a soft-max within each other class
      ``c``, weighted by ``P(c) / (1 - P(y_n))``.  If a class has no candidate,
      the weights are renormalised over the classes that remain (dmargin's rule); with
      all rows as candidates this never happens.
    * ``gamma_n = 1 - P_o(o_n = 0) = sum_{H_n} e^l / sum_{i != n} e^l`` (eq. (10)),
      as ``exp(LSE_H - LSE_all)``; 0 when ``H_n`` is empty; 1 when
      ``outliers=False``.
    """
    others = [i for i in candidates if i != n]
    logit = {i: -_weighted_manhattan(X, n, i, w) / sigma for i in others}
    hits = [i for i in others if y[i] == y[n]]
    misses = [i for i in others if y[i] != y[n]]
    if len(misses) == 0:
        raise ValueError(f"anchor {n} has no miss among the candidates")

    # eq. (9): expected nearest-hit difference
    hbar = _expected_difference(X, n, hits, logit)

    # eq. (8): expected nearest-miss difference
    if multiclass == "margin":
        mbar = _expected_difference(X, n, misses, logit)
    elif multiclass == "relieff":
        other_classes = [c for c in priors if c != y[n]]
        present = [c for c in other_classes if any(y[i] == c for i in misses)]
        if len(present) == len(other_classes):
            denominator = 1.0 - priors[y[n]]
        else:
            denominator = sum(priors[c] for c in present)
        mbar = np.zeros(X.shape[1])
        for c in present:
            members_c = [i for i in misses if y[i] == c]
            mbar += (priors[c] / denominator) * _expected_difference(X, n, members_c, logit)
    else:
        raise ValueError(f"unknown multiclass mode {multiclass!r}")

    # eq. (10): probability that x_n is not an outlier
    if outliers:
        if len(hits) == 0:
            gamma = 0.0
        else:
            lse_hits = _logsumexp([logit[i] for i in hits])
            lse_all = _logsumexp([logit[i] for i in others])
            gamma = np.exp(lse_hits - lse_all)
    else:
        gamma = 1.0

    return gamma * (mbar - hbar)


# ---------------------------------------------------------------------------
# Batch I-RELIEF
# ---------------------------------------------------------------------------


def irelief(
    X,
    y,
    sigma=2.0,
    max_iter=100,
    tol=1e-3,
    multiclass="margin",
    outliers=True,
    w0=None,
    anchors=None,
):
    """Batch I-RELIEF (Fig. 2 of Sun 2007), brute force.

    Each iteration computes, with the current ``w``,
    ``nu = (1/N) sum_n gamma_n (mbar_n - hbar_n)`` (eq. (11)) and sets
    ``w_new = nu^+ / ||nu^+||_2`` (eq. (12)); if ``nu^+`` is all zero, ``w_new`` is
    the zero vector and the loop stops after recording the change.  The change
    ``||w_new - w_old||_2`` is appended to ``history``; the loop stops when it is
    below ``tol`` or after ``max_iter`` updates (Fig. 2, step (6), with the L2 norm:
    dmargin's choice).

    Parameters
    ----------
    X : array-like of shape (N, A)
        Features, already scaled (no scaling is done here).
    y : array-like of shape (N,)
        Labels, any hashable type.
    sigma : float, default=2.0
        Kernel width of ``f(d) = exp(-d / sigma)``.
    max_iter : int, default=100
        Maximum number of weight updates ``T``.
    tol : float, default=1e-3
        Stopping threshold ``theta`` on ``||w^(t) - w^(t-1)||_2``.
    multiclass : {"margin", "relieff"}, default="margin"
        I-RELIEF-2 (eq. (21)) or I-RELIEF-1 (eq. (20)).
    outliers : bool, default=True
        Use ``gamma_n`` of eq. (10); if False, ``gamma_n = 1``.
    w0 : array-like of shape (A,), default=None
        Initial weights; ``ones(A) / A`` if None (Fig. 2, step (1)).
    anchors : list of int, default=None
        The rows whose terms are averaged (a sample of anchors, each against
        all N rows); every row if None.

    Returns
    -------
    result : dict
        ``w`` (final weights), ``n_iter`` (number of updates done),
        ``history`` (list of the changes, one per update) and ``nu`` (the ``nu``
        of the last update).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    N, A = X.shape
    priors = _class_priors(y)
    w = np.ones(A) / A if w0 is None else np.asarray(w0, dtype=float).copy()
    candidates = list(range(N))

    history = []
    n_iter = 0
    nu = np.zeros(A)
    while True:
        # Fig. 2, steps (3)-(4) and eq. (11)
        nu = np.zeros(A)
        visited = range(N) if anchors is None else anchors
        for n in visited:
            nu += _anchor_statistic(X, y, n, w, sigma, candidates, multiclass, outliers, priors)
        nu = nu / len(visited)

        # eq. (12)
        w_new = _normalise_positive_part(nu)
        change = np.sqrt(np.sum((w_new - w) ** 2))
        history.append(change)
        n_iter += 1
        w = w_new

        # Fig. 2, step (6)
        if not np.any(w_new > 0):
            break
        if change < tol or n_iter == max_iter:
            break

    return dict(w=w, n_iter=n_iter, history=history, nu=nu)


# ---------------------------------------------------------------------------
# Online I-RELIEF
# ---------------------------------------------------------------------------


def online_irelief(
    X,
    y,
    order,
    sigma=2.0,
    a=10.0,
    outliers=True,
    multiclass="margin",
    candidates=None,
):
    """Online I-RELIEF (Fig. 3 of Sun 2007), brute force.

    Starting from ``nu = 0`` and ``w = ones(A) / A``, step ``t = 1, 2, ...`` takes the
    anchor ``n = order[t - 1]`` and computes ``pi = gamma_n (mbar_n - hbar_n)`` with
    the current ``w`` over the candidate rows (eq. (24)); then
    ``nu <- nu + eta (pi - nu)`` with ``eta = 1 / (a t + 1)`` (eq. (27), PyMVPA's
    rate, dmargin's choice: ``eta < 1`` at ``t = 1``); and, if ``nu^+`` has a
    positive entry,
    ``w = nu^+ / ||nu^+||_2`` (Fig. 3, step (8)), otherwise ``w`` is unchanged.

    Parameters
    ----------
    X : array-like of shape (N, A)
        Features, already scaled.
    y : array-like of shape (N,)
        Labels.
    order : sequence of int
        The anchor row indices in the order they are visited (all passes
        concatenated).
    sigma : float, default=2.0
        Kernel width.
    a : float, default=10.0
        Learning-rate constant in ``eta = 1 / (a t + 1)``.
    outliers : bool, default=True
        Use ``gamma_n`` of eq. (10); if False, ``gamma_n = 1``.
    multiclass : {"margin", "relieff"}, default="margin"
        As in :func:`irelief`.
    candidates : array-like of int, default=None
        Rows used as hits and misses; all rows if None.  The anchor itself is
        always excluded by index.  Class priors ``P(c)`` are ``N_c / N`` over all
        of ``y``.

    Returns
    -------
    result : dict
        ``w`` (final weights) and ``nu`` (final running statistic).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    N, A = X.shape
    priors = _class_priors(y)
    if candidates is None:
        candidates = list(range(N))
    else:
        candidates = [int(i) for i in candidates]

    # Fig. 3, step (1)
    nu = np.zeros(A)
    w = np.ones(A) / A
    for t, n in enumerate(order, start=1):
        # Fig. 3, steps (4)-(6)
        pi = _anchor_statistic(X, y, int(n), w, sigma, candidates, multiclass, outliers, priors)
        # Fig. 3, step (7), eq. (27)
        eta = 1.0 / (a * t + 1.0)
        nu = nu + eta * (pi - nu)
        # Fig. 3, step (8)
        if np.any(nu > 0):
            w = _normalise_positive_part(nu)
    return dict(w=w, nu=nu)


# ---------------------------------------------------------------------------
# ReliefF and Relief
# ---------------------------------------------------------------------------


def relieff(X, y, n_neighbors=10, anchors=None):
    """ReliefF with Weka ``ReliefFAttributeEval`` semantics, brute force.

    Robnik-Šikonja & Kononenko (2003), Fig. 3, as Weka implements it.  Every instance is
    visited once, in row order (``m = N``).  With the Manhattan distance
    ``sum_k |x_nk - x_ik|``, the ``k_H = min(k, #hits)`` nearest hits (same class,
    ``i != n``) and, for every other class ``C``, the ``k_C = min(k, N_C)``
    nearest members of ``C`` are found (ties by lower row index).  Then::

        W[A] -= sum_hits |x_nA - x_hA| / (N k_H)
        W[A] += sum_{C != c} P(C) / (1 - P(c)) * sum_j |x_nA - x_mjA| / (N k_C)

    with ``P`` the empirical class frequencies and ``c`` the anchor's class.  A
    singleton class contributes no hit term.  ``X`` is used as given: on
    [0, 1]-scaled data ``|x_nA - x_iA|`` is Weka's ``diff``.

    Parameters
    ----------
    X : array-like of shape (N, A)
        Features, already scaled.
    y : array-like of shape (N,)
        Labels.
    n_neighbors : int, default=10
        ``k``.
    anchors : list of int, default=None
        The instances visited (Weka's ``-M`` sample); every row if None.
        ``N`` in the formulas above is then their number.

    Returns
    -------
    W : ndarray of shape (A,)
        The (unnormalised) ReliefF weights.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    N, A = X.shape
    priors = _class_priors(y)
    k = n_neighbors

    W = np.zeros(A)
    visited = range(N) if anchors is None else anchors
    m_visits = len(visited)
    for n in visited:
        c = y[n]
        distance = {i: _manhattan(X, n, i) for i in range(N) if i != n}

        hits = [i for i in range(N) if i != n and y[i] == c]
        nearest_hits = _nearest_by_distance(hits, distance, k)
        k_H = len(nearest_hits)
        for h in nearest_hits:
            W -= _abs_difference(X, n, h) / (m_visits * k_H)

        for C in priors:
            if C == c:
                continue
            members = [i for i in range(N) if y[i] == C]
            nearest_misses = _nearest_by_distance(members, distance, k)
            k_C = len(nearest_misses)
            for m in nearest_misses:
                W += priors[C] / (1.0 - priors[c]) * _abs_difference(X, n, m) / (m_visits * k_C)
    return W


def relief(X, y):
    """Relief (Kira & Rendell) in closed form, brute force.

    Sun (2007), section 2, eqs. (3)-(6):
    ``z = sum_n (|x_n - NM(x_n)| - |x_n - NH(x_n)|)`` and ``w = z^+ / ||z^+||_2``
    (zeros if ``z^+ = 0``).  ``NM`` is the nearest sample of any other class, ``NH``
    the nearest same-class sample other than ``n`` (Manhattan distance, ties by
    lower row index); with no hit the hit term is 0.

    Parameters
    ----------
    X : array-like of shape (N, A)
        Features, already scaled.
    y : array-like of shape (N,)
        Labels.

    Returns
    -------
    w : ndarray of shape (A,)
        The normalised Relief weights.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    N, A = X.shape

    z = np.zeros(A)
    for n in range(N):
        distance = {i: _manhattan(X, n, i) for i in range(N) if i != n}
        hits = [i for i in range(N) if i != n and y[i] == y[n]]
        misses = [i for i in range(N) if y[i] != y[n]]
        nearest_miss = _nearest_by_distance(misses, distance, 1)[0]
        z += _abs_difference(X, n, nearest_miss)
        if len(hits) > 0:
            nearest_hit = _nearest_by_distance(hits, distance, 1)[0]
            z -= _abs_difference(X, n, nearest_hit)
    return _normalise_positive_part(z)
