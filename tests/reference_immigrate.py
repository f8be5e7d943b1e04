"""Brute-force NumPy references for the IMMIGRATE family.

Every function here is written for clarity, not speed: O(N^2) double loops over
anchors ``n`` and candidates ``j``, each line mirroring an equation of

* R. Zhao, P. Hong, J. S. Liu, "IMMIGRATE: A Margin-Based Feature Selection
  Method with Interaction Terms", Entropy 22(3), 2020, sections 3.3-3.6 (the
  equation, section and algorithm numbers below are this paper's), and
* IM4E (Bei & Hong 2015) as the authors' R package Immigrate 0.2.1 computes it
  (the paper's text is not public),

with dmargin's numerical rules (below) where the paper and the package are
silent or break (underflow, NaN).

Nothing is imported from ``dmargin``: these functions are the oracle the library is
tested against (``tests/test_immigrate_reference.py``), so they must not share its
code.

Conventions shared by all functions
-----------------------------------
* ``X`` is an ``(N, A)`` array used as given (no scaling inside, except in
  :func:`standard_scale`); ``y`` is any array of hashable labels (strings allowed);
  classes are ordered as ``np.unique(y)``.
* ``z_nj = |x_n - x_j|`` (element-wise); IMMIGRATE's distance is the
  quadratic-Manhattan ``q_nj = z_nj^T W z_nj`` (eq. 3.3), IM4E's the weighted
  Manhattan ``d_nj = w^T z_nj`` (the R package's IM4E).
* Hits ``H_n = {j != n : y_j = y_n}``, misses ``M_n = {j : y_j != y_n}`` (all other
  classes pooled, also for more than two classes, as the R package does).  Sample ``n``
  is excluded **by index**, never by "distance == 0", so an exact duplicate of
  ``x_n`` is a regular candidate (dmargin's rule).
* Soft-maxes use log-sum-exp and ``p log p`` is computed as ``p (l - LSE)``, so
  ``0 log 0 = 0`` and nothing underflows to NaN (dmargin's rule; the R package's
  plain ``exp`` gives NaN there).  A sample without hits contributes no hit term,
  as in the R package.
* ``sample_weight`` is the ``D(x_n)`` of eq. 3.19, used as given (not normalised);
  ``None`` means ``D_n = 1`` (eq. 3.5).
"""

import numpy as np

