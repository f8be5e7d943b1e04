"""LDM (Large margin Distribution Machine), LDM-RFE and kernel SVM-RFE.

LDM (Zhang & Zhou, KDD 2014) maximises the margin mean and minimises the
margin variance; it is solved here by dual coordinate descent in the
well-conditioned ``A^-1`` form, or in the primal ``w`` for a linear kernel with
fewer features than rows (``ALGORITHMS.md`` section 9).  LDM-RFE (Ou, Wang,
Pang & Coghill, ICSAI 2017; papers/ldm_rfe.txt) retrains LDM on the surviving
features and removes every feature tied at the minimum of
``S(j) = -alpha^T K(-j) alpha`` (eq. (4)); SVM-RFE (Guyon et al. 2002) is the
same loop around scikit-learn's ``SVC`` (section 9b).  The scores of all
features are one pass of the pairwise engine
(:func:`dmargin.engine.rbf_left_out_sums`).
"""

from __future__ import annotations

import itertools
import numbers
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.linalg
import scipy.optimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import DaskSelectorMixin, start_fit
from ._utils import logger, make_rng, timer, user_stacklevel
from ._compat import gather, is_dask_collection
from ._elimination import N_FEATURES_TO_KEEP, STEP, eliminate
from ._validation import BOOLEAN, NONE, RANDOM_STATE, Interval, Options
from .engine import (hinge_band, hinge_violations, ldm_dcd, ldm_dcd_linear, linear_gram,
                     linear_loss, map_row_blocks, new_row_blocks, prepare_rows,
                     rbf_left_out_sums)

_KERNELS = [Options(("rbf", "linear"))]
_GAMMA = [Options(("scale", "auto")), Interval(numbers.Real, 0, None, closed="neither")]
_SCALE = [Options(("minmax",)), NONE]
_SOLVER = [Options(("auto", "cd", "newton"))]
_FIT_INTERCEPT = [Options(("auto",)), BOOLEAN]
#: Rows of new points per kernel block in ``decision_function``.
_PREDICT_BLOCK = 2048
#: Rows of dask input the in-memory solvers gather at most.  They hold
#: m x m matrices on the driver (the kernel dual: three of them, 2.4 GB at
#: 10,000 rows); above it a fit on dask input is refused, naming the fix.
GATHER_MAX_ROWS = 10_000
#: ``solver="auto"`` solves linear machines by the distributed primal
#: Newton method on dask input, or above this many rows.
NEWTON_MIN_ROWS = 10_000
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
    d2 = (np.einsum("ij,ij->i", U, U)[:, None] + np.einsum("ij,ij->i", V, V)[None, :]
          - 2.0 * (U @ V.T))
    return np.exp(-gamma * np.maximum(d2, 0.0))


