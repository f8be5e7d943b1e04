"""LDM's solvers, and the decision values of the machines they fit.

Arrays and scalars in, arrays out -- no estimator objects: the estimators of
:mod:`dmargin.ldm._machine` and :mod:`dmargin.ldm._rfe` choose a solver and pass their parameters.  One binary
machine per pair of classes (:func:`ovo_pairs`), trained

- in memory by dual coordinate descent in the well-conditioned ``A^-1``
  form, or on the primal ``w`` for a linear kernel with fewer features than
  rows (:func:`fit_machines`; the official package's dual, Zhang & Zhou 2014);
- over row blocks by trust-region Newton on the primal, the hinge smoothed
  in stages and its exact solution recovered from the rows near margin 1
  (:func:`ldm_newton`; :func:`svm_newton` for LinearSVC's problem; 9.1, 9.4;
  every pair: :func:`primal_machines`);

and evaluated on new rows with the one-vs-one vote (:class:`LinearModel`,
:class:`KernelModel`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize
from sklearn.exceptions import ConvergenceWarning

from .._utils import logger, timer, warn
from ..engine import (
    hinge_band,
    hinge_violations,
    ldm_dcd,
    ldm_dcd_linear,
    linear_gram,
    linear_loss,
    prepare_rows,
)

#: Rows of new points per kernel block in ``decision_function``.
_PREDICT_BLOCK = 2048
#: The hinge is smoothed (Huber, width ``mu``) and ``mu`` lowered in these
#: stages, each warm-started; from the second on, the band of rows around
#: margin 1 gives the exact hinge solution (:func:`hinge_polish`), which ends
#: the solve.
_MU_STAGES = (1.0, 1e-1, 1e-2, 1e-3, 1e-4)
#: A warm start (LDM-RFE's next round) skips the wider stages.
_WARM_MU = 1e-2
#: Rows near margin 1 the exact hinge step brings to the driver at most
#: (or 100 per feature): a bounded few, whatever the number of rows.
_BAND_ROWS = 5000
#: Newton iterations per stage at most.
_NEWTON_MAX_ITER = 200


# ---------------------------------------------------------------------------
# Kernels and the binary LDM solver
# ---------------------------------------------------------------------------


def resolve_gamma(gamma, X) -> float:
    """``"scale"``: 1 / (A var(X)) as scikit-learn's SVC; ``"auto"``: 1 / A."""
    if gamma == "scale":
        var = float(np.var(X))
        return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    if gamma == "auto":
        return 1.0 / X.shape[1]
    return float(gamma)


def kernel_matrix(U, V, kernel, gamma):
    """``k(u, v)``: ``exp(-gamma ||u - v||^2)`` or ``u . v`` (rows of U by rows of V)."""
    if kernel == "linear":
        return U @ V.T
    d2 = (
        np.einsum("ij,ij->i", U, U)[:, None]
        + np.einsum("ij,ij->i", V, V)[None, :]
        - 2.0 * (U @ V.T)
    )
    return np.exp(-gamma * np.maximum(d2, 0.0))


def dual_matrices(G, y, lambda1):
    """``(H, coef)`` of the LDM dual in the A^-1 form (``Q^-1 G Y = A^-1 Y``).

    ``A = I + c P G`` with ``c = 4 lambda1 / m`` and ``P = I - y y^T / m``;
    ``H = Y G A^-1 Y`` and ``coef(r) = A^-1 Y r``, the kernel coefficients of
    a dual point (``M r`` with ``M = A^-1 Y``, equal to ``Q^-1 G Y`` of the
    official code; ``r`` a vector or the columns of a matrix).

    ``A = B - (c / m) y (G y)^T`` with ``B = I + c G`` symmetric positive
    definite, eigenvalues >= 1 -- well conditioned even when G is singular
    (linear kernel with m > d, duplicate rows).  One Cholesky factor of B and
    Sherman-Morrison give ``G A^-1 = G B^-1 + (c / m) v v^T / den`` with
    ``v = G B^-1 y`` and ``den = 1 - (c / m) y^T v = y^T B^-1 y / m > 0`` (the
    second form has no cancellation): about half the flops of an LU of A.
    """
    m = len(y)
    c = 4.0 * lambda1 / m
    B = c * G
    B[np.diag_indices(m)] += 1.0
    factor = scipy.linalg.cho_factor(B, lower=True, overwrite_a=True)
    GB = scipy.linalg.cho_solve(factor, G)
    GB = (GB + GB.T) / 2  # G and B^-1 commute: symmetric in exact arithmetic
    u = scipy.linalg.cho_solve(factor, y)
    den = float(y @ u) / m
    v = GB @ y
    yv = y * v
    H = y[:, None] * GB * y[None, :] + (c / m / den) * np.outer(yv, yv)

    def coef(r):
        r = y * r if np.ndim(r) == 1 else y[:, None] * r  # Y r
        return scipy.linalg.cho_solve(factor, r) + (c / m / den) * np.multiply.outer(u, v @ r)

    return H, coef