__all__ = [
    "standard_scale",
    "immigrate_step",
    "immigrate",
    "immigrate_decision",
    "im4e_step",
    "im4e",
    "im4e_decision",
    "predict_from_scores",
    "proba_from_scores",
    "project_onto_simplex",
    "im4e_immigrate",
    "bim",
    "bim_predict",
]


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def _logsumexp(values):
    """Return ``log(sum(exp(values)))`` computed stably; ``-inf`` for no values.

    dmargin's numerical rule: ``LSE(v) = m + log(sum(exp(v - m)))`` with
    ``m = max(v)``.
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return -np.inf
    largest = values.max()
    return largest + np.log(np.sum(np.exp(values - largest)))


def _abs_difference(a, b):
    """Return the vector ``|a - b|`` (``z`` in eq. 3.3)."""
    return np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))


def _quadratic_manhattan(a, b, W):
    """Return ``q(a, b) = |a - b|^T W |a - b|`` (eq. 3.3)."""
    z = _abs_difference(a, b)
    return z @ W @ z


def _weighted_manhattan(a, b, w):
    """Return ``d_w(a, b) = w^T |a - b|`` (IM4E's distance; ``w`` not squared)."""
    z = _abs_difference(a, b)
    return w @ z


def _log_softmax(logits, members):
    """Return ``{j: l_j - LSE_{k in S} l_k}`` for ``j`` in the set ``S = members``.

    These are the logarithms of the soft-max probabilities of eq. 3.6 (with
    ``l = -q / sigma``) or of IM4E (``l = -d / sigma``).
    """
    lse = _logsumexp([logits[j] for j in members])
    return {j: logits[j] - lse for j in members}


def _sample_weights(sample_weight, N):
    """Return ``D_n`` as a float array: ones if ``None`` (eq. 3.5), else as given."""
    if sample_weight is None:
        return np.ones(N)
    return np.asarray(sample_weight, dtype=float).copy()


def _hits_and_misses(y, n):
    """Return ``(H_n, M_n)``: ``{j != n : y_j = y_n}`` and ``{j : y_j != y_n}``."""
    N = len(y)
    hits = [j for j in range(N) if j != n and y[j] == y[n]]
    misses = [j for j in range(N) if y[j] != y[n]]
    return hits, misses


def _frobenius_normalised(W):
    """Return ``W / ||W||_F`` (the constraint ``||W||_F = 1`` of eq. 3.5)."""
    return W / np.sqrt(np.sum(W**2))


# ---------------------------------------------------------------------------
# Scaling
# ---------------------------------------------------------------------------


def standard_scale(X, fitted_on=None):
    """Standardise every feature: ``(x - mean) / std`` with the population std.

    The paper normalises every continuous feature to mean 0 and variance 1
    (section 4; dmargin's ``scale="standard"``).  A constant feature (std 0)
    becomes all zeros (dmargin's rule).

    Parameters
    ----------
    X : array-like of shape (M, A)
        Raw features to scale.
    fitted_on : array-like of shape (N, A), default=None
        The (training) rows whose mean and std are used; ``X`` itself if None.

    Returns
    -------
    X_scaled : ndarray of shape (M, A)
        Scaled copy of ``X``.
    """
    X = np.asarray(X, dtype=float)
    base = X if fitted_on is None else np.asarray(fitted_on, dtype=float)
    N = base.shape[0]
    M, A = X.shape
    X_scaled = np.zeros((M, A))
    for k in range(A):
        if np.all(base[:, k] == base[0, k]):
            continue  # constant feature -> 0 (not (x - mean) / tiny rounding error)
        mean = np.sum(base[:, k]) / N
        std = np.sqrt(np.sum((base[:, k] - mean) ** 2) / N)
        for n in range(M):
            X_scaled[n, k] = (X[n, k] - mean) / std
    return X_scaled


# ---------------------------------------------------------------------------
# IMMIGRATE
# ---------------------------------------------------------------------------


def immigrate_step(X, y, W, sigma=1.0, sample_weight=None):
    """One IMMIGRATE iteration (Algorithm 2 of Zhao, Hong & Liu 2020), brute force.

    Step 1 (eq. 3.6), for every anchor ``n`` with ``l_nj = -q_nj / sigma``:
    ``alpha_nj = softmax_{j in H_n}(l_nj)`` and ``beta_nj = softmax_{j in M_n}(l_nj)``.

    Step 2 (Theorem 3.1; eq. 3.19 for the weights ``D_n``)::

        Sigma = sum_n D_n ( sum_{H_n} alpha z z^T - sum_{M_n} beta z z^T )
        Sigma psi_i = mu_i psi_i,  eta = (-mu)^+                       (eq. 3.17)
        W~ = sum_i eta_i psi_i psi_i^T                                 (eq. 3.8)
        W~[W~ < 0] = 0;  W_new = W~ / ||W~||_F     (W >= 0 of eq. 3.5, clipped as the R package)

    The normalisation of ``eta`` in eq. 3.17 cancels in the Frobenius
    normalisation.  If ``W~`` is all zero (no negative ``mu_i``), ``W_new`` is
    ``None``: the caller keeps the previous ``W`` (dmargin's rule: never NaN).

    Entropy term of eqs. 3.5 / 3.19 (``E_miss - E_hit`` summed over ``n``)::

        E = sum_n D_n ( sum_{H_n} alpha log alpha - sum_{M_n} beta log beta )

    with ``p log p = p (l - LSE)``.  The cost of eq. 3.5 / 3.19, evaluated with
    ``W_new`` and this step's ``alpha``, ``beta``, is
    ``cost = trace(W_new Sigma) + sigma E`` (by eq. 3.11,
    ``sum_H alpha q - sum_M beta q = trace(W Sigma_n)``); if ``W_new`` is ``None``
    it is evaluated with the ``W`` given (the one kept).

    Parameters
    ----------
    X : array-like of shape (N, A)
        Features, already scaled.
    y : array-like of shape (N,)
        Labels, any hashable type; at least two classes.
    W : array-like of shape (A, A)
        Current weight matrix, used as given.
    sigma : float, default=1.0
        Kernel width.
    sample_weight : array-like of shape (N,), default=None
        ``D_n`` of eq. 3.19; ones if None.

    Returns
    -------
    result : dict
        ``W`` (the new matrix, or ``None``), ``Sigma`` (A x A), ``entropy`` (``E``)
        and ``cost``.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    W = np.asarray(W, dtype=float)
    N, A = X.shape
    D = _sample_weights(sample_weight, N)

    Sigma = np.zeros((A, A))
    entropy = 0.0
    for n in range(N):
        hits, misses = _hits_and_misses(y, n)
        if len(misses) == 0:
            raise ValueError(f"sample {n} has no miss: only one class")
        # eq. 3.6: l_nj = -q(x_n, x_j) / sigma
        logits = {j: -_quadratic_manhattan(X[n], X[j], W) / sigma for j in hits + misses}
        log_alpha = _log_softmax(logits, hits)
        log_beta = _log_softmax(logits, misses)

        for j in hits:
            alpha = np.exp(log_alpha[j])
            z = _abs_difference(X[n], X[j])
            Sigma += D[n] * alpha * np.outer(z, z)  # Sigma_{n,H}
            entropy += D[n] * alpha * log_alpha[j]  # -E_hit
        for j in misses:
            beta = np.exp(log_beta[j])
            z = _abs_difference(X[n], X[j])
            Sigma -= D[n] * beta * np.outer(z, z)  # Sigma_{n,M}
            entropy -= D[n] * beta * log_beta[j]  # +E_miss

    # Theorem 3.1: eigen-decomposition of the symmetric Sigma
    mu, psi = np.linalg.eigh(Sigma)
    eta = np.maximum(-mu, 0.0)
    W_tilde = np.zeros((A, A))
    for i in range(A):
        W_tilde += eta[i] * np.outer(psi[:, i], psi[:, i])
    W_tilde[W_tilde < 0] = 0.0  # W >= 0 element-wise (eq. 3.5), by clipping

    if not np.any(W_tilde > 0):
        W_new = None
        cost = np.trace(W @ Sigma) + sigma * entropy
    else:
        W_new = _frobenius_normalised(W_tilde)
        cost = np.trace(W_new @ Sigma) + sigma * entropy
    return dict(W=W_new, Sigma=Sigma, entropy=entropy, cost=cost)


def immigrate(
    X,
    y,
    sigma=1.0,
    max_iter=10,
    tol=1e-4,
    W0=None,
    prune=None,
    sample_weight=None,
):
    """IMMIGRATE (Algorithm 2 of Zhao, Hong & Liu 2020) with pruning (§3.4.3), brute force.

    ``W_0 = I / sqrt(A)`` by default (the R package's start); a given ``W0``
    is normalised to ``||W0||_F = 1``.  For ``t = 1 .. max_iter``:
    ``W_t = immigrate_step(W_{t-1})["W"]`` (``W_{t-1}`` kept if the step returns
    ``None``); if ``prune`` is not None and ``t >= max_iter // 2``, entries
    ``W_t < prune`` are set to 0 and ``W_t`` is renormalised (Frobenius, unless all
    zero); ``cost_t = trace(W_t Sigma_t) + sigma E_t`` (the cost of eq. 3.5 / 3.19
    at ``W_t`` -- after pruning -- and the step's ``alpha``, ``beta``; without
    pruning it is the step's ``cost``); ``change_t = ||W_t - W_{t-1}||_F``; the loop
    stops after step ``t`` if ``change_t < tol``.  With ``tol = 0`` exactly
    ``max_iter`` steps run.

    Parameters
    ----------
    X : array-like of shape (N, A)
        Features, already scaled.
    y : array-like of shape (N,)
        Labels.
    sigma : float, default=1.0
        Kernel width.
    max_iter : int, default=10
        Maximum number of steps.
    tol : float, default=1e-4
        Stopping threshold on ``||W_t - W_{t-1}||_F``.
    W0 : array-like of shape (A, A), default=None
        Initial matrix (normalised here); ``I / sqrt(A)`` if None.
    prune : float, default=None
        Pruning threshold; no pruning if None.
    sample_weight : array-like of shape (N,), default=None
        ``D_n`` of eq. 3.19.

    Returns
    -------
    result : dict
        ``W`` (final matrix), ``n_iter`` (steps run), ``cost`` and ``change``
        (lists, one entry per step),
        ``W_history`` (``W_t`` after every step) and ``warned`` (True if a step
        returned ``None``).
    """
    X = np.asarray(X, dtype=float)
    A = X.shape[1]
    if W0 is None:
        W = np.eye(A) / np.sqrt(A)
    else:
        W = _frobenius_normalised(np.asarray(W0, dtype=float))

    costs, changes, W_history = [], [], []
    warned = False
    n_iter = 0
    for t in range(1, max_iter + 1):
        step = immigrate_step(X, y, W, sigma=sigma, sample_weight=sample_weight)
        if step["W"] is None:
            W_t = W.copy()
            warned = True
        else:
            W_t = step["W"].copy()
        # §3.4.3: prune small weights, then renormalise
        if prune is not None and t >= max_iter // 2:
            W_t[W_t < prune] = 0.0
            if np.any(W_t != 0):
                W_t = _frobenius_normalised(W_t)
        change = np.sqrt(np.sum((W_t - W) ** 2))
        # eq. 3.5 / 3.19 with W_t and this step's alpha, beta (eq. 3.11)
        costs.append(np.trace(W_t @ step["Sigma"]) + sigma * step["entropy"])
        changes.append(change)
        W_history.append(W_t)
        W = W_t
        n_iter = t
        if change < tol:
            break
    return dict(
        W=W,
        n_iter=n_iter,
        cost=costs,
        change=changes,
        W_history=W_history,
        warned=warned,
    )


def _soft_min_scores(Xtrain, ytrain, Xnew, sigma, distance, loo):
    """Soft-min expected distance of every new point to every class (eq. 3.18).

    ``S[i, c] = sum_{k: y_k = c} a_k dist(x_i, x_k)`` with
    ``a_k = softmax_{k: y_k = c}(-dist(x_i, x_k) / sigma)``.  With ``loo=True``,
    ``Xnew`` is ``Xtrain`` and point ``i`` is left out of its own class set.  An
    empty class set (a one-sample class under ``loo``) gives ``S = +inf``: that
    class is never predicted.
    """
    Xtrain = np.asarray(Xtrain, dtype=float)
    ytrain = np.asarray(ytrain)
    Xnew = np.asarray(Xnew, dtype=float)
    classes = np.unique(ytrain)
    S = np.zeros((len(Xnew), len(classes)))
    for i in range(len(Xnew)):
        for c, label in enumerate(classes):
            members = [k for k in range(len(ytrain)) if ytrain[k] == label and not (loo and k == i)]
            if len(members) == 0:
                S[i, c] = np.inf
                continue
            dist = {k: distance(Xnew[i], Xtrain[k]) for k in members}
            log_a = _log_softmax({k: -dist[k] / sigma for k in members}, members)
            for k in members:
                S[i, c] += np.exp(log_a[k]) * dist[k]
    return S


def immigrate_decision(Xtrain, ytrain, W, sigma, Xnew, loo=False):
    """IMMIGRATE's class scores ``S`` of eq. 3.18 (smaller = closer).

    ``S[i, c] = sum_{k: y_k = c} a_k q(x_i, x_k)``,
    ``a_k = exp(-q(x_i, x_k)/sigma) / sum_{k': y_k' = c} exp(-q(x_i, x_k')/sigma)``
    (by log-sum-exp).  The prediction is ``classes[argmin_c S[i, c]]`` (ties to the
    first class) and ``predict_proba = softmax_c(-S / sigma)``.

    Parameters
    ----------
    Xtrain : array-like of shape (N, A)
        Training features, already scaled.
    ytrain : array-like of shape (N,)
        Training labels; classes (columns of ``S``) in ``np.unique`` order.
    W : array-like of shape (A, A)
        Learned weight matrix.
    sigma : float
        Kernel width.
    Xnew : array-like of shape (M, A)
        Points to score.
    loo : bool, default=False
        If True, ``Xnew`` is ``Xtrain`` and point ``i`` is excluded from its own
        class set (dmargin's choice for BIM's training predictions: with itself
        in the set, every training point would be trivially correct); an
        empty set gives ``+inf``.

    Returns
    -------
    S : ndarray of shape (M, K)
        Soft-min expected quadratic-Manhattan distance to each class.
    """
    W = np.asarray(W, dtype=float)
    return _soft_min_scores(
        Xtrain,
        ytrain,
        Xnew,
        sigma,
        lambda a, b: _quadratic_manhattan(a, b, W),
        loo,
    )


def predict_from_scores(classes, S):
    """Return ``classes[argmin_c S[i, c]]`` for every row (ties to the first class)."""
    return np.asarray(classes)[np.argmin(S, axis=1)]


def proba_from_scores(S, sigma):
    """Return ``softmax_c(-S / sigma)`` row by row, by log-sum-exp (``S = inf`` -> 0)."""
    S = np.asarray(S, dtype=float)
    proba = np.zeros_like(S)
    for i in range(S.shape[0]):
        logits = -S[i] / sigma
        lse = _logsumexp(logits)
        for c in range(S.shape[1]):
            proba[i, c] = np.exp(logits[c] - lse)
    return proba


# ---------------------------------------------------------------------------
# IM4E (vector weights)
# ---------------------------------------------------------------------------


def project_onto_simplex(v):
    """Euclidean projection of ``v`` onto ``{w >= 0, sum w = 1}``.

    ``w = (v - tau)^+`` with ``tau`` the unique root of ``sum (v - tau)^+ = 1``,
    found by sorting (Held, Wolfe and Crowder 1974; Duchi et al. 2008, Fig. 1):
    ``rho = max{j : u_j - (sum_{r<=j} u_r - 1) / j > 0}`` for ``u`` sorted
    decreasingly, ``tau = (sum_{r<=rho} u_r - 1) / rho``.
    """
    v = np.asarray(v, dtype=float)
    u = np.sort(v)[::-1]
    running = 0.0
    tau = None
    for j in range(1, len(u) + 1):
        running += u[j - 1]
        candidate = (running - 1.0) / j
        if u[j - 1] - candidate > 0:
            tau = candidate
    return np.maximum(v - tau, 0.0)


def im4e_step(X, y, w, sigma=1.0, lam=1.0, sample_weight=None, weight_update="reference"):
    """One IM4E iteration (Bei & Hong 2015; R package ``one.IM4E``), brute force.

    With ``d_nj = w^T z_nj`` and ``l_nj = -d_nj / sigma``: ``alpha`` and ``beta`` are
    the soft-maxes over ``H_n`` and ``M_n`` (as eq. 3.6), then::

        m = sum_n D_n ( sum_{M_n} beta z - sum_{H_n} alpha z )   (mbar_n - hbar_n)
        "reference": w_new = m^+ / sum(m^+)                      (L1 normalisation)
        "simplex":   w_new = projection of m / (2 lam) onto the probability simplex
        E    = sum_n D_n ( sum_H alpha log alpha - sum_M beta log beta )
        cost = w_new . (-m) + sigma E + lam ||w_new||^2

    The "simplex" update is the exact minimiser of ``cost`` over the simplex for
    fixed ``alpha``, ``beta``.  With "reference", if ``m^+ = 0`` then ``w_new`` is
    ``None`` (the caller keeps ``w``) and the cost is evaluated with ``w``.

    Parameters
    ----------
    X : array-like of shape (N, A)
        Features, already scaled.
    y : array-like of shape (N,)
        Labels.
    w : array-like of shape (A,)
        Current weights.
    sigma : float, default=1.0
        Kernel width.
    lam : float, default=1.0
        ``lambda`` of the cost's ``lambda ||w||^2`` term.
    sample_weight : array-like of shape (N,), default=None
        ``D_n``; ones if None.
    weight_update : {"reference", "simplex"}, default="reference"
        The M-step.

    Returns
    -------
    result : dict
        ``w`` (new weights or ``None``), ``m``, ``entropy`` and ``cost``.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    w = np.asarray(w, dtype=float)
    N, A = X.shape
    D = _sample_weights(sample_weight, N)

    m = np.zeros(A)
    entropy = 0.0
    for n in range(N):
        hits, misses = _hits_and_misses(y, n)
        if len(misses) == 0:
            raise ValueError(f"sample {n} has no miss: only one class")
        logits = {j: -_weighted_manhattan(X[n], X[j], w) / sigma for j in hits + misses}
        log_alpha = _log_softmax(logits, hits)
        log_beta = _log_softmax(logits, misses)
        for j in hits:
            alpha = np.exp(log_alpha[j])
            m -= D[n] * alpha * _abs_difference(X[n], X[j])  # -hbar_n
            entropy += D[n] * alpha * log_alpha[j]
        for j in misses:
            beta = np.exp(log_beta[j])
            m += D[n] * beta * _abs_difference(X[n], X[j])  # +mbar_n
            entropy -= D[n] * beta * log_beta[j]

    if weight_update == "reference":
        m_plus = np.maximum(m, 0.0)
        w_new = None if np.sum(m_plus) == 0 else m_plus / np.sum(m_plus)
    elif weight_update == "simplex":
        w_new = project_onto_simplex(m / (2.0 * lam))
    else:
        raise ValueError(f"unknown weight_update {weight_update!r}")

    w_cost = w if w_new is None else w_new
    cost = w_cost @ (-m) + sigma * entropy + lam * np.sum(w_cost**2)
    return dict(w=w_new, m=m, entropy=entropy, cost=cost)


def im4e(
    X,
    y,
    sigma=1.0,
    lam=1.0,
    max_iter=10,
    tol=1e-4,
    sample_weight=None,
    weight_update="reference",
):
    """IM4E (Bei & Hong 2015, as the R package runs it), brute force.

    ``w_0 = ones(A) / A``; for ``t = 1 .. max_iter``: ``w_t = im4e_step(w_{t-1})``
    (``w_{t-1}`` kept if the step returns ``None``);
    ``change_t = ||w_t - w_{t-1}||_2``; stop after step ``t`` if ``change_t < tol``.

    Parameters
    ----------
    X, y, sigma, lam, sample_weight, weight_update
        As :func:`im4e_step`.
    max_iter : int, default=10
        Maximum number of steps.
    tol : float, default=1e-4
        Stopping threshold on ``||w_t - w_{t-1}||_2``.

    Returns
    -------
    result : dict
        ``w``, ``n_iter``, ``cost`` and ``change`` (one entry per step),
        ``w_history`` and ``warned``.
    """
    X = np.asarray(X, dtype=float)
    A = X.shape[1]
    w = np.ones(A) / A
    costs, changes, w_history = [], [], []
    warned = False
    n_iter = 0
    for t in range(1, max_iter + 1):
        step = im4e_step(
            X,
            y,
            w,
            sigma=sigma,
            lam=lam,
            sample_weight=sample_weight,
            weight_update=weight_update,
        )
        if step["w"] is None:
            w_t = w.copy()
            warned = True
        else:
            w_t = step["w"]
        change = np.sqrt(np.sum((w_t - w) ** 2))
        costs.append(step["cost"])
        changes.append(change)
        w_history.append(w_t)
        w = w_t
        n_iter = t
        if change < tol:
            break
    return dict(w=w, n_iter=n_iter, cost=costs, change=changes, w_history=w_history, warned=warned)


def im4e_decision(Xtrain, ytrain, w, sigma, Xnew, loo=False):
    """IM4E's class scores: eq. 3.18 with ``d = w^T |x - x_k|`` in place of ``q``.

    See :func:`immigrate_decision` for the parameters and conventions.
    """
    w = np.asarray(w, dtype=float)
    return _soft_min_scores(
        Xtrain,
        ytrain,
        Xnew,
        sigma,
        lambda a, b: _weighted_manhattan(a, b, w),
        loo,
    )


# ---------------------------------------------------------------------------
# IM4E-IMMIGRATE
# ---------------------------------------------------------------------------


def im4e_immigrate(
    X,
    y,
    threshold=None,
    sigma=1.0,
    lam=1.0,
    max_iter=10,
    tol=1e-4,
    prune=None,
):
    """IM4E-IMMIGRATE (Zhao, Hong & Liu 2020, §3.6), brute force.

    1. ``w = im4e(X, y, sigma, lam, max_iter, tol)["w"]`` on all ``A`` features.
    2. Keep the features with ``w_j > threshold`` (default ``2 / A``, §4.2).
    3. ``W_0 = diag(w_kept)`` (normalised to ``||W_0||_F = 1`` by :func:`immigrate`).
    4. ``immigrate`` on the kept columns from ``W_0``.

    Parameters
    ----------
    X : array-like of shape (N, A)
        Features, already scaled.
    y : array-like of shape (N,)
        Labels.
    threshold : float, default=None
        Screening threshold; ``2 / A`` if None.
    sigma, lam, max_iter, tol, prune
        As :func:`im4e` and :func:`immigrate` (shared by both stages).

    Returns
    -------
    result : dict
        ``features`` (kept original column indices, increasing), ``w`` (IM4E
        weights), ``W`` (k x k over ``features``), ``importances`` (length ``A``:
        ``diag(W)`` on ``features``, 0 elsewhere) and ``immigrate`` (the
        :func:`immigrate` result on the kept features).
    """
    X = np.asarray(X, dtype=float)
    A = X.shape[1]
    if threshold is None:
        threshold = 2.0 / A
    w = im4e(X, y, sigma=sigma, lam=lam, max_iter=max_iter, tol=tol)["w"]
    features = np.array([j for j in range(A) if w[j] > threshold], dtype=int)
    if len(features) == 0:
        raise ValueError("no feature passes the IM4E threshold")
    W0 = np.diag(w[features])
    result = immigrate(
        X[:, features], y, sigma=sigma, max_iter=max_iter, tol=tol, W0=W0, prune=prune
    )
    importances = np.zeros(A)
    for position, j in enumerate(features):
        importances[j] = result["W"][position, position]
    return dict(features=features, w=w, W=result["W"], importances=importances, immigrate=result)


# ---------------------------------------------------------------------------
# BIM: boosted IMMIGRATE
# ---------------------------------------------------------------------------


def bim(X, y, n_estimators, sigma_max=4.0, sigma_min=0.2, max_iter=5):
    """BIM (Algorithm 3 of Zhao, Hong & Liu 2020), brute force.

    ``D_1 = 1/N``; for ``t = 1 .. T`` (``T = n_estimators``):

    * ``sigma_t = sigma_max (sigma_min / sigma_max)^((t - 1) / T)`` (§3.5);
    * ``W_t = immigrate(X, y, sigma_t, max_iter, tol=0, sample_weight=D_t)["W"]``
      (the weak learner minimises eq. 3.19);
    * ``h_t(x_n)`` = eq. 3.18 on the training points, leave-one-out;
    * ``eps_t = sum_n D_t(x_n) [y_n != h_t(x_n)]``;
    * if ``eps_t >= 1/2`` or ``eps_t = 0``: discard ``h_t`` (``D`` unchanged);
    * else ``alpha_t = 0.5 ln((1 - eps_t) / eps_t)``,
      ``D_{t+1} = D_t exp(alpha_t [y_n != h_t(x_n)])``, normalised to sum 1.

    Parameters
    ----------
    X : array-like of shape (N, A)
        Features, already scaled.
    y : array-like of shape (N,)
        Labels.
    n_estimators : int
        ``T``.
    sigma_max, sigma_min : float, default=4.0, 0.2
        Ends of the sigma schedule.
    max_iter : int, default=5
        IMMIGRATE steps per weak learner.

    Returns
    -------
    result : dict
        ``estimators`` (list of ``(W_t, sigma_t)`` of the kept learners),
        ``estimator_weights`` (their ``alpha_t``), ``kept`` (their ``t - 1``),
        ``errors`` (``eps_t`` of every round), ``sigmas`` (every round's sigma) and
        ``D`` (the final sample weights).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    N = len(y)
    classes = np.unique(y)
    T = n_estimators
    D = np.full(N, 1.0 / N)

    estimators, weights, kept, errors, sigmas = [], [], [], [], []
    for t in range(1, T + 1):
        sigma_t = sigma_max * (sigma_min / sigma_max) ** ((t - 1) / T)
        sigmas.append(sigma_t)
        W_t = immigrate(X, y, sigma=sigma_t, max_iter=max_iter, tol=0.0, sample_weight=D)["W"]
        S = immigrate_decision(X, y, W_t, sigma_t, X, loo=True)
        h = predict_from_scores(classes, S)
        wrong = np.array([1.0 if h[n] != y[n] else 0.0 for n in range(N)])
        eps = np.sum(D * wrong)
        errors.append(eps)
        if eps >= 0.5 or eps == 0:
            continue  # discard h_t
        alpha_t = 0.5 * np.log((1.0 - eps) / eps)
        D = D * np.exp(alpha_t * wrong)
        D = D / np.sum(D)
        estimators.append((W_t, sigma_t))
        weights.append(alpha_t)
        kept.append(t - 1)
    return dict(
        estimators=estimators,
        estimator_weights=np.array(weights),
        kept=kept,
        errors=errors,
        sigmas=sigmas,
        D=D,
    )


def bim_predict(Xtrain, ytrain, model, Xnew):
    """BIM's final rule (Algorithm 3): ``argmax_y sum_{t: h_t(x) = y} alpha_t``.

    ``h_t(x)`` is eq. 3.18 with the learner's ``W_t`` and ``sigma_t`` against the
    whole training set.  Ties (including no kept learner) go to the first class in
    ``np.unique`` order.

    Parameters
    ----------
    Xtrain, ytrain : array-like
        The training data the model was fitted on.
    model : dict
        A :func:`bim` result.
    Xnew : array-like of shape (M, A)
        Points to classify.

    Returns
    -------
    result : dict
        ``predictions`` (labels) and ``votes`` (``(M, K)`` summed ``alpha_t``).
    """
    ytrain = np.asarray(ytrain)
    Xnew = np.asarray(Xnew, dtype=float)
    classes = np.unique(ytrain)
    votes = np.zeros((len(Xnew), len(classes)))
    for (W_t, sigma_t), alpha_t in zip(
        model["estimators"], model["estimator_weights"], strict=True
    ):
        S = immigrate_decision(Xtrain, ytrain, W_t, sigma_t, Xnew)
        h = np.argmin(S, axis=1)
        for i in range(len(Xnew)):
            votes[i, h[i]] += alpha_t
    return dict(predictions=classes[np.argmax(votes, axis=1)], votes=votes)
