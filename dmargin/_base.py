"""What every dmargin selector shares: support mask, tags, random numbers."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted

from ._capabilities import sklearn_tags
from ._cost import anchor_count
from ._dask import is_dask_collection
from ._interrupt import UnfittedOnInterrupt
from ._utils import make_rng
from ._validation import NONE, Interval
from .engine import sample_anchors

N_FEATURES_TO_SELECT = [
    NONE,
    Interval(numbers.Integral, 1, None),
    Interval(numbers.Real, 0, 1, closed="right"),
]
#: ``n_anchors``: every row (None), a number of rows, or a fraction of them.
N_ANCHORS = N_FEATURES_TO_SELECT


def anchors_for(estimator, rows):
    """The sample of anchors ``estimator.n_anchors`` asks for, or ``None`` (every row).

    Drawn once per fit, stratified by class, seeded by ``random_state``; a
    count at or above the number of rows is every row (the exact fit).  Rows
    whose door drew them already (``rows.draw``, a streamed fit) give that draw.
    """
    m = anchor_count(estimator.n_anchors, rows.n_samples)
    if m is None:
        return None
    draw = rows.draw
    if draw is not None and draw.m == m:
        return draw.anchors if draw.anchors is not None else sample_anchors(rows, m, seed=draw.seed)
    return sample_anchors(rows, m, make_rng(estimator.random_state))


def miss_priors(counts) -> np.ndarray:
    """``P(c) / (1 - P(y))`` for anchor class ``y`` (row) and miss class ``c``.

    Zero on the diagonal; each row sums to one (ReliefF's and I-RELIEF-1's
    class weighting).  When the counts hold a single class (the first chunk
    of a stream whose ``classes=`` lists more), that class's misses are
    weighted uniformly over the other classes instead of 0/0.
    """
    p = np.asarray(counts, dtype=np.float64) / np.sum(counts)
    k = p.size
    rest = 1.0 - p[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        prior = np.where(rest > 0, p[None, :] / rest, 1.0 / max(k - 1, 1))
    np.fill_diagonal(prior, 0.0)
    return prior


class DaskSelectorMixin(UnfittedOnInterrupt, SelectorMixin):
    """scikit-learn's ``SelectorMixin``, with ``transform`` lazy on dask input.

    scikit-learn's ``transform`` converts its input to numpy, which for a dask
    array or DataFrame would gather every row to the client; here a dask
    collection comes back as the same lazy collection with the selected
    columns (numpy and pandas input go through scikit-learn unchanged).
    """

    def transform(self, X):
        """Keep the selected features.

        Parameters
        ----------
        X : array-like, pandas DataFrame, dask array or dask DataFrame
            Of shape (n_samples, n_features).

        Returns
        -------
        X_r : same type as X, of shape (n_samples, n_selected_features)
            Lazy for dask input.
        """
        if not is_dask_collection(X):
            return super().transform(X)
        mask = self.get_support()
        columns = getattr(X, "columns", None)
        if columns is not None:
            names = getattr(self, "feature_names_in_", None)
            if names is not None and list(columns) != list(names):
                raise ValueError(
                    f"The dask DataFrame's columns {list(columns)} are not the columns seen in "
                    f"fit {list(names)}; select and order them as in fit."
                )
            if len(columns) != mask.size:
                raise ValueError(
                    f"X has {len(columns)} features, but {type(self).__name__} "
                    f"is expecting {mask.size} features as input."
                )
            return X[[c for c, keep in zip(columns, mask) if keep]]
        if X.ndim != 2 or X.shape[1] != mask.size:
            raise ValueError(
                f"X has shape {X.shape}, but {type(self).__name__} is expecting "
                f"{mask.size} features as input (a 2-D array)."
            )
        return X[:, np.flatnonzero(mask)]


class WeightSelector(DaskSelectorMixin, BaseEstimator):
    """Selector over a learned ``feature_importances_`` vector.

    ``n_features_to_select``: ``None`` keeps the features with positive
    weight, an int keeps that many of the highest (all of them when it
    exceeds the number of features, with a ``UserWarning`` at fit), a float
    in (0, 1] keeps that fraction (at least one).  Ties go to the lower
    feature index.  An estimator with ``rank_absolute=True`` ranks by the
    weights' absolute values (``None``: the nonzero ones).
    """

    def _declared_discrete(self, n_features):
        """A boolean mask of the features declared discrete, or ``None``: the Relief
        family counts their distinct values (``discrete_threshold``).
        :mod:`dmargin.skrebate` declares them (skrebate's ``categorical_features``)."""
        return None

    def _get_support_mask(self):
        check_is_fitted(self, "feature_importances_")
        scores = np.asarray(self.feature_importances_)
        if getattr(self, "rank_absolute", False):
            scores = np.abs(scores)
        k = self.n_features_to_select
        if k is None:
            return scores > 0
        if isinstance(k, numbers.Integral):
            k = min(int(k), scores.size)  # more than A: start_fit warned
        else:
            k = max(1, int(k * scores.size))
        mask = np.zeros(scores.size, dtype=bool)
        mask[np.argsort(-scores, kind="stable")[:k]] = True
        return mask

    def __sklearn_tags__(self):
        return sklearn_tags(self, super().__sklearn_tags__())