def _fit_dual(G, y, C, lambda1, lambda2, tol, max_iter, seed):
    """Kernel LDM: ``(alpha, passes, converged)`` with ``f(x) = sum_i alpha_i k(x_i, x)``."""
    m = len(y)
    H, coef = dual_matrices(G, y, lambda1)
    g = (lambda2 / m) * H.sum(axis=1) - 1.0  # gradient of the dual at beta = 0
    beta, passes, ok = ldm_dcd(np.ascontiguousarray(H), g, C, tol, max_iter, seed)
    return coef(lambda2 / m + beta), beta, passes, ok


def _fit_primal(X, y, C, lambda1, lambda2, tol, max_iter, seed):
    """Linear LDM in ``w`` (the kernel dual with ``G = X X^T``): ``Q_d`` is d x d and SPD."""
    m, d = X.shape
    Z = X * y[:, None]
    zsum = Z.sum(axis=0)
    Qd = np.eye(d) + (4.0 * lambda1 / m**2) * (m * (X.T @ X) - np.outer(zsum, zsum))
    V = np.ascontiguousarray(scipy.linalg.cho_solve(scipy.linalg.cho_factor(Qd), Z.T).T)
    w = (lambda2 / m) * V.sum(axis=0)
    beta, passes, ok = ldm_dcd_linear(np.ascontiguousarray(Z), V, w, C, tol, max_iter, seed)
    return w, beta, passes, ok


def ovo_pairs(n_classes):
    """The class pairs ``(a, b)``, ``a < b``, of the one-vs-one machines, in their order."""
    return list(itertools.combinations(range(n_classes), 2))


def machine_labels(codes, pair):
    """Rows of one one-vs-one machine and their labels (+1 for the higher class)."""
    rows = np.flatnonzero((codes == pair[0]) | (codes == pair[1]))
    return rows, np.where(codes[rows] == pair[1], 1.0, -1.0)


@dataclass
class Machines:
    """The binary machines of one-vs-one LDM on some rows (:func:`fit_machines`)."""

    solver: str  # "primal" or "dual"
    alpha: np.ndarray | None  # (n_machines, n_samples) kernel coefficients; None for "primal"
    support: np.ndarray | None  # rows with a nonzero alpha in some machine; None for "primal"
    coef: np.ndarray | None  # (n_machines, n_features) w of each machine; linear kernel only
    beta: list  # the dual solution of each machine
    n_iter: np.ndarray  # descent passes of each machine
    intercept: np.ndarray  # (n_machines,) b of each machine; zeros without an intercept