def dual_matrices(G, y, lambda1):
    """``(H, coef)`` of the LDM dual in the A^-1 form (ALGORITHMS.md 9.2).

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
    """Linear LDM in ``w`` (ALGORITHMS.md 9.4): ``Q_d`` is d x d and SPD."""
    m, d = X.shape
    Z = X * y[:, None]
    zsum = Z.sum(axis=0)
    Qd = np.eye(d) + (4.0 * lambda1 / m**2) * (m * (X.T @ X) - np.outer(zsum, zsum))
    V = np.ascontiguousarray(scipy.linalg.cho_solve(scipy.linalg.cho_factor(Qd), Z.T).T)
    w = (lambda2 / m) * V.sum(axis=0)
    beta, passes, ok = ldm_dcd_linear(np.ascontiguousarray(Z), V, w, C, tol, max_iter, seed)
    return w, beta, passes, ok


def dual_objective(H, beta, lambda2):
    """``f(beta) = 1/2 beta^T H beta + ((lambda2 / m) H e - e)^T beta`` (eq. of 9.2)."""
    m = len(beta)
    return 0.5 * beta @ H @ beta + ((lambda2 / m) * H.sum(axis=1) - 1.0) @ beta


def _ovo_pairs(n_classes):
    return list(itertools.combinations(range(n_classes), 2))


def _machine_labels(codes, pair):
    """Rows of one one-vs-one machine and their labels (+1 for the higher class)."""
    rows = np.flatnonzero((codes == pair[0]) | (codes == pair[1]))
    return rows, np.where(codes[rows] == pair[1], 1.0, -1.0)


def _gather(x):
    return gather(x, what="the LDM training rows")


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


def fit_machines(X, codes, classes, *, C, lambda1, lambda2, kernel, gamma, tol, max_iter, rng,
                 primal=None, fit_intercept=False) -> Machines:
    """One binary LDM per pair of classes on the rows ``X`` (ALGORITHMS.md 9.2-9.5).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Scaled rows, in memory.
    codes : ndarray of shape (n_samples,)
        Class codes, indices into ``classes``.
    classes : ndarray
        The class labels (named in the convergence warning).
    C, lambda1, lambda2, kernel, tol, max_iter
        As :class:`LDM`.
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
    pairs = _ovo_pairs(len(classes))
    Xp = np.column_stack([X, np.ones(m)]) if fit_intercept and primal else X
    intercept = np.zeros(len(pairs))
    alpha = np.zeros((len(pairs), m))
    coef = np.zeros((len(pairs), d))
    betas, n_iter = [], []
    for p, pair in enumerate(pairs):
        idx, yp = _machine_labels(codes, pair)
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
            warnings.warn(
                f"LDM coordinate descent did not reach tol={tol} in max_iter={max_iter} "
                f"passes (classes {classes[list(pair)]}); increase max_iter, or scale the "
                "features.", ConvergenceWarning, stacklevel=user_stacklevel())
        betas.append(beta)
        n_iter.append(passes)
    if primal:
        return Machines("primal", None, None, coef if kernel == "linear" else None, betas,
                        np.asarray(n_iter), intercept)
    support = np.flatnonzero(np.any(alpha != 0, axis=0))
    if kernel == "linear":  # w from the support rows only, as the dual expansion
        coef = alpha[:, support] @ X[support]
    return Machines("dual", alpha, support, coef if kernel == "linear" else None, betas,
                    np.asarray(n_iter), intercept)


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

    res = scipy.optimize.minimize(lambda w: trio(w)[:2], w0, jac=True, hess=lambda w: trio(w)[2],
                                  method="trust-exact",
                                  options={"gtol": gtol, "maxiter": max_iter})
    return res.x, int(res.nit), bool(res.success)


