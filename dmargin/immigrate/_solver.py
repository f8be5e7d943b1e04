"""IMMIGRATE's solver: the weight matrix W, its M-step, and the loop of steps.

Driver-side linear algebra on A x A matrices around one engine pass a step
(Zhao, Hong & Liu 2020, section 3): W is handed
to the engine as an eigen-factor (or as itself when wide), the E-step sums
``Sigma`` over the rows (:func:`dmargin.engine.quad_statistic`), and the
M-step sets W from the negative eigenvalues of ``Sigma``.  Arrays and
scalars in, arrays out: the estimators of :mod:`dmargin.immigrate._immigrate`
(IMMIGRATE, IM4E-IMMIGRATE's second stage, BIM's learners) call
:func:`immigrate_loop` with their parameters.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .._utils import logger, timer, warn
from ..engine import QLSE_KERNEL, quad_statistic, softmin_coef
from ._softmin import warn_not_converged

# ---------------------------------------------------------------------------
# W: its eigen-factor for the engine, and the M-step
# ---------------------------------------------------------------------------


def _eigh(S):
    """Symmetric eigendecomposition by LAPACK's divide and conquer (dsyevd) through
    SciPy, about twice as fast here as numpy's for the A x A matrices of wide data."""
    return scipy.linalg.eigh(S, driver="evd", check_finite=False)


#: Above this many features the engine takes W itself (``lam`` empty) rather
#: than its eigen-factor: the eigendecomposition would cost more than it saves.
_DENSE_W_FEATURES = 256


def _factor(W, rtol=1e-13):
    """``W = U diag(lam) U^T`` keeping the numerically nonzero eigenpairs.

    A diagonal W (the identity start, a pruned W) is returned as ``U`` with no
    columns and ``lam = diag(W)``: the engine then needs no product for q.  A
    wide W (more than :data:`_DENSE_W_FEATURES`) is returned as ``(W, [])``.
    """
    if not np.any(W - np.diag(np.diag(W))):
        return np.empty((W.shape[0], 0)), np.ascontiguousarray(np.diag(W), dtype=np.float64)
    if W.shape[0] > _DENSE_W_FEATURES:
        return np.ascontiguousarray(W, dtype=np.float64), np.empty(0)
    lam, U = _eigh(W)
    keep = np.abs(lam) > rtol * max(np.abs(lam).max(), 1e-300)
    if not keep.any():
        keep[-1] = True
    return np.ascontiguousarray(U[:, keep]), np.ascontiguousarray(lam[keep])


def _eigen_update(sigma_matrix, rtol=1e-13):
    """M-step (Zhao, Hong & Liu 2020, section 3.4.2): ``(W, factor)``, or ``(None, None)``.

    ``W~ = sum_i (-mu_i)+ psi_i psi_i^T`` over the eigenpairs of Sigma, negative
    entries clipped to 0, Frobenius norm 1.  ``None`` when every eigenvalue is
    nonnegative (no direction separates misses from hits better).  When no
    entry was clipped, ``factor = (U, lam)`` is W's eigen-factor read off the
    update (the next E-step then needs no eigendecomposition of W); else None.
    """
    mu, psi = _eigh((sigma_matrix + sigma_matrix.T) / 2)
    eta = np.maximum(-mu, 0.0)
    W = (psi * eta) @ psi.T
    W = (W + W.T) / 2
    clipped = bool(np.any(W < 0))
    W[W < 0] = 0.0
    norm = np.linalg.norm(W)
    if norm == 0:
        return None, None
    factor = None
    if not clipped:
        keep = eta > rtol * eta.max()
        factor = np.ascontiguousarray(psi[:, keep]), np.ascontiguousarray(eta[keep] / norm)
    return W / norm, factor


def immigrate_kernel(W, sigma, n_classes):
    """The engine kernel and parameters of IMMIGRATE's rule under ``W``."""
    U, lam = _factor(W)
    return QLSE_KERNEL, (U, lam, float(sigma), n_classes)


# ---------------------------------------------------------------------------
# The loop: E-step on the engine, M-step here
# ---------------------------------------------------------------------------


def immigrate_loop(rows, W, weight, sigma, max_iter, tol, prune, on_step=None, anchors=None):
    """Alternate E-step (engine) and M-step (here); returns W and the history.

    ``on_step(change=, tol=)`` is called after each step (progress).  ``anchors``: a sample
    of anchors (``weight`` then has one entry per anchor).
    """
    history = []
    factor = None
    for t in range(1, max_iter + 1):
        with timer("IMMIGRATE step %d", t):
            U, lam = factor if factor is not None else _factor(W)
            Sigma, entropy = quad_statistic(
                rows, U, lam, sigma, weight, softmin_coef, anchors=anchors
            )
        W_new, factor = _eigen_update(Sigma)
        if W_new is None:
            warn(
                "Sigma has no negative eigenvalue: no direction separates misses "
                "from hits; keeping the previous W.",
                RuntimeWarning,
            )
            break
        if prune is not None and t >= max_iter // 2:
            pruned = np.where(W_new < prune, 0.0, W_new)
            norm = np.linalg.norm(pruned)
            if norm > 0 and np.any(pruned != W_new):
                W_new, factor = pruned / norm, None
        cost = float(np.sum(W_new * Sigma) + sigma * entropy)
        history.append((cost, float(np.linalg.norm(W_new - W))))
        logger.debug("IMMIGRATE step %d: cost %.6g, change %.3g", t, *history[-1])
        W = W_new
        if on_step is not None:  # the change against tol: the time left from convergence
            on_step(change=history[-1][1], tol=tol)
        if history[-1][1] < tol:
            break
    else:
        warn_not_converged("IMMIGRATE", max_iter, history, tol)
    return W, history


def symmetric_unit(W):
    """``(W + W^T) / 2`` scaled to Frobenius norm 1."""
    W = (W + W.T) / 2
    return W / np.linalg.norm(W)