def fit_machines(
    X,
    codes,
    classes,
    *,
    C,
    lambda1,
    lambda2,
    kernel,
    gamma,
    tol,
    max_iter,
    rng,
    primal=None,
    fit_intercept=False,
) -> Machines:
    """One binary LDM per pair of classes on the rows ``X``, as the official package's one-vs-one.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Scaled rows, in memory.
    codes : ndarray of shape (n_samples,)
        Class codes, indices into ``classes``.
    classes : ndarray
        The class labels (named in the convergence warning).
    C, lambda1, lambda2, kernel, tol, max_iter
        As :class:`dmargin.LDM`.
    gamma : float
        The resolved RBF width.
    rng : numpy.random.Generator
        Draws one seed per machine for its coordinate order.
    primal : bool or None, default=None
        Solve for ``w`` (linear kernel) instead of the dual; ``None``: when
        the kernel is linear and there are fewer features than rows.
    fit_intercept : bool, default=False
        Add a bias ``b`` as the weight of a constant feature 1, regularised
        with ``w`` (LIBLINEAR's bias): the rows get a column of ones in the
        primal, the kernel ``k + 1`` in the dual, so ``b = sum_i alpha_i``.

    Returns
    -------
    Machines
    """
    m, d = X.shape
    if primal is None:
        primal = kernel == "linear" and d + fit_intercept < m
    pairs = ovo_pairs(len(classes))
    Xp = np.column_stack([X, np.ones(m)]) if fit_intercept and primal else X
    intercept = np.zeros(len(pairs))
    alpha = np.zeros((len(pairs), m))
    coef = np.zeros((len(pairs), d))
    betas, n_iter = [], []
    for p, pair in enumerate(pairs):
        idx, yp = machine_labels(codes, pair)
        seed = int(rng.integers(2**31 - 1))
        args = (C, lambda1, lambda2, tol, max_iter, seed)
        with timer("LDM machine %s", pair):
            if primal:
                w, beta, passes, ok = _fit_primal(Xp[idx], yp, *args)
                coef[p] = w[:d]
                intercept[p] = w[d] if fit_intercept else 0.0
            else:
                G = kernel_matrix(X[idx], X[idx], kernel, gamma)
                if fit_intercept:
                    G += 1.0  # the constant feature's inner products
                alpha[p, idx], beta, passes, ok = _fit_dual(G, yp, *args)
                intercept[p] = alpha[p].sum() if fit_intercept else 0.0
        logger.debug("LDM machine %s: %d passes", pair, passes)
        if not ok:
            warn(
                f"LDM coordinate descent did not reach tol={tol} in max_iter={max_iter} "
                f"passes (classes {classes[list(pair)]}); increase max_iter, or scale the "
                "features.",
                ConvergenceWarning,
            )
        betas.append(beta)
        n_iter.append(passes)
    if primal:
        return Machines(
            "primal",
            None,
            None,
            coef if kernel == "linear" else None,
            betas,
            np.asarray(n_iter),
            intercept,
        )
    support = np.flatnonzero(np.any(alpha != 0, axis=0))
    if kernel == "linear":  # w from the support rows only, as the dual expansion
        coef = alpha[:, support] @ X[support]
    return Machines(
        "dual",
        alpha,
        support,
        coef if kernel == "linear" else None,
        betas,
        np.asarray(n_iter),
        intercept,
    )


# ---------------------------------------------------------------------------
# Linear machines in the primal, by Newton's method over row blocks
# ---------------------------------------------------------------------------


def _newton(evaluate, w0, gtol, max_iter):
    """Minimise by scipy's trust-region Newton (``trust-exact``) on the driver.

    ``evaluate(w) -> (f, grad, H)`` is one pass over the row blocks (a new,
    small graph each time); the trio of the last point is kept, as the
    method asks for ``H`` where it has just asked for ``f``.
    """
    last = {}

    def trio(w):
        key = w.tobytes()
        if key not in last:
            last.clear()
            last[key] = evaluate(np.array(w))
        return last[key]

    res = scipy.optimize.minimize(
        lambda w: trio(w)[:2],
        w0,
        jac=True,
        hess=lambda w: trio(w)[2],
        method="trust-exact",
        options={"gtol": gtol, "maxiter": max_iter},
    )
    return res.x, int(res.nit), bool(res.success)


def ldm_quadratic(gram, lambda1, lambda2):
    """``(Q_d, c)`` of the linear LDM primal ``1/2 w^T Q_d w - c^T w + C sum_i xi_i``.

    From ``(m, b = sum_i y_i x_i, X^T X)`` (:func:`dmargin.engine.linear_gram`):
    ``Q_d = I + (4 lambda1 / m^2) (m X^T X - b b^T)`` and ``c = (lambda2 / m) b``
    (the variance and mean terms of the margins, Zhang & Zhou 2014).
    """
    m, b, G = gram
    d = b.size
    Q = np.eye(d) + (4.0 * lambda1 / m**2) * (m * G - np.outer(b, b))
    return (Q + Q.T) / 2, (lambda2 / m) * b


def ldm_primal_objective(w, Q, c, C, hinge_sum):
    """``1/2 w^T Q_d w - c^T w + C sum_i max(0, 1 - y_i w . x_i)``: the LDM primal."""
    return 0.5 * w @ Q @ w - c @ w + C * hinge_sum


