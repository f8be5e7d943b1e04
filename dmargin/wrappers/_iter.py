"""Iter: a Relief estimator refitted with its own scores as feature weights in the distance.

skrebate 0.8.4's ``Iter`` (``iter.py``): the scores of one fit, rescaled to
[0, 1], weigh the features' differences in the next fit's distance, with a
Widrow-Hoff step between successive weights, until the scores stop moving.
A loop of weighted fits on the driver, as I-RELIEF's iterations; each fit is
the wrapped estimator's, in-process or on dask as its input is.
"""

from __future__ import annotations

import inspect
import numbers

import numpy as np
from sklearn.base import clone

from .._base import N_FEATURES_TO_SELECT, WeightSelector
from .._capabilities import Capabilities
from .._cost import repeated_cost
from .._start import start_fit
from .._validation import BOOLEAN, Interval, Kind
from ..progress import fit_steps
from ._turf import ESTIMATOR


def relief_weights(scores, rank_absolute=False):
    """skrebate's ``transform_weights``: negative scores to 0 and the rest divided by
    the largest (all 0 when it is not positive); ``rank_absolute``: ``|s| / max |s|``."""
    scores = np.asarray(scores, dtype=np.float64)
    if rank_absolute:
        top = np.abs(scores).max()
        return np.abs(scores) / top if top > 0 else np.zeros_like(scores)
    top = scores.max()
    if top <= 0:
        return np.zeros_like(scores)
    return np.where(scores < 0, 0.0, scores / top)


#: A selector whose ``fit`` takes the feature weights that Iter hands it.
WEIGHTED_ESTIMATOR = Kind(
    "an estimator whose fit takes feature_weights and sets feature_importances_ (ReliefF, "
    "the SURF and SWRF families, MuRelief or VLS; not Relief, IRelief or Immigrate)",
    lambda v: ESTIMATOR.accepts(v) and "feature_weights" in inspect.signature(v.fit).parameters,
)


class Iter(WeightSelector):
    """Iter around a dmargin Relief estimator: its scores become distance weights, refitted.

    The first fit is unweighted; its scores ``s_0`` give the weights
    ``w_1 = T(s_0)`` of the second fit, ``T`` setting negative scores to 0
    and dividing the rest by the largest.  From then on the weights move a
    Widrow-Hoff step towards the last scores, ``w_t = w_{t-1} + beta (T(s_{t-1})
    - w_{t-1})``, and the next fit takes them (``fit(X, y,
    feature_weights=w_t)``).  The loop stops after ``max_iter`` fits, or
    after a fit whose every score lies within ``convergence_threshold`` of
    ``T`` of the previous scores (skrebate 0.8.4's ``Iter``, whose test
    compares with the rescaled scores; with ``rank_absolute``, with the
    scores themselves).

    Parameters
    ----------
    estimator : estimator
        A dmargin estimator whose ``fit`` takes ``feature_weights``
        (``ReliefF``, the SURF and SWRF families); cloned for each fit.
    max_iter : int, default=10
        Most fits (skrebate's), the unweighted first one included.
    convergence_threshold : float, default=1e-4
        Stop once every score moves less than this.
    beta : float, default=0.1
        The Widrow-Hoff learning rate of the weights.
    rank_absolute : bool, default=False
        ``T(s) = |s| / max |s|``, and the convergence test on the scores
        themselves (skrebate's estimators' ``rank_absolute``).
    n_features_to_select : int, float or None, default=None
        For ``transform``, as the wrapped estimators.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        The last fit's scores.
    feature_weights_ : ndarray of shape (n_features,) or None
        The distance weights of the last fit (``None`` when it was the
        unweighted first one).
    estimator_ : estimator
        The last fit.
    n_iter_ : int
        Fits made.
    converged_ : bool
        Whether the scores stopped moving before ``max_iter``.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` had string column names.

    Notes
    -----
    When every score of a fit is zero or negative, ``T`` gives no weight to
    any feature (skrebate would fit once more with every distance 0): the
    loop stops there and keeps that fit's scores.  Each fit costs the
    wrapped estimator's (:func:`~dmargin.fit_cost`), at most ``max_iter``
    times.

    Examples
    --------
    >>> from dmargin import Iter, MultiSURF
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("wdbc")
    >>> it = Iter(MultiSURF(), max_iter=4).fit(X, y)
    >>> it.n_iter_ <= 4
    True
    """

    #: It checks the data; the inner estimator fits it.
    _capabilities = Capabilities(
        allow_nan=True, targets=("classes", "continuous"), engine_rows=False
    )
    _parameter_constraints = {
        "estimator": [WEIGHTED_ESTIMATOR],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "convergence_threshold": [Interval(numbers.Real, 0, None)],
        "beta": [Interval(numbers.Real, 0, 1)],
        "rank_absolute": [BOOLEAN],
        "n_features_to_select": N_FEATURES_TO_SELECT,
    }

    def __init__(
        self,
        estimator,
        *,
        max_iter=10,
        convergence_threshold=1e-4,
        beta=0.1,
        rank_absolute=False,
        n_features_to_select=None,
    ):
        self.estimator = estimator
        self.max_iter = max_iter
        self.convergence_threshold = convergence_threshold
        self.beta = beta
        self.rank_absolute = rank_absolute
        self.n_features_to_select = n_features_to_select

    def fit(self, X, y):
        """Fit, reweigh and refit until the scores settle.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : Iter
        """
        start_fit(self, X, y)

        def scores(weights):
            est = clone(self.estimator).fit(X, y, feature_weights=weights)
            steps.step()
            return est, np.asarray(est.feature_importances_, dtype=np.float64)

        with fit_steps(self, "fit", self.max_iter) as steps:  # the fits report as one
            est, last = scores(None)
            weights, converged, n_iter = None, False, 1
            while n_iter < self.max_iter:
                target = relief_weights(last, self.rank_absolute)
                if not target.any():  # no feature weighs anything: nothing to refit with
                    break
                weights = target if weights is None else weights + self.beta * (target - weights)
                est, new = scores(weights)
                n_iter += 1
                compared = last if self.rank_absolute else target
                # (skrebate's test: a NaN difference does not count as a move)
                moved = np.abs(compared - new) >= self.convergence_threshold
                last = new
                if not moved.any():
                    converged = True
                    break
        self.estimator_ = est
        self.feature_importances_ = last
        self.feature_weights_ = None if n_iter == 1 else weights
        self.n_iter_ = n_iter
        self.converged_ = converged
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: ``max_iter`` fits of the wrapped estimator (at
        most: the scores may settle earlier); ``None`` when it states no cost."""
        return repeated_cost(
            self.estimator, n_samples, [n_features] * self.max_iter, f"at most {self.max_iter} fits"
        )
