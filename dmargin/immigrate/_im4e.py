"""IM4E: iterative margin maximisation under max-min entropy (Bei & Hong 2015).

The vector form of IMMIGRATE (:mod:`dmargin.immigrate._immigrate`): feature weights
``w`` under the weighted Manhattan distance ``d = w^T |x - x'|``, learnt by
alternating an E-step (soft hits and misses, one pass of the pairwise
engine) and a driver-side M-step (Bei & Hong 2015, as the authors' R package
Immigrate 0.2.1 computes it).  It
predicts by expected distance to each class (:mod:`dmargin.immigrate._softmin`), and
prescreens the features of IM4E-IMMIGRATE.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._base import N_ANCHORS, N_FEATURES_TO_SELECT, anchors_for
from .._start import start_fit
from .._utils import timer, warn
from .._validation import RANDOM_STATE, Interval, Options
from ..engine import LSE_KERNEL, im4e_agg, im4e_share, lse_statistic
from ..progress import fit_steps
from ._softmin import (
    HISTORY,
    SCALE,
    SoftminClassifier,
    anchor_weights,
    sample_weights,
    warn_not_converged,
)


def _simplex_projection(v):
    """Euclidean projection onto {w >= 0, sum w = 1} (sort-based)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1), 0.0)


class IM4E(SoftminClassifier):
    """IM4E: iterative margin maximisation under max-min entropy (Bei & Hong 2015).

    The vector form of IMMIGRATE: weighted Manhattan distance ``d = w^T z``,
    soft hits and (pooled) misses, ``m = sum_n D_n (mbar_n - hbar_n)`` on the
    engine, and ``w = m+ / sum(m+)``, the L1 normalisation of the authors' R
    package (Immigrate 0.2.1).

    Parameters
    ----------
    sigma : float, default=1.0
        Softmax temperature of the soft hits and misses (``-d / sigma``).
    lam : float, default=1.0
        Weight of ``||w||^2`` in the cost; with ``weight_update="simplex"``
        the update is the exact minimiser, the projection of ``m / (2 lam)``
        onto the probability simplex.
    max_iter : int, default=10
        Steps: exactly this many with the default ``tol=0``, at most this
        many with ``tol > 0``.
    tol : float, default=0
        As :class:`Immigrate`: ``0`` runs exactly ``max_iter`` steps (the
        reference's 10) and never warns; ``tol > 0`` stops once
        ``||w(t) - w(t-1)||_2 < tol`` and warns (``ConvergenceWarning``) if
        that has not happened after ``max_iter`` steps.

        .. versionchanged:: 0.2.0
           The default was ``1e-4``; it is 0 like :class:`Immigrate`'s, so
           that ``IM4E()`` and the prescreen of ``IM4EImmigrate()`` agree.
    weight_update : {"reference", "simplex"}, default="reference"
        ``"reference"``: ``w = m+ / sum(m+)``, as the authors' R package
        (``lam`` then enters only the reported cost); ``"simplex"``: the
        exact minimiser of the cost, the projection of ``m / (2 lam)`` onto
        the probability simplex.
    scale : {"standard"} or None, default="standard"
        Standardise features (mean 0, variance 1) as :class:`Immigrate`;
        ``None`` uses the numbers as given.
    n_anchors : int, float or None, default=None
        As :class:`Immigrate`: ``m`` anchors against all N samples per step
        (O(m N A) instead of O(N^2 A)), weighted ``N / m``.
    n_features_to_select : int, float or None, default=None
        For ``transform``: ``None`` keeps features with positive weight, an
        int the top ones, a float that fraction.
    random_state : int, Generator or None, default=None
        Seeds the sample of anchors.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        ``w``: nonnegative, summing to 1.
    classes_, n_iter_, history_, n_features_in_, feature_names_in_
        As :class:`Immigrate`.

    Examples
    --------
    >>> from dmargin import IM4E
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("heart")
    >>> round(float(IM4E().fit(X, y).feature_importances_.sum()), 6)
    1.0
    """

    _parameter_constraints = {
        "sigma": [Interval(numbers.Real, 0, None, closed="neither")],
        "lam": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "weight_update": [Options(("reference", "simplex"))],
        "scale": SCALE,
        "n_anchors": N_ANCHORS,
        "n_features_to_select": N_FEATURES_TO_SELECT,
        "random_state": [RANDOM_STATE],
    }

    def __init__(
        self,
        *,
        sigma=1.0,
        lam=1.0,
        max_iter=10,
        tol=0.0,
        weight_update="reference",
        scale="standard",
        n_anchors=None,
        n_features_to_select=None,
        random_state=None,
    ):
        self.sigma = sigma
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.weight_update = weight_update
        self.scale = scale
        self.n_anchors = n_anchors
        self.n_features_to_select = n_features_to_select
        self.random_state = random_state

    def _sigma(self):
        return self.sigma

    def _kernel_params(self):
        return LSE_KERNEL, (self.feature_importances_, float(self.sigma), len(self.classes_))

    def _partial_expectation(self, v):
        return v @ self.feature_importances_

    def _expectation_weights(self):
        return self.feature_importances_

    def fit(self, X, y, sample_weight=None):
        """Learn the weight vector.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : IM4E
        """
        data, rows = start_fit(self, X, y)[:2]
        anchors = anchors_for(self, rows)
        weight = anchor_weights(sample_weights(sample_weight, rows.n_samples), anchors)
        w = np.full(rows.n_features, 1.0 / rows.n_features)
        history = []
        with fit_steps(self, "step", self.max_iter) as steps:
            for t in range(1, self.max_iter + 1):
                with timer("IM4E step %d", t):
                    out = lse_statistic(
                        rows,
                        w,
                        self.sigma,
                        im4e_agg,
                        (w, float(self.sigma)),
                        anchor_weight=weight,
                        anchors=anchors,
                    )
                m, entropy = im4e_share(out)
                if self.weight_update == "simplex":
                    w_new = _simplex_projection(m / (2 * self.lam))
                else:
                    pos = np.maximum(m, 0.0)
                    if not pos.any():
                        warn(
                            "m+ is zero: no feature separates misses from hits; "
                            "keeping the previous weights.",
                            RuntimeWarning,
                        )
                        break
                    w_new = pos / pos.sum()
                cost = float(-w_new @ m + self.sigma * entropy + self.lam * w_new @ w_new)
                history.append((cost, float(np.linalg.norm(w_new - w))))
                w = w_new
                steps.step(change=history[-1][1], tol=self.tol)  # time left from convergence
                if history[-1][1] < self.tol:
                    break
            else:
                warn_not_converged("IM4E", self.max_iter, history, self.tol)
        self.classes_ = data.classes
        self.feature_importances_ = w
        self.anchor_indices_ = None if anchors is None else anchors.index
        self.history_ = np.array(history, dtype=HISTORY)
        self.n_iter_ = len(history)
        self._store_training(data, rows)
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: I-RELIEF's, a pass over the pairs of rows per
        iteration."""
        from ..irelief._cost import irelief_cost

        return irelief_cost(self, n_samples, n_features)