def _active_sets(factor, r, band, C, w, mu, tol=1e-10, max_moves=None):
    """The exact minimiser over the band rows by the hinge's active sets: ``(w, ok)``.

    Rows above margin 1 hold ``beta = C``, rows below ``0``, rows at margin
    1 (``S``) solve ``b_i . w = 1`` with ``w = Q^-1 (r + C sum_U b_i +
    B_S^T beta_S)``, a system of ``|S|`` unknowns.  Starts from the sets of
    the smoothed ``w`` (``0 < t < mu``: at margin 1) and moves one row at a
    time, the worst violation first, until every row is consistent (to
    ``tol``).
    """
    if not band.shape[0]:  # no row near margin 1: the other rows' bounds decide
        return scipy.linalg.cho_solve(factor, r), True
    max_moves = 4 * band.shape[1] + 20 if max_moves is None else max_moves
    t = 1.0 - band @ w
    upper, zero = t >= mu, t <= 0
    for _ in range(max_moves):
        at = ~(upper | zero)
        w0 = scipy.linalg.cho_solve(factor, r + C * band[upper].sum(axis=0))
        w = w0
        if at.any():
            B = band[at]
            V = scipy.linalg.cho_solve(factor, B.T)
            beta = np.linalg.lstsq(B @ V, 1.0 - B @ w0, rcond=None)[0]
            over, under = beta - C, -beta
            worst = int(np.argmax(np.maximum(over, under)))
            if max(over[worst], under[worst]) > tol * max(C, 1.0):
                idx = np.flatnonzero(at)[worst]
                upper[idx], zero[idx] = over[worst] > under[worst], under[worst] >= over[worst]
                continue
            w = w0 + V @ beta
        t = 1.0 - band @ w
        off = np.where(at, np.abs(t), 0.0)  # rows at margin 1 that cannot all be there
        worst = int(np.argmax(off))
        if off[worst] > tol:
            upper[worst], zero[worst] = t[worst] > 0, t[worst] < 0
            continue
        wrong = np.where(zero, t, 0.0) - np.where(upper, t, 0.0)  # > 0: on the wrong side
        worst = int(np.argmax(wrong)) if wrong.size else 0
        if not wrong.size or wrong[worst] <= tol:
            return w, True
        upper[worst] = zero[worst] = False  # at margin 1
    return w, False


def _band_solution(Q, factor, r, band, C, w, mu):
    """The exact minimiser over the band rows, the other rows' ``beta`` fixed.

    Minimises ``1/2 w^T Q w - r^T w + C sum_band max(0, 1 - b_i . w)`` on the
    driver (the band is a few rows) by :func:`_active_sets` from the smoothed
    ``w``; when that does not settle, from ``w`` smoothed further on these
    rows alone (``mu / 100``, twice; :func:`linear_loss` in-process, no pass
    over the data).  Returns ``(w, ok)``.
    """
    out, ok = _active_sets(factor, r, band, C, w, mu)
    if ok:
        return out, ok
    local = prepare_rows(band, np.ones(band.shape[0], dtype=np.int64), 2, use_dask=False)
    cols = np.arange(band.shape[1])
    for _ in range(2):
        mu = mu / 100

        def evaluate(v, mu=mu):
            f, g, H = linear_loss(local, cols, (0, 1), v, loss="huber", mu=mu, hessian=True)
            return 0.5 * v @ Q @ v - (r @ v) + C * f, Q @ v - r + C * g, Q + C * H

        w, _, _ = _newton(evaluate, w, 1e-12 * (1.0 + C * band.shape[0]), _NEWTON_MAX_ITER)
        out, ok = _active_sets(factor, r, band, C, w, mu)
        if ok:
            break
    return out, ok


def hinge_polish(rows, cols, pair, Q, c, C, w, mu, rounds=5, intercept=0.0):
    """The exact hinge solution from a smoothed one: ``(w, exact)``.

    Rows with ``t = 1 - y w . x`` above the band ``(-mu, 2 mu)`` hold
    ``beta = C``, below it ``beta = 0``; the few in the band (margin near 1:
    the free support vectors and their neighbours) come to the driver, where
    :func:`_band_solution` solves exactly for them.  A pass then checks
    every other row's bound against the new ``w`` (KKT to 1e-9); when one is
    violated, the band is taken again around the new ``w``.
    """
    factor = scipy.linalg.cho_factor(Q)
    cap = max(_BAND_ROWS, 100 * Q.shape[0])
    low, high = -mu, 2 * mu
    start = w
    for _ in range(rounds):
        upper, band, n_band = hinge_band(rows, cols, pair, w, low, high, cap, intercept)
        t = 1.0 - band @ w
        zone = int(np.sum((t > 0) & (t < mu)))
        if int(n_band[0]) > cap or zone > 2 * Q.shape[0] + 10:
            # Generically at most d rows sit at margin 1: with many more in the
            # smoothed zone, the next, narrower stage finds them sooner.
            return start, False
        w_new, ok = _band_solution(Q, factor, c + C * upper, band, C, w, mu)
        logger.debug("hinge polish: %d rows in the band, solved %s", band.shape[0], ok)
        if not ok:
            return start, False
        if hinge_violations(rows, cols, pair, w, w_new, low, high, 1e-9, intercept) == 0:
            return w_new, True
        w = w_new
    return start, False