def ldm_quadratic(gram, lambda1, lambda2):
    """``(Q_d, c)`` of the linear LDM primal ``1/2 w^T Q_d w - c^T w + C sum_i xi_i``.

    From ``(m, b = sum_i y_i x_i, X^T X)`` (:func:`dmargin.engine.linear_gram`):
    ``Q_d = I + (4 lambda1 / m^2) (m X^T X - b b^T)`` and ``c = (lambda2 / m) b``
    (ALGORITHMS.md 9.1, 9.4: the variance and mean terms of the margins).
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


def ldm_newton(rows, cols, pair, gram, *, C, lambda1, lambda2, intercept=0.0, w0=None,
               max_iter=_NEWTON_MAX_ITER):
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
            f, g, H = linear_loss(rows, cols, pair, v, loss="huber", mu=mu, intercept=intercept,
                                  hessian=True)
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
        f, g, H = linear_loss(rows, cols, pair, v, loss="squared_hinge",
                              intercept=intercept_scaling, hessian=True)
        return 0.5 * v @ v + C * f, v + C * g, np.eye(d) + C * H

    m = linear_gram(rows, cols, [pair])[0][0]
    w, nit, ok = _newton(evaluate, np.zeros(d), 1e-10 * (1.0 + C * m), max_iter)
    if intercept_scaling:
        return w[:-1], w[-1] * intercept_scaling, nit, ok
    return w, 0.0, nit, ok


def check_gather(estimator, X, n_samples):
    """Refuse to gather more than :data:`GATHER_MAX_ROWS` dask rows to the driver."""
    if is_dask_collection(X) and n_samples > GATHER_MAX_ROWS:
        name = type(estimator).__name__
        raise ValueError(
            f"{name}(kernel={estimator.kernel!r}) trains on the driver with m x m kernel "
            f"matrices, and the dask input has {int(n_samples)} rows, above its limit of "
            f"{GATHER_MAX_ROWS} rows (dmargin._ldm.GATHER_MAX_ROWS). Use "
            f"{name}(kernel='linear'), whose primal solver runs on the row blocks at any "
            f"size, or fit on a sample of at most {GATHER_MAX_ROWS} rows (e.g. "
            "ddf.sample(frac=...) or X[:n]).")


def _known_rows(X):
    """The row count of a dask array with known chunks, else None (DataFrames: lazy)."""
    n = getattr(X, "shape", (None,))[0] if is_dask_collection(X) else None
    return int(n) if isinstance(n, numbers.Integral) and not isinstance(n, bool) else None


def pick_solver(estimator, X, n_samples) -> str:
    """``"newton"`` or ``"cd"`` for ``estimator.solver`` on these data (see :class:`LDM`)."""
    solver = getattr(estimator, "solver", "auto")
    if solver == "newton" and estimator.kernel != "linear":
        raise ValueError(f"solver='newton' solves linear machines; kernel={estimator.kernel!r} "
                         "needs solver='cd' (or 'auto').")
    if solver == "auto":
        solver = ("newton" if estimator.kernel == "linear"
                  and (is_dask_collection(X) or n_samples > NEWTON_MIN_ROWS) else "cd")
    if solver == "cd":
        check_gather(estimator, X, n_samples)
    return solver


def uses_intercept(estimator) -> bool:
    """Whether the LDM machines of ``estimator`` have a bias (``fit_intercept``;
    ``"auto"``: with the linear kernel only)."""
    fit_intercept = getattr(estimator, "fit_intercept", False)
    if fit_intercept == "auto":
        return estimator.kernel == "linear"
    return bool(fit_intercept)


def newton_machines(estimator, rows, cols, n_classes, start=None):
    """``w`` of every one-vs-one machine on the columns ``cols``, by the primal
    Newton solver of ``estimator`` (:func:`ldm_newton`, or :func:`svm_newton`
    for :class:`SVMRFE`): ``(coef of shape (n_machines, len(cols)), intercepts,
    iterations)``.  ``start``: a previous result ``(cols, coef, intercepts)``
    on a superset of ``cols``, the LDM machines' starting point."""
    pairs = _ovo_pairs(n_classes)
    cols = np.asarray(cols, dtype=np.int64)
    coef = np.zeros((len(pairs), cols.size))
    intercept = np.zeros(len(pairs))
    n_iter = []
    s = 1.0 if uses_intercept(estimator) else 0.0
    grams = None if isinstance(estimator, SVMRFE) else linear_gram(rows, cols, pairs, s)
    for p, pair in enumerate(pairs):
        with timer("primal Newton machine %s", pair):
            if grams is None:
                coef[p], intercept[p], nit, ok = svm_newton(rows, cols, pair, C=estimator.C)
            else:
                w0 = None
                if start is not None:
                    w0 = start[1][p, np.searchsorted(start[0], cols)]
                    w0 = np.append(w0, start[2][p] / s) if s else w0
                w, nit, ok = ldm_newton(rows, cols, pair, tuple(g[p] for g in grams),
                                        C=estimator.C, lambda1=estimator.lambda1,
                                        lambda2=estimator.lambda2, intercept=s, w0=w0)
                coef[p] = w[:cols.size]
                intercept[p] = w[cols.size] * s if s else 0.0
        n_iter.append(nit)
        if not ok:
            warnings.warn(
                f"The primal Newton solver of machine {pair} did not reach the exact "
                f"solution ({nit} iterations); the weights are those of the smoothed problem. "
                "Scale the features (scale='minmax'), or use solver='cd' on a sample.",
                ConvergenceWarning, stacklevel=user_stacklevel())
    return coef, intercept, np.asarray(n_iter)


def _ovo_scores(F, k):
    """Decision values from the machine values ``F``: ``f`` (two classes) or the
    one-vs-one votes plus a confidence in (-1/3, 1/3) (see :meth:`LDM.decision_function`)."""
    if k == 2:
        return F[:, 0]
    votes = np.zeros((F.shape[0], k))
    conf = np.zeros((F.shape[0], k))
    for p, (a, b) in enumerate(_ovo_pairs(k)):
        votes[:, b] += F[:, p] > 0
        votes[:, a] += F[:, p] <= 0
        conf[:, b] += F[:, p]
        conf[:, a] -= F[:, p]
    return votes + conf / (3.0 * (np.abs(conf) + 1.0))


def _labels(scores, classes):
    if scores.ndim == 1:
        return classes[(scores > 0).astype(int)]
    return classes[np.argmax(scores, axis=1)]


class _LinearModel:
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


class _KernelModel(_LinearModel):
    """RBF machines: ``f_p(x) = sum_s alpha_ps k(x_s, x) + b_p`` over the support vectors."""

    def __init__(self, scaling, dual_coef, support_vectors, gamma, n_classes, intercept):
        super().__init__(scaling, dual_coef, n_classes, intercept)
        self.support_vectors, self.gamma = support_vectors, gamma

    def values(self, X):
        out = np.empty((X.shape[0], self.coef.shape[0]))
        for s in range(0, X.shape[0], _PREDICT_BLOCK):
            K = kernel_matrix(X[s:s + _PREDICT_BLOCK], self.support_vectors, "rbf", self.gamma)
            out[s:s + _PREDICT_BLOCK] = K @ self.coef.T
        return out + self.intercept


