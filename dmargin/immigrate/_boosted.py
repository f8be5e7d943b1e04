"""BIM, boosted IMMIGRATE (Zhao, Hong & Liu 2020, section 3.5, Algorithm 3).

AdaBoost over IMMIGRATE learners with a decreasing sigma; each round is one
IMMIGRATE fit (:mod:`dmargin.immigrate._immigrate`) with the round's sample
weights, and the committee predicts by its learners' weighted votes.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._base import N_FEATURES_TO_SELECT, WeightSelector
from .._dask import gather, is_dask_collection
from .._start import start_fit
from .._utils import logger, warn
from .._validation import Interval
from ..progress import fit_steps
from ._immigrate import fitted_immigrate
from ._softmin import (
    SCALE,
    loo_codes,
    scaled_rows,
    softmin_distances,
    softmin_on_blocks,
)
from ._solver import immigrate_kernel, immigrate_loop


class BoostedImmigrate(ClassifierMixin, WeightSelector):
    """BIM: AdaBoost over IMMIGRATE learners with a decreasing sigma (Algorithm 3).

    Round ``t`` fits IMMIGRATE with ``sigma_t = sigma_max (sigma_min /
    sigma_max)^((t - 1) / T)`` and sample weights ``D_t`` in both the margin
    and the entropy terms (eq. 3.19); its weighted training error ``eps_t``
    uses leave-one-out predictions (a training point is excluded from its own
    class).  A learner with ``eps_t >= 1/2`` or ``eps_t = 0`` is discarded and
    boosting continues; otherwise ``alpha_t = 0.5 ln((1 - eps_t) / eps_t)`` and
    ``D`` grows by ``exp(alpha_t)`` on the misclassified points.  The final
    rule is the ``alpha``-weighted vote (Zhao, Hong & Liu 2020, Algorithm 3).

    Parameters
    ----------
    n_estimators : int, default=100
        Boosting rounds ``T``.
    sigma_max, sigma_min : float, default=4.0, 0.2
        The sigma schedule's ends.
    max_iter : int, default=5
        IMMIGRATE steps per learner, always exactly this many: boosting
        fixes the weak learners' effort (Algorithm 3), so there is no
        convergence check, no ``tol`` and no ``ConvergenceWarning``.
    scale : {"standard"} or None, default="standard"
        Standardise features (mean 0, variance 1) as :class:`Immigrate`;
        ``None`` uses the numbers as given.
    n_features_to_select : int, float or None, default=None
        For ``transform``, ranking by the diagonal of ``weight_matrix_``.

    Attributes
    ----------
    estimators_ : list of Immigrate
        The kept learners, fitted.
    estimator_weights_ : ndarray of shape (n_kept,)
        Their ``alpha_t``.
    estimator_errors_ : ndarray of shape (n_estimators,)
        ``eps_t`` of every round, kept or not.
    n_iter_ : int
        Boosting rounds run.
    weight_matrix_ : ndarray of shape (n_features, n_features)
        The ``alpha``-weighted average of the learners' ``W``.
    feature_importances_ : ndarray of shape (n_features,)
        Its diagonal.
    classes_, n_features_in_, feature_names_in_

    Notes
    -----
    If every round is discarded (for instance when a single learner already
    classifies the training set perfectly), the learner with the smallest
    training error is kept with weight 1 and a warning is raised.
    """

    _parameter_constraints = {
        "n_estimators": [Interval(numbers.Integral, 1, None)],
        "sigma_max": [Interval(numbers.Real, 0, None, closed="neither")],
        "sigma_min": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "scale": SCALE,
        "n_features_to_select": N_FEATURES_TO_SELECT,
    }

    def __init__(
        self,
        *,
        n_estimators=100,
        sigma_max=4.0,
        sigma_min=0.2,
        max_iter=5,
        scale="standard",
        n_features_to_select=None,
    ):
        self.n_estimators = n_estimators
        self.sigma_max = sigma_max
        self.sigma_min = sigma_min
        self.max_iter = max_iter
        self.scale = scale
        self.n_features_to_select = n_features_to_select

    def fit(self, X, y):
        """Boost IMMIGRATE learners.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : BoostedImmigrate
        """
        data, rows = start_fit(self, X, y)[:2]
        codes = np.asarray(gather(data.codes, what="the labels"))
        n, n_features = rows.n_samples, rows.n_features
        K = len(data.classes)
        D = np.full(n, 1.0 / n)
        ratio = (self.sigma_min / self.sigma_max) ** (1.0 / self.n_estimators)
        kept, alphas, errors, fallback = [], [], [], None
        with fit_steps(self, "round", self.n_estimators) as steps:
            for t in range(self.n_estimators):
                sigma_t = self.sigma_max * ratio**t
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    W, history = immigrate_loop(
                        rows,
                        np.eye(n_features) / np.sqrt(n_features),
                        D,
                        sigma_t,
                        self.max_iter,
                        0.0,
                        None,
                    )
                learner = fitted_immigrate(
                    W,
                    history,
                    sigma=sigma_t,
                    max_iter=self.max_iter,
                    scale=self.scale,
                    data=data,
                    rows=rows,
                    like=self,
                )
                # eps_t from leave-one-out predictions (Algorithm 3)
                wrong = loo_codes(rows, *immigrate_kernel(W, sigma_t, K)) != codes
                eps = float(D[wrong].sum())
                errors.append(eps)
                logger.debug("BIM round %d: sigma %.3g, error %.4f", t + 1, sigma_t, eps)
                if fallback is None or eps < fallback[1]:
                    fallback = (learner, eps)
                steps.step()
                if eps >= 0.5 or eps == 0.0:
                    continue  # Algorithm 3: discard h_t and go on
                alpha = 0.5 * np.log((1.0 - eps) / eps)
                D = D * np.exp(alpha * wrong)
                D /= D.sum()
                kept.append(learner)
                alphas.append(alpha)
        if not kept:
            warn(
                "Every boosting round was discarded (training error 0 or >= 1/2); "
                "keeping the learner with the smallest error.",
                RuntimeWarning,
            )
            kept, alphas = [fallback[0]], [1.0]
        alphas = np.asarray(alphas)
        self.classes_ = data.classes
        self.estimators_ = kept
        self.estimator_weights_ = alphas
        self.estimator_errors_ = np.asarray(errors)
        self.n_iter_ = self.n_estimators
        self.weight_matrix_ = sum(a * e.weight_matrix_ for a, e in zip(alphas, kept)) / alphas.sum()
        self.feature_importances_ = np.diag(self.weight_matrix_).copy()
        self._rows, self._scaling = rows, data.scaling  # shared by the learners
        return self

    def decision_function(self, X):
        """Share of the ``alpha`` vote each class receives.

        For two classes, the second class's share minus the first's.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        votes : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        votes = self._votes(X)
        return votes[:, 1] - votes[:, 0] if votes.shape[1] == 2 else votes

    def _votes(self, X):
        check_is_fitted(self, "estimators_")
        on_dask = is_dask_collection(X)
        if not on_dask:
            X = scaled_rows(self, X, self._scaling)
            new = -1 - np.arange(X.shape[0])
        votes = None
        for alpha, est in zip(self.estimator_weights_, self.estimators_):
            kernel, params = immigrate_kernel(est.weight_matrix_, est.sigma, len(self.classes_))
            if on_dask:  # each learner scores the blocks where they are
                S = softmin_on_blocks(self, self._rows, self._scaling, kernel, params, X)
            else:
                S = softmin_distances(self._rows, kernel, params, X, new)
            codes = np.argmin(S, axis=1)
            if votes is None:
                votes = np.zeros((codes.shape[0], len(self.classes_)))
            votes[np.arange(codes.shape[0]), codes] += alpha
        return votes / self.estimator_weights_.sum()

    def predict(self, X):
        """The class with the largest ``alpha``-weighted vote (ties: first class).

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        codes = np.argmax(self._votes(X), axis=1)
        return self.classes_[codes]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        return tags

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: ``None``, its rounds' IMMIGRATE fits on reweighted
        rows are not modelled."""
        return None