def ldm_newton(
    rows,
    cols,
    pair,
    gram,
    *,
    C,
    lambda1,
    lambda2,
    intercept=0.0,
    w0=None,
    max_iter=_NEWTON_MAX_ITER,
):
    """One binary linear LDM in the primal, over row blocks: ``(w, iterations, exact)``.

    The hinge is smoothed to a Huber loss of width ``mu`` lowered over
    :data:`_MU_STAGES`; each stage is a trust-region Newton solve whose loss,
    gradient and generalised Hessian are sums over the row blocks where they
    live (:func:`dmargin.engine.linear_loss`); the quadratic terms are d x d
    on the driver.  After each stage but the first, :func:`hinge_polish`
    tries the exact hinge solution from the rows near margin 1, and the
    first success ends the solve.
    Starts, as the dual descent does, from ``beta = 0``: ``w = Q_d^-1 c``,
    or from ``w0`` (LDM-RFE: the previous round's solution on the surviving
    features; the problem is strictly convex, so the start changes the
    iterations, not the solution).
    ``intercept`` not 0: the rows have that constant as a last feature (the
    bias, regularised with ``w``; ``gram`` from :func:`linear_gram` with the
    same ``intercept``), and ``w`` has its weight last.
    """
    Q, c = ldm_quadratic(gram, lambda1, lambda2)
    w = scipy.linalg.solve(Q, c, assume_a="pos") if w0 is None else np.asarray(w0, float)
    gtol = 1e-10 * (1.0 + C * gram[0])
    total = 0
    stages = list(enumerate(_MU_STAGES))
    if w0 is not None:  # near the solution already: the narrow stages only
        stages = [(stage, mu) for stage, mu in stages if mu <= _WARM_MU]
    for stage, mu in stages:

        def evaluate(v, mu=mu):
            f, g, H = linear_loss(
                rows, cols, pair, v, loss="huber", mu=mu, intercept=intercept, hessian=True
            )
            return 0.5 * v @ Q @ v - c @ v + C * f, Q @ v - c + C * g, Q + C * H

        w, nit, _ = _newton(evaluate, w, gtol, max_iter)
        total += nit
        if stage:
            exact, ok = hinge_polish(rows, cols, pair, Q, c, C, w, mu, intercept=intercept)
            if ok:
                return exact, total, True
    return w, total, False


def svm_newton(rows, cols, pair, *, C, intercept_scaling=1.0, max_iter=_NEWTON_MAX_ITER):
    """LinearSVC's primal, over row blocks: ``(w, intercept, iterations, converged)``.

    ``min 1/2 ||[w, b]||^2 + C sum_i max(0, 1 - y_i ([w, b] . [x_i, s]))^2`` with
    ``s = intercept_scaling`` (scikit-learn's ``LinearSVC(loss="squared_hinge",
    penalty="l2")``, whose intercept is a regularised constant feature), by
    trust-region Newton with the generalised Hessian ``I + 2 C sum_{active}
    z z^T``: the loss is piecewise quadratic, so the steps end at the exact
    minimum once the active rows settle.
    """
    d = len(cols) + (1 if intercept_scaling else 0)

    def evaluate(v):
        f, g, H = linear_loss(
            rows, cols, pair, v, loss="squared_hinge", intercept=intercept_scaling, hessian=True
        )
        return 0.5 * v @ v + C * f, v + C * g, np.eye(d) + C * H

    m = linear_gram(rows, cols, [pair])[0][0]
    w, nit, ok = _newton(evaluate, np.zeros(d), 1e-10 * (1.0 + C * m), max_iter)
    if intercept_scaling:
        return w[:-1], w[-1] * intercept_scaling, nit, ok
    return w, 0.0, nit, ok


