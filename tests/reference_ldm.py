"""Brute-force NumPy references for LDM, LDM-RFE and kernel SVM-RFE.

Written for clarity, not speed, each line mirroring an equation of

* T. Zhang, Z.-H. Zhou, "Large Margin Distribution Machine", KDD 2014: the
  kernel dual in the ``pinv(Q)`` form of the authors' code, and the linear
  LDM's primal ``w`` (the same dual with ``G = X X^T``), and
* G. Ou, Y. Wang, W. Pang, G. M. Coghill, "Large Margin Distribution Machine
  Recursive Feature Elimination", ICSAI 2017, eqs. (3)-(4):
  ``S(j) = -alpha^T K(-j) alpha`` with ``K(-j)`` the kernel matrix recomputed
  without feature ``j``.

Nothing is imported from ``dmargin``: these are the oracle.
"""

import numpy as np
import scipy.optimize


def rbf_kernel(U, V, gamma):
    """``K[a, b] = exp(-gamma sum_k (u_ak - v_bk)^2)``, a double loop over rows."""
    K = np.empty((len(U), len(V)))
    for a in range(len(U)):
        for b in range(len(V)):
            K[a, b] = np.exp(-gamma * np.sum((U[a] - V[b]) ** 2))
    return K


def ldm_dual_pinv(G, y, lambda1):
    """``(M, H)`` as the official package builds them (``trainLDM.c``, ``LDM.m``).

    ``Q = G + (4 lambda1 / m^2) (m G G - (G y)(G y)^T)``, ``M = pinv(Q) G Y``,
    ``H = Y G M``.
    """
    m = len(y)
    Y = np.diag(y)
    Gy = G @ y
    Q = G + (4.0 * lambda1 / m**2) * (m * G @ G - np.outer(Gy, Gy))
    M = np.linalg.pinv(Q) @ G @ Y
    return M, Y @ G @ M


def dual_objective(H, beta, lambda2):
    """``f(beta) = 1/2 beta^T H beta + ((lambda2 / m) H e - e)^T beta``."""
    m = len(beta)
    e = np.ones(m)
    return 0.5 * beta @ H @ beta + ((lambda2 / m) * H @ e - e) @ beta


def solve_box_qp(H, lambda2, C):
    """The LDM dual by a generic bounded solver (L-BFGS-B), run to tight tolerances."""
    m = H.shape[0]
    q = (lambda2 / m) * H.sum(axis=1) - 1.0
    res = scipy.optimize.minimize(
        lambda b: (0.5 * b @ H @ b + q @ b, H @ b + q),
        np.zeros(m),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, C)] * m,
        options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 100000, "maxcor": 50},
    )
    return res.x


def linear_ldm_w(X, y, beta, lambda1, lambda2):
    """``w = Q_d^-1 X^T Y ((lambda2 / m) e + beta)`` (the linear LDM of Zhang & Zhou 2014)."""
    m, d = X.shape
    Xy = X.T @ y
    Qd = np.eye(d) + (4.0 * lambda1 / m**2) * (m * X.T @ X - np.outer(Xy, Xy))
    return np.linalg.solve(Qd, X.T @ np.diag(y) @ (lambda2 / m + beta))


def left_out_quadratic_forms(X, coefs, gamma):
    """``[sum_p alpha_p^T K(-j) alpha_p for each j]`` and ``sum_p alpha_p^T K alpha_p``.

    ``K(-j)`` is recomputed from ``X`` with column ``j`` deleted (the paper's
    Algorithm 1), for every feature; ``coefs`` is a list of length-N vectors.
    """
    forms = []
    for j in range(X.shape[1]):
        K_minus_j = rbf_kernel(np.delete(X, j, axis=1), np.delete(X, j, axis=1), gamma)
        forms.append(sum(a @ K_minus_j @ a for a in coefs))
    K = rbf_kernel(X, X, gamma)
    return np.array(forms), sum(a @ K @ a for a in coefs)


def left_out_product_form(X, coefs, gamma):
    """The same forms by ``K(-j)_ab = K_ab exp(gamma (x_aj - x_bj)^2)`` (the RBF identity)."""
    K = rbf_kernel(X, X, gamma)
    forms = []
    for j in range(X.shape[1]):
        diff2 = (X[:, j][:, None] - X[:, j][None, :]) ** 2
        forms.append(sum(a @ (K * np.exp(gamma * diff2)) @ a for a in coefs))
    return np.array(forms)


def minmax_scale(X):
    """Each feature to [0, 1]; a constant feature to 0."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return (X - lo) / span
