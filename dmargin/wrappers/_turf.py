"""TuRF: Relief scores recomputed as the lowest-scored features are set aside.

Moore & White, "Tuning ReliefF for genome-wide genetic analysis", EvoBIO 2007,
with skrebate 0.8's ``TURF`` semantics (the peer its users know): each round
fits the wrapped estimator on the surviving features and keeps the top
``ceil(n_left (1 - pct))``; the rounds stop once at most ``keep`` features
remain, or after ``1 / pct`` rounds; a last fit scores the survivors, and each
tier of removed features gets a score below them (the later it was removed,
the higher).  The rounds are the one backward-elimination loop of
:mod:`dmargin._elimination`.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from sklearn.base import clone

from .._base import N_FEATURES_TO_SELECT, WeightSelector
from .._capabilities import Capabilities
from .._cost import repeated_cost
from .._dask import is_dask_collection, is_dask_frame
from .._elimination import eliminate
from .._start import start_fit
from .._validation import Interval, Kind
from ..progress import fit_steps


def _scores_features(v):
    """A dmargin selector, or an estimator whose class has ``feature_importances_``
    (scikit-learn's trees and forests); a linear model's ``coef_`` is not one."""
    return (
        isinstance(v, WeightSelector)
        or hasattr(type(v), "feature_importances_")
        or hasattr(v, "feature_importances_")
    )


#: An estimator with ``feature_importances_`` after fit, checked before any fit.
ESTIMATOR = Kind(
    "an estimator that sets feature_importances_ (a dmargin selector such as "
    "ReliefF(), or a tree ensemble)",
    lambda v: hasattr(v, "fit") and hasattr(v, "get_params") and _scores_features(v),
)


def columns(X, features):
    """``X`` restricted to ``features`` (numpy, pandas, dask array or DataFrame; any
    other array-like, a list of rows included, as numpy)."""
    if hasattr(X, "iloc") or is_dask_frame(X):
        return X[list(X.columns[features])]
    if not (isinstance(X, np.ndarray) or is_dask_collection(X)):
        X = np.asarray(X)
    return X[:, features]


def _turf_count(n_features, pct, keep):
    """How many features skrebate's TURF rounds leave (at least one round runs)."""
    left, rounds = n_features, int(1 / pct)
    for _ in range(max(rounds, 1)):
        left = math.ceil(left * (1 - pct))
        if left <= keep:
            break
    return left


def _turf_widths(n_features, pct, keep):
    """The features each fit of a TuRF run sees: a round's survivors, then the last
    fit's (the rounds of :func:`_turf_count`)."""
    target, left, widths = _turf_count(n_features, pct, keep), n_features, []
    while left > target:
        widths.append(left)
        left = max(target, min(left - 1, math.ceil(left * (1 - pct))))
    return widths + [left]


class TuRF(WeightSelector):
    """TuRF around any dmargin weight estimator (ReliefF, IRelief, ...).

    Parameters
    ----------
    estimator : estimator
        Refitted on the surviving features every round (cloned).
    pct : float in (0, 1), default=0.5
        Fraction of the surviving features removed per round.
    keep : int, default=100
        Stop once at most this many features remain (skrebate's
        ``num_scores_to_return``).  At least one round always runs.
    n_features_to_select : int, float or None, default=None
        For ``transform``, as the wrapped estimators.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        The last fit's scores for the survivors; below them, one score per
        tier of removed features (``min - 0.01 (k + 1) range``, ``k = 0``
        for the last tier removed), as skrebate's ``TURF``.
    ranking_ : ndarray of shape (n_features,)
        1 for the survivors; larger for features removed earlier (as RFE).
    estimator_ : estimator
        The last fit, on the survivors.
    n_iter_ : int
        Elimination rounds.

    Examples
    --------
    >>> from dmargin import ReliefF, TuRF
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("wdbc")
    >>> turf = TuRF(ReliefF(), pct=0.5, keep=10).fit(X, y)
    >>> int((turf.ranking_ == 1).sum())
    8
    """

    _capabilities = Capabilities(engine_rows=False)  # checks the data; the inner estimator fits it
    _parameter_constraints = {
        "estimator": [ESTIMATOR],
        "pct": [Interval(numbers.Real, 0, 1, closed="neither")],
        "keep": [Interval(numbers.Integral, 1, None)],
        "n_features_to_select": N_FEATURES_TO_SELECT,
    }

    def __init__(self, estimator, *, pct=0.5, keep=100, n_features_to_select=None):
        self.estimator = estimator
        self.pct = pct
        self.keep = keep
        self.n_features_to_select = n_features_to_select

    def fit(self, X, y):
        """Eliminate and rescore.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : TuRF
        """
        start_fit(self, X, y)
        n = self.n_features_in_
        pct = float(self.pct)
        widths = _turf_widths(n, pct, self.keep)

        def score(features):
            found = np.asarray(
                clone(self.estimator).fit(columns(X, features), y).feature_importances_,
                dtype=np.float64,
            )
            steps.step()
            return found

        with fit_steps(self, "fit", len(widths)) as steps:  # the rounds' fits and the last
            found = eliminate(
                self,
                score,
                n,
                n_features_to_select=_turf_count(n, pct, self.keep),
                step=lambda left: left - math.ceil(left * (1 - pct)),
            )
            survivors = np.flatnonzero(found.support)
            self.estimator_ = clone(self.estimator).fit(columns(X, survivors), y)
            steps.step()
        final = np.asarray(self.estimator_.feature_importances_, dtype=np.float64)
        scores = np.zeros(n)
        scores[survivors] = final
        low, high = final.min(), final.max()
        penalty = 0.01 * (high - low if high != low else 1.0)
        for tier in range(2, int(found.ranking.max()) + 1):
            scores[found.ranking == tier] = low - penalty * (tier - 1)
        self.feature_importances_ = scores
        self.ranking_ = found.ranking
        self.n_iter_ = found.n_iter
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: a fit of the wrapped estimator on the survivors of
        each round, and the last fit; ``None`` when it states no cost."""
        widths = _turf_widths(n_features, float(self.pct), self.keep)
        return repeated_cost(
            self.estimator,
            n_samples,
            widths,
            f"{len(widths)} fits on {widths[0]} down to {widths[-1]} features",
        )
