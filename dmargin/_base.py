"""What every dmargin selector shares: support mask, tags, random numbers."""

from __future__ import annotations

import logging
import numbers
import os
import sys
import time
import warnings
from contextlib import contextmanager

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted

from ._io import prepare_training_data
from ._validation import NONE, Interval, check_params, check_X_y
from ._compat import is_dask_collection
from .engine import prepare_rows

logger = logging.getLogger("dmargin")

N_FEATURES_TO_SELECT = [
    NONE,
    Interval(numbers.Integral, 1, None),
    Interval(numbers.Real, 0, 1, closed="right"),
]


def start_fit(estimator, X, y, *, rows=True):
    """The door of every ``fit``: parameters, data, labels, scaling, and the
    engine's persisted rows.  Returns ``(data, rows)`` (``rows`` is ``None``
    when not asked for)."""
    check_params(estimator)
    X, y = check_X_y(estimator, X, y)
    warn_n_features_to_select(estimator, X.shape[1])
    data = prepare_training_data(X, y, estimator.scale,
                                 names=getattr(estimator, "feature_names_in_", None))
    if not rows:
        return data, None
    return data, prepare_rows(data.X, data.codes, len(data.classes))


@contextmanager
def timer(message, *args):
    """Log how long the block took, at DEBUG level (like dask-ml's ``_timer``)."""
    start = time.perf_counter()
    yield
    logger.debug(message + " took %.3f s", *args, time.perf_counter() - start)


def make_rng(random_state) -> np.random.Generator:
    """A numpy Generator from None, an int, a Generator or a RandomState."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**32 - 1))
    return np.random.default_rng(random_state)


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


class DaskSelectorMixin(SelectorMixin):
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
        X : array-like, pandas DataFrame, dask array or dask DataFrame of shape (n_samples, n_features)

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
                    f"fit {list(names)}; select and order them as in fit.")
            if len(columns) != mask.size:
                raise ValueError(f"X has {len(columns)} features, but "
                                 f"{type(self).__name__} is expecting {mask.size} features as input.")
            return X[[c for c, keep in zip(columns, mask) if keep]]
        if X.ndim != 2 or X.shape[1] != mask.size:
            raise ValueError(f"X has shape {X.shape}, but {type(self).__name__} is expecting "
                             f"{mask.size} features as input (a 2-D array).")
        return X[:, np.flatnonzero(mask)]


def user_stacklevel():
    """``stacklevel`` for a ``warnings.warn`` in the caller that points at the
    first frame outside dmargin: the user's call, however deep the fit path."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def warn_n_features_to_select(estimator, n_features):
    """At fit time, once: a ``UserWarning`` when an integer ``n_features_to_select``
    exceeds the number of features (selection then keeps all of them).

    Called by every fit's door (:func:`start_fit`, and the boosting selectors'
    own) rather than by ``_get_support_mask``, which runs on every
    ``transform`` and would repeat it.
    """
    k = getattr(estimator, "n_features_to_select", None)
    if isinstance(k, numbers.Integral) and isinstance(n_features, numbers.Integral) \
            and k > n_features:
        warnings.warn(f"n_features_to_select={k} exceeds the {n_features} features; all "
                      f"{n_features} are kept.", UserWarning, stacklevel=user_stacklevel())


class WeightSelector(DaskSelectorMixin, BaseEstimator):
    """Selector over a learned ``feature_importances_`` vector.

    ``n_features_to_select``: ``None`` keeps the features with positive
    weight, an int keeps that many of the highest (all of them when it
    exceeds the number of features, with a ``UserWarning`` at fit), a float
    in (0, 1] keeps that fraction (at least one).  Ties go to the lower
    feature index.
    """

    def _get_support_mask(self):
        check_is_fitted(self, "feature_importances_")
        scores = np.asarray(self.feature_importances_)
        k = self.n_features_to_select
        if k is None:
            return scores > 0
        if isinstance(k, numbers.Integral):
            k = min(int(k), scores.size)  # more than A: fit warned (warn_n_features_to_select)
        else:
            k = max(1, int(k * scores.size))
        mask = np.zeros(scores.size, dtype=bool)
        mask[np.argsort(-scores, kind="stable")[:k]] = True
        return mask

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.allow_nan = False
        return tags