def _ldm_block(X, model, what, classes):
    """One row block's decision values or labels (a task of the lazy predictions)."""
    scores = model.scores(X)
    return _labels(scores, classes) if what == "predict" else scores


# ---------------------------------------------------------------------------
# LDM classifier
# ---------------------------------------------------------------------------


class LDM(ClassifierMixin, BaseEstimator):
    """Large margin Distribution Machine (Zhang & Zhou, KDD 2014).

    Solves ``min 1/2 ||w||^2 + lambda1 var(margin) - lambda2 mean(margin) +
    C sum xi`` (with the RBF kernel no bias term, as the official package;
    see ``fit_intercept``) by dual coordinate
    descent on ``f(b) = 1/2 b^T H b + ((lambda2/m) H e - e)^T b``, ``0 <= b <= C``,
    with ``H = Y G A^-1 Y`` (``ALGORITHMS.md`` 9.2-9.3).  With
    ``kernel="linear"`` and fewer features than rows the same descent runs on
    the primal ``w`` (9.4).  More than two classes: one binary machine per
    pair of classes and a majority vote (9.5).

    Training by coordinate descent (``solver="cd"``) is on the driver and
    needs the three m x m matrices of the official solver (O(m^2) memory,
    O(m^3) time per machine) -- except the linear primal path, O(m d + d^3).
    Dask input is gathered for it, up to :data:`GATHER_MAX_ROWS` (10,000)
    rows; above that such a fit is refused with a ``ValueError`` naming the
    fix.  ``solver="newton"`` (linear kernel) solves the primal
    ``1/2 w^T Q_d w - c^T w + C sum_i max(0, 1 - y_i w . x_i)`` (9.1, 9.4) by
    trust-region Newton on the driver, each loss, gradient and generalised
    Hessian a sum over the row blocks where they live, with the hinge
    smoothed in stages and the exact hinge solution recovered at the end
    (:func:`ldm_newton`): the rows are never gathered, and the solution is the
    dual's (to 1e-6 and better).  ``decision_function`` and ``predict`` of a
    dask array or DataFrame return a lazy dask array, computed block by block
    where the rows are.

    Parameters
    ----------
    C : float, default=1.0
        Box bound of the dual variables (the slack penalty).
    lambda1 : float, default=0.125
        Weight of the margin variance.
    lambda2 : float, default=0.125
        Weight of the margin mean.
    kernel : {"rbf", "linear"}, default="rbf"
        ``exp(-gamma ||u - v||^2)`` or ``u . v``.
    gamma : {"scale", "auto"} or float, default="scale"
        RBF width: ``1 / (A var(X))``, ``1 / A``, or the value.
    max_iter : int, default=1000
        Passes of coordinate descent at most (per machine).
    tol : float, default=0.01
        Stop when max - min of the projected gradient is at most ``tol``
        (the official solver's ``eps``).
    scale : {"minmax"} or None, default=None
        ``"minmax"`` scales each feature to [0, 1] with the training ranges
        (as the LDM authors do); the same map is applied in ``predict``.
    fit_intercept : bool or "auto", default="auto"
        Add a bias ``b`` (``f(x) = w . x + b``) as the weight of a constant
        feature 1, regularised with ``w`` as LIBLINEAR's bias (the kernel
        becomes ``k + 1``).  ``"auto"``: with the linear kernel only.  The
        official package has none; a linear machine without one is a
        hyperplane through the origin, which on [0, 1]-scaled features leans
        on whichever features stand in for the missing offset (linear
        LDM-RFE then ranks those high).
    solver : {"auto", "cd", "newton"}, default="auto"
        ``"cd"``: dual coordinate descent in memory (the official solver's);
        ``"newton"``: the distributed primal solver (linear kernel only);
        ``"auto"``: ``"newton"`` for the linear kernel on dask input or above
        :data:`NEWTON_MIN_ROWS` (10,000) rows, else ``"cd"``.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the coordinate order of the descent.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    dual_coef_ : ndarray of shape (n_machines, n_support)
        ``alpha`` of each machine on the support rows (labels absorbed, zero
        on rows of other classes).  Not set on the linear primal path.
    support_ : ndarray of shape (n_support,)
        Training rows with a nonzero ``alpha`` in some machine.
    support_vectors_ : ndarray of shape (n_support, n_features)
        Those rows (scaled).
    coef_ : ndarray of shape (n_machines, n_features)
        ``w`` of each machine; only with ``kernel="linear"``.
    intercept_ : ndarray of shape (n_machines,)
        ``b`` of each machine (zeros without ``fit_intercept``).
    beta_ : list of ndarray
        The dual solution of each machine (not set by ``solver="newton"``,
        where it would be one number per row).
    gamma_ : float or None
        The RBF width used (``None`` after ``solver="newton"``).
    solver_ : {"dual", "primal", "newton"}
        Coordinate descent on the dual or on ``w``, or the distributed
        primal Newton solver.
    n_iter_ : ndarray of shape (n_machines,)
        Descent passes (Newton iterations) of each machine.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only for input with string column names.

    See Also
    --------
    LDMRFE : Recursive feature elimination with this classifier.

    References
    ----------
    T. Zhang and Z.-H. Zhou, "Large margin distribution machine", KDD 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from dmargin import LDM
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 30)
    >>> X = rng.normal(size=(60, 3)) + 2 * y[:, None]
    >>> LDM(random_state=0).fit(X, y).score(X, y) > 0.9
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "lambda1": [Interval(numbers.Real, 0, None)],
        "lambda2": [Interval(numbers.Real, 0, None)],
        "kernel": _KERNELS,
        "gamma": _GAMMA,
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "scale": _SCALE,
        "fit_intercept": _FIT_INTERCEPT,
        "solver": _SOLVER,
        "random_state": [RANDOM_STATE],
    }

    def __init__(self, C=1.0, *, lambda1=0.125, lambda2=0.125, kernel="rbf", gamma="scale",
                 max_iter=1000, tol=0.01, scale=None, fit_intercept="auto", solver="auto",
                 random_state=None):
        self.C = C
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.kernel = kernel
        self.gamma = gamma
        self.max_iter = max_iter
        self.tol = tol
        self.scale = scale
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.random_state = random_state

    def fit(self, X, y):
        """Train one binary LDM per pair of classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            numpy, pandas or dask.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : LDM
        """
        if _known_rows(X) is not None:  # fail before any pass over dask rows
            pick_solver(self, X, _known_rows(X))
        data, _ = start_fit(self, X, y, rows=False)
        solver = pick_solver(self, X, data.X.shape[0])
        self._scaling = data.scaling
        self.classes_ = data.classes
        for name in ("dual_coef_", "support_", "support_vectors_", "coef_", "beta_"):
            if hasattr(self, name):  # a refit may change the solver
                delattr(self, name)
        if solver == "newton":
            rows = prepare_rows(data.X, data.codes, len(data.classes))
            coef, intercept, n_iter = newton_machines(self, rows, np.arange(rows.n_features),
                                                      len(data.classes))
            self.gamma_ = None  # the linear kernel has no width
            self.solver_ = "newton"
            self.n_iter_ = n_iter
            self.coef_ = coef
            self.intercept_ = intercept
            return self
        X, codes = _gather(data.X), _gather(data.codes)
        self.gamma_ = resolve_gamma(self.gamma, X)
        machines = fit_machines(X, codes, self.classes_, C=self.C, lambda1=self.lambda1,
                                lambda2=self.lambda2, kernel=self.kernel, gamma=self.gamma_,
                                tol=self.tol, max_iter=self.max_iter,
                                rng=make_rng(self.random_state),
                                fit_intercept=uses_intercept(self))
        self.solver_ = machines.solver
        self.intercept_ = machines.intercept
        self.beta_ = machines.beta
        self.n_iter_ = machines.n_iter
        if machines.solver == "dual":
            self.support_ = machines.support
            self.support_vectors_ = X[machines.support]
            self.dual_coef_ = machines.alpha[:, machines.support]
        if self.kernel == "linear":
            self.coef_ = machines.coef
        return self

    def _scaled(self, X):
        check_is_fitted(self, "classes_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if self._scaling is not None:
            X = self._scaling.apply(X)
        return X

    def _machine_values(self, X):
        """``f_p(x)`` of every machine, shape (n_samples, n_machines)."""
        X = self._scaled(X)
        return self._model().values(X)

    def _model(self):
        """What a row block needs to be scored: small, sent with each task."""
        if self.kernel == "linear":
            return _LinearModel(self._scaling, self.coef_, len(self.classes_), self.intercept_)
        return _KernelModel(self._scaling, self.dual_coef_, self.support_vectors_,
                            self.gamma_, len(self.classes_), self.intercept_)

    def _on_blocks(self, X, what, dtype=np.float64):
        """``what`` of every row block of a dask ``X``: a lazy dask array."""
        check_is_fitted(self, "classes_")
        X = new_row_blocks(X, self.n_features_in_, getattr(self, "feature_names_in_", None),
                           type(self).__name__)
        k = len(self.classes_)
        n_cols = None if what == "predict" or k == 2 else k
        return map_row_blocks(_ldm_block, X, self._model(), what, self.classes_, n_cols=n_cols,
                              dtype=dtype)

    def decision_function(self, X):
        """``f(x)`` for two classes (> 0: ``classes_[1]``); one-vs-one votes otherwise.

        With more than two classes, each column is the class's number of
        pairwise wins plus a confidence in (-1/3, 1/3) from the summed
        machine values (scikit-learn's ``decision_function_shape="ovr"``), so
        its argmax is ``predict``.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray or dask array of shape (n_samples,) or (n_samples, n_classes)
            Lazy (a dask array) for dask input.
        """
        if is_dask_collection(X):
            return self._on_blocks(X, "decision")
        X = self._scaled(X)
        return self._model().scores(X, scaled=True)

    def predict(self, X):
        """The sign of ``f`` (two classes) or the one-vs-one vote winner.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray or dask array of shape (n_samples,)
            Lazy (a dask array) for dask input.
        """
        if is_dask_collection(X):
            return self._on_blocks(X, "predict", dtype=self.classes_.dtype)
        return _labels(self.decision_function(X), self.classes_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


# ---------------------------------------------------------------------------
# Recursive feature elimination by S(j) = -alpha^T K(-j) alpha
# ---------------------------------------------------------------------------


class _KernelRFE(DaskSelectorMixin, BaseEstimator):
    """The RFE loop shared by LDM-RFE and SVM-RFE.

    Each subclass trains its machines in ``_machines(X, codes, gamma, rng)``,
    the coefficients of the binary machines on ``X`` (surviving features):
    ``(alpha, w)`` with ``alpha`` of shape (n_samples, n_machines) for the RBF
    kernel (``w`` None), or ``w`` of shape (n_machines, A) for the linear
    kernel (``alpha`` None).
    """

    def fit(self, X, y):
        """Rank the features by recursive elimination.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            numpy, pandas or dask.  Dask with ``solver="cd"``: the machines
            train on the driver (at most :data:`GATHER_MAX_ROWS` rows are
            gathered) and the RBF scoring pass runs on the persisted row
            blocks; with ``solver="newton"`` nothing is gathered.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        # Initialization
        if _known_rows(X) is not None:  # fail before any pass over dask rows
            pick_solver(self, X, _known_rows(X))
        data, rows = start_fit(self, X, y, rows=True)
        solver = pick_solver(self, X, rows.n_samples)
        if solver == "newton":  # the rows stay where they are
            gamma, k = None, len(data.classes)
            last = []

            def machines(cols):
                # Each round starts from the last one's machines on the survivors.
                coef, intercept, _ = newton_machines(self, rows, cols, k,
                                                     start=last[-1] if last else None)
                last[:] = [(np.asarray(cols), coef, intercept)]
                return None, coef
        else:
            Xd, codes = _gather(rows.X), _gather(rows.codes)
            gamma = resolve_gamma(self.gamma, Xd)  # fixed for all rounds (9b, [CHOICE])
            rng = make_rng(self.random_state)
            machines = lambda cols: self._machines(Xd[:, cols], codes, gamma, rng)  # noqa: E731

        # Elimination: Algorithm 1 of papers/ldm_rfe.txt, every feature tied at the minimum
        result = eliminate(self, lambda cols: self._scores(rows, machines(cols), cols, gamma),
                           rows.n_features, n_features_to_select=self.n_features_to_select,
                           step=self.step, ties="together")

        # Final attributes
        self.classes_ = data.classes
        self.gamma_ = gamma
        self.support_ = result.support
        self.ranking_ = result.ranking
        self.n_features_ = int(result.support.sum())
        self.scores_ = result.history
        self.elimination_scores_ = result.scores
        self.n_iter_ = result.n_iter
        return self

    def _scores(self, rows, machines, cols, gamma):
        """``S(j) = -alpha^T K(-j) alpha`` (or |DJ|) for the surviving features."""
        alpha, w = machines
        if w is not None:
            # Linear kernel: alpha^T K(-j) alpha = ||w||^2 - w_j^2 (ALGORITHMS.md 9b).
            full = np.sum(w * w)
            left_out = full - np.sum(w * w, axis=0)
        else:
            sums = rbf_left_out_sums(rows, alpha, cols, gamma)
            left_out, full = sums[:-1], sums[-1]
        if self.criterion == "abs":
            return np.abs(0.5 * (full - left_out))
        return -left_out

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        return self.support_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.allow_nan = False
        return tags


_RFE_CONSTRAINTS = {
    "n_features_to_select": N_FEATURES_TO_KEEP,
    "step": STEP,
    "C": [Interval(numbers.Real, 0, None, closed="neither")],
    "kernel": _KERNELS,
    "gamma": _GAMMA,
    "criterion": [Options(("signed", "abs"))],
    "scale": _SCALE,
    "solver": _SOLVER,
    "random_state": [RANDOM_STATE],
}

_RFE_DOC = """
    n_features_to_select : int or float, default=1
        Features kept: a count, or a fraction in (0, 1] (at least one).
    step : int or float, default=1
        Features removed per round (a fraction in (0, 1) of the initial
        count, at least one); every feature tied at the minimum score is
        removed with them (papers/ldm_rfe.txt, Algorithm 1), unless that
        would leave fewer than ``n_features_to_select``.
    C : float, default={C}
    kernel : {{"rbf", "linear"}}, default="rbf"
        ``"linear"`` ranks by ``w_j^2`` (Guyon's linear SVM-RFE criterion).
    gamma : {{"scale", "auto"}} or float, default="scale"
        RBF width, resolved once on all features and kept for every round.
    criterion : {{"signed", "abs"}}, default="signed"
        ``"signed"`` removes the smallest ``S(j) = -alpha^T K(-j) alpha``
        (the paper's eq. (4); equivalently the smallest
        ``DJ(j) = (alpha^T K alpha - alpha^T K(-j) alpha) / 2``); ``"abs"``
        the smallest ``|DJ(j)|``.
    scale : {{"minmax"}} or None, default="minmax"
        Scale features to [0, 1] first (the paper's protocol).
    solver : {{"auto", "cd", "newton"}}, default="auto"
        How the machines train.  ``"cd"``: in memory on the driver ({cd});
        dask input above :data:`GATHER_MAX_ROWS` (10,000) rows is refused
        with a ``ValueError`` rather than gathered.  ``"newton"`` (linear
        kernel): {newton}, by trust-region Newton over the row blocks where
        they live, nothing gathered -- for 10^6 rows and more.
        ``"auto"``: ``"newton"`` for the linear kernel on dask input or above
        :data:`NEWTON_MIN_ROWS` (10,000) rows, else ``"cd"``.
    random_state : int, Generator, RandomState or None, default=None
"""

_RFE_ATTRS = """
    Attributes
    ----------
    support_ : ndarray of shape (n_features_in_,)
        Mask of the kept features.
    ranking_ : ndarray of shape (n_features_in_,)
        1 for kept features; features removed in the last round get 2, and
        so on (as scikit-learn's ``RFE``).
    n_features_ : int
        Number of kept features.
    scores_ : list of (ndarray, ndarray)
        Per round: the surviving feature indices and their scores.
    elimination_scores_ : ndarray of shape (n_features_in_,)
        The criterion (``S(j)``, or ``|DJ(j)|`` with ``criterion="abs"``)
        each feature had in the round it was eliminated; kept features:
        their criterion in the last round.  NaN when there was no round
        (``n_features_to_select`` keeps every feature).
    gamma_ : float or None
        ``None`` with ``solver="newton"`` (the linear kernel has no width).
    n_iter_ : int
        Rounds of elimination.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only for input with string column names.
"""


class LDMRFE(_KernelRFE):
    __doc__ = """Recursive feature elimination with LDM (Ou, Wang, Pang & Coghill, 2017).

    Each round trains LDM (one machine per pair of classes) on the surviving
    features and scores every feature by ``S(j) = -alpha^T K(-j) alpha``
    summed over the machines (papers/ldm_rfe.txt eq. (4)); the lowest go.
    The scores are one blocked pass over pairs of rows on the engine
    (``K(-j)`` from the identity ``K(-j)_ab = K_ab exp(gamma (x_aj - x_bj)^2)``,
    never a kernel matrix per feature); for dask input or under a
    ``distributed.Client`` that pass runs as tasks on the persisted row blocks.

    Parameters
    ----------""" + _RFE_DOC.format(
        C="1.0", cd="LDM's dual coordinate descent",
        newton="the LDM primal (ALGORITHMS.md 9.1, 9.4) solved exactly, as :class:`LDM` does"
    ) + """    lambda1 : float, default=0.125
    lambda2 : float, default=0.125
        LDM's margin variance and mean weights (see :class:`LDM`).
    fit_intercept : bool or "auto", default="auto"
        LDM's bias (see :class:`LDM`; ``"auto"``: with the linear kernel
        only).  The scores use ``w`` (or ``alpha``) alone: with the RBF
        kernel the bias shifts every ``S(j)`` by the same ``(sum alpha)^2``.
    max_iter : int, default=1000
    tol : float, default=0.01
        LDM's descent limits.
""" + _RFE_ATTRS + """
    See Also
    --------
    LDM : The classifier.
    SVMRFE : The same elimination with scikit-learn's SVC.

    Examples
    --------
    >>> import numpy as np
    >>> from dmargin import LDMRFE
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 40)
    >>> X = rng.random((80, 5))
    >>> X[:, 2] += y
    >>> LDMRFE(n_features_to_select=1, random_state=0).fit(X, y).get_support()
    array([False, False,  True, False, False])
    """

    _parameter_constraints: ClassVar[dict] = {
        **_RFE_CONSTRAINTS,
        "lambda1": [Interval(numbers.Real, 0, None)],
        "lambda2": [Interval(numbers.Real, 0, None)],
        "fit_intercept": _FIT_INTERCEPT,
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(self, n_features_to_select=1, *, step=1, C=1.0, lambda1=0.125, lambda2=0.125,
                 kernel="rbf", gamma="scale", criterion="signed", fit_intercept="auto",
                 max_iter=1000, tol=0.01, scale="minmax", solver="auto", random_state=None):
        self.n_features_to_select = n_features_to_select
        self.step = step
        self.C = C
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.kernel = kernel
        self.gamma = gamma
        self.criterion = criterion
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.scale = scale
        self.solver = solver
        self.random_state = random_state

    def _machines(self, X, codes, gamma, rng):
        machines = fit_machines(X, codes, np.arange(codes.max() + 1), C=self.C,
                                lambda1=self.lambda1, lambda2=self.lambda2, kernel=self.kernel,
                                gamma=gamma, tol=self.tol, max_iter=self.max_iter, rng=rng,
                                fit_intercept=uses_intercept(self))
        if self.kernel == "linear":
            return None, machines.coef
        return machines.alpha.T, None


class SVMRFE(_KernelRFE):
    __doc__ = """SVM-RFE (Guyon, Weston, Barnhill & Vapnik, 2002) with scikit-learn's SVC.

    The baseline of LDM-RFE: each round trains ``SVC`` (one binary machine
    per pair of classes) and scores ``S(j) = -a^T K(-j) a`` with ``a`` the
    signed dual coefficients (``DJ(j)`` of Guyon et al. up to a constant;
    ``w_j^2`` for the linear kernel), on the same engine pass as
    :class:`LDMRFE`.

    Parameters
    ----------""" + _RFE_DOC.format(
        C="1.0", cd="scikit-learn's ``SVC``, hinge loss with an unregularised intercept",
        newton="scikit-learn's ``LinearSVC`` problem (squared hinge, L2, intercept as a "
               "regularised constant feature), so the ranking can differ from ``\"cd\"``'s"
    ) + _RFE_ATTRS + """
    See Also
    --------
    LDMRFE : The same elimination with LDM.
    sklearn.feature_selection.RFE : Linear SVM-RFE by ``coef_``.
    """

    _parameter_constraints: ClassVar[dict] = dict(_RFE_CONSTRAINTS)

    def __init__(self, n_features_to_select=1, *, step=1, C=1.0, kernel="rbf", gamma="scale",
                 criterion="signed", scale="minmax", solver="auto", random_state=None):
        self.n_features_to_select = n_features_to_select
        self.step = step
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.criterion = criterion
        self.scale = scale
        self.solver = solver
        self.random_state = random_state

    def _machines(self, X, codes, gamma, rng):
        from sklearn.svm import SVC

        pairs = _ovo_pairs(codes.max() + 1)
        alpha = np.zeros((X.shape[0], len(pairs)))
        w = np.zeros((len(pairs), X.shape[1]))
        for p, pair in enumerate(pairs):
            idx, yp = _machine_labels(codes, pair)
            svc = SVC(C=self.C, kernel=self.kernel, gamma=gamma,
                      random_state=int(rng.integers(2**31 - 1))).fit(X[idx], yp)
            alpha[idx[svc.support_], p] = svc.dual_coef_[0]
            w[p] = svc.dual_coef_[0] @ X[idx[svc.support_]]
        return (None, w) if self.kernel == "linear" else (alpha, None)