def primal_machines(rows, cols, n_classes, *, C, lambdas=None, intercept=0.0, start=None):
    """``w`` of every one-vs-one machine on the columns ``cols``, over row blocks.

    Parameters
    ----------
    rows : dmargin.engine.Rows
        The training rows, where they live.
    cols : array-like of int
        The columns the machines use.
    n_classes : int
    C : float
    lambdas : (float, float) or None, default=None
        LDM's ``(lambda1, lambda2)``, solved by :func:`ldm_newton`; ``None``:
        LinearSVC's problem (:func:`svm_newton`, whose intercept is always a
        constant feature 1).
    intercept : float, default=0.0
        LDM's bias as a constant feature of this value (0: no bias).
    start : (cols, coef, intercepts) or None, default=None
        A previous result on a superset of ``cols``: the LDM machines'
        starting point.

    Returns
    -------
    coef : ndarray of shape (n_machines, len(cols))
    intercepts : ndarray of shape (n_machines,)
    n_iter : ndarray of shape (n_machines,)
        Newton iterations of each machine.
    """
    pairs = ovo_pairs(n_classes)
    cols = np.asarray(cols, dtype=np.int64)
    coef = np.zeros((len(pairs), cols.size))
    intercepts = np.zeros(len(pairs))
    n_iter = []
    s = intercept
    grams = None if lambdas is None else linear_gram(rows, cols, pairs, s)
    for p, pair in enumerate(pairs):
        with timer("primal Newton machine %s", pair):
            if grams is None:
                coef[p], intercepts[p], nit, ok = svm_newton(rows, cols, pair, C=C)
            else:
                w0 = None
                if start is not None:
                    w0 = start[1][p, np.searchsorted(start[0], cols)]
                    w0 = np.append(w0, start[2][p] / s) if s else w0
                w, nit, ok = ldm_newton(
                    rows,
                    cols,
                    pair,
                    tuple(g[p] for g in grams),
                    C=C,
                    lambda1=lambdas[0],
                    lambda2=lambdas[1],
                    intercept=s,
                    w0=w0,
                )
                coef[p] = w[: cols.size]
                intercepts[p] = w[cols.size] * s if s else 0.0
        n_iter.append(nit)
        if not ok:
            warn(
                f"The primal Newton solver of machine {pair} did not reach the exact "
                f"solution ({nit} iterations); the weights are those of the smoothed problem. "
                "Scale the features (scale='minmax'), or use solver='cd' on a sample.",
                ConvergenceWarning,
            )
    return coef, intercepts, np.asarray(n_iter)


# ---------------------------------------------------------------------------
# Decision values of the fitted machines
# ---------------------------------------------------------------------------


def _ovo_scores(F, k):
    """Decision values from the machine values ``F``: ``f`` (two classes) or the
    one-vs-one votes plus a confidence in (-1/3, 1/3) (see :meth:`LDM.decision_function`)."""
    if k == 2:
        return F[:, 0]
    votes = np.zeros((F.shape[0], k))
    conf = np.zeros((F.shape[0], k))
    for p, (a, b) in enumerate(ovo_pairs(k)):
        votes[:, b] += F[:, p] > 0
        votes[:, a] += F[:, p] <= 0
        conf[:, b] += F[:, p]
        conf[:, a] -= F[:, p]
    return votes + conf / (3.0 * (np.abs(conf) + 1.0))


def ovo_labels(scores, classes):
    """The labels of decision values: the sign of ``f`` or the largest vote."""
    if scores.ndim == 1:
        return classes[(scores > 0).astype(int)]
    return classes[np.argmax(scores, axis=1)]


class LinearModel:
    """The fitted machines of a linear LDM: ``f_p(x) = w_p . x + b_p`` (pickled into tasks)."""

    def __init__(self, scaling, coef, n_classes, intercept):
        self.scaling, self.coef, self.n_classes = scaling, coef, n_classes
        self.intercept = intercept

    def values(self, X):
        return X @ self.coef.T + self.intercept

    def scores(self, X, scaled=False):
        if not scaled and self.scaling is not None:
            X = self.scaling.apply(X)
        return _ovo_scores(self.values(X), self.n_classes)


class KernelModel(LinearModel):
    """RBF machines: ``f_p(x) = sum_s alpha_ps k(x_s, x) + b_p`` over the support vectors."""

    def __init__(self, scaling, dual_coef, support_vectors, gamma, n_classes, intercept):
        super().__init__(scaling, dual_coef, n_classes, intercept)
        self.support_vectors, self.gamma = support_vectors, gamma

    def values(self, X):
        out = np.empty((X.shape[0], self.coef.shape[0]))
        for s in range(0, X.shape[0], _PREDICT_BLOCK):
            K = kernel_matrix(X[s : s + _PREDICT_BLOCK], self.support_vectors, "rbf", self.gamma)
            out[s : s + _PREDICT_BLOCK] = K @ self.coef.T
        return out + self.intercept
