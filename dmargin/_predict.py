"""Predictions on new rows: their checks, and a per-block rule over dask rows.

Every classifier of dmargin predicts on in-memory rows (numpy, pandas) at
once and on dask rows block by block, where they live.  The checks of the
new rows against the fit are the same for all of them, and so is the map of
a per-block function over a dask array or DataFrame; they are written here
once.  The per-block functions themselves (a committee's votes, a machine's
decision values) stay with their estimators.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ._dask import as_dask_array, gather, is_dask_collection
from .engine import map_row_blocks, new_row_blocks


def check_new_rows(estimator, X, *, fitted="classes_", scaling=None):
    """In-memory rows to predict, checked against ``estimator``'s fit.

    Parameters
    ----------
    estimator : estimator
        Fitted; ``fitted`` names an attribute its ``fit`` sets.
    X : array-like or pandas DataFrame of shape (n_samples, n_features)
    fitted : str, default="classes_"
    scaling : object with ``apply(X)`` or None, default=None
        The training rows' scaling, applied to the checked rows.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    """
    check_is_fitted(estimator, fitted)
    X = validate_data(estimator, X, reset=False, dtype=np.float64)
    return X if scaling is None else scaling.apply(X)


def new_dask_rows(estimator, X, *, fitted="classes_"):
    """Dask rows to predict, checked against ``estimator``'s fit: a lazy dask array.

    Only metadata is read (the width, and a DataFrame's columns against
    ``feature_names_in_``); each block is checked for non-finite values when
    it is computed (:func:`dmargin.engine.new_row_blocks`).
    """
    check_is_fitted(estimator, fitted)
    return new_row_blocks(
        X,
        estimator.n_features_in_,
        getattr(estimator, "feature_names_in_", None),
        type(estimator).__name__,
    )


def predict_blocks(
    estimator,
    fn,
    X,
    *args,
    y=None,
    n_cols=None,
    dtype=np.float64,
    fitted="classes_",
    gather_as=None,
):
    """``fn(X_block[, y_block], *args)`` over the row blocks of the new rows ``X``.

    Parameters
    ----------
    estimator : estimator
        Fitted; the rows are checked against it (:func:`new_dask_rows`).
    fn : callable
        The rule on one block: small arguments only (``args`` travel with
        every task).
    X : dask array or dask DataFrame of shape (n_samples, n_features)
        In-memory rows are accepted beside dask labels ``y``: they are
        checked (:func:`check_new_rows`) and put on dask to pair with ``y``'s
        blocks.
    *args
        Passed to ``fn`` after the block(s).
    y : array-like, dask array or dask Series of shape (n_samples,), default=None
        Labels read block by block beside ``X``.
    n_cols : int or None, default=None
        Columns of ``fn``'s result; ``None``: one value per row.
    dtype : dtype, default=float64
        Of ``fn``'s result.
    fitted : str, default="classes_"
        An attribute the estimator's ``fit`` sets.
    gather_as : str or None, default=None
        ``None`` returns the lazy dask array (as dask-ml's ``ParallelPostFit``);
        a description (``"the boosting margins"``) computes it where the rows
        are and returns the numpy result, naming it in the messages of a
        stalled or failed computation.

    Returns
    -------
    out : dask array or ndarray of shape (n_samples,) or (n_samples, n_cols)
    """
    if not is_dask_collection(X):  # in-memory rows beside dask labels
        X = as_dask_array(check_new_rows(estimator, X, fitted=fitted))
    X = new_dask_rows(estimator, X, fitted=fitted)
    if y is not None and not is_dask_collection(y):
        y = as_dask_array(np.asarray(y))
    out = map_row_blocks(fn, X, *args, y=y, n_cols=n_cols, dtype=dtype)
    return out if gather_as is None else np.asarray(gather(out, what=gather_as))
