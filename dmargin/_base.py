"""What every dmargin selector shares: support mask, tags, random numbers."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted

from ._compat import compute, is_dask_collection
from ._io import prepare_training_data
from ._validation import NONE, Interval, check_binary, check_params, check_X_y
from ._cost import anchor_count
from ._utils import make_rng, user_stacklevel
from .engine import prepare_rows, sample_anchors

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
    count at or above the number of rows is every row (the exact fit).
    """
    m = anchor_count(estimator.n_anchors, rows.n_samples)
    if m is None:
        return None
    return sample_anchors(rows, m, make_rng(estimator.random_state))


def start_fit(estimator, X, y, *, rows=True, distances=True, binary=None, in_memory=False,
              reset=True, classes=None, scaling=None, one_pass=False, allow_nan=False,
              keep_float32=False):
    """The door of every ``fit`` and ``partial_fit``: parameters, data, labels,
    scaling, and the engine's persisted rows.

    Every fit path goes through here, so bad input gets the same message
    whichever estimator or method it is given to.

    Parameters
    ----------
    estimator : dmargin estimator
        Checked against its ``_parameter_constraints``; its ``scale``
        parameter, if it has one, picks the scaling.
    X, y : the data as given to the fit
    rows : bool, default=True
        Also lay the rows out for the engine (persisted once for dask input).
    distances : bool, default=True
        Whether the estimator computes distances between rows: without
        scaling, values whose squares overflow are refused.
    binary : str or None, default=None
        Why the estimator needs exactly two classes; ``y`` with another
        number of classes is refused with that reason.
    in_memory : bool, default=False
        Compute dask input at the door and check it as numpy: for a chunk
        of a stream, which the driver processes whole.
    reset : bool, default=True
        A new fit (records ``n_features_in_`` and ``feature_names_in_``, warns
        about ``n_features_to_select``); ``False`` continues one (a later
        ``partial_fit`` chunk): ``X`` must have the fitted features, and may
        be a single row.
    classes : array-like or None, default=None
        The classes the labels must be among (the codes index them); at
        least two.  ``None``: the labels of ``y``.
    scaling : Scaling or None, default=None
        A fixed scaling to apply (a stream's frozen ranges) instead of one
        learned from ``X``.
    one_pass : bool, default=False
        The fit scores its anchors against the rows once: when those anchors
        are a sample (``n_anchors``), dask rows are not persisted but stream
        from their source through the tiles (memory then does not grow with
        N).  Every row as an anchor reads each block once per anchor block,
        so the rows stay persisted.
    allow_nan : bool, default=False
        The estimator takes NaN as missing values (``data.missing`` counts
        them per feature); infinite values are still refused.
    keep_float32 : bool, default=False
        ``float32`` ``X`` gives ``float32`` rows (scaled in float64, rounded
        once): the estimator's kernels read them and compute in float64.

    Returns
    -------
    data : TrainingData
    rows : Rows or None
        ``None`` unless ``rows``.
    """
    check_params(estimator)
    if in_memory:
        X, y = compute(X, y, what=f"the rows given to {type(estimator).__name__}")
    X, y = check_X_y(estimator, X, y, reset=reset, min_samples=2 if reset else 1,
                     allow_nan=allow_nan, keep_float32=keep_float32)
    if reset:
        _warn_n_features_to_select(estimator, X.shape[1])
    data = prepare_training_data(X, y, getattr(estimator, "scale", None), distances=distances,
                                 names=getattr(estimator, "feature_names_in_", None),
                                 classes=classes, scaling=scaling, allow_nan=allow_nan,
                                 keep_float32=keep_float32)
    if binary is not None:
        check_binary(estimator, data.classes, binary)
    if not rows:
        return data, None
    stream = one_pass and anchor_count(getattr(estimator, "n_anchors", None),
                                       data.X.shape[0]) is not None
    return data, prepare_rows(data.X, data.codes, len(data.classes), persist=not stream,
                              block_counts=data.block_counts,
                              dtype=np.float32 if data.X.dtype == np.float32 else np.float64)


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
                    f"fit {list(names)}; select and order them as in fit.")
            if len(columns) != mask.size:
                raise ValueError(f"X has {len(columns)} features, but {type(self).__name__} "
                                 f"is expecting {mask.size} features as input.")
            return X[[c for c, keep in zip(columns, mask) if keep]]
        if X.ndim != 2 or X.shape[1] != mask.size:
            raise ValueError(f"X has shape {X.shape}, but {type(self).__name__} is expecting "
                             f"{mask.size} features as input (a 2-D array).")
        return X[:, np.flatnonzero(mask)]


def _warn_n_features_to_select(estimator, n_features):
    """At fit time, once: a ``UserWarning`` when an integer ``n_features_to_select``
    exceeds the number of features (selection then keeps all of them).

    Called by the fit's door (:func:`start_fit`) rather than by
    ``_get_support_mask``, which runs on every ``transform`` and would repeat
    it.
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

    #: Whether ``fit`` takes NaN as missing values (the Relief family's distance).
    _allow_nan = False

    def _get_support_mask(self):
        check_is_fitted(self, "feature_importances_")
        scores = np.asarray(self.feature_importances_)
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
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.allow_nan = self._allow_nan
        return tags
