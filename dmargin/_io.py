"""Data in: labels to class codes, and feature scaling in one pass.

Works on numpy or dask arrays.  For dask input, the scaling statistics, the
finite-value check and the class counts are one ``dask.compute`` -- no extra
eager pass over the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import check_classes
from .engine.execution import is_dask_collection


@dataclass
class TrainingData:
    """Scaled rows, integer class codes and what was learned on the way."""

    X: object  # float64, numpy or dask
    codes: object  # int64 in 0..K-1, numpy or dask
    classes: np.ndarray
    counts: np.ndarray
    offset: np.ndarray | None
    span: np.ndarray | None


def _not_finite_error():
    return ValueError(
        "X contains NaN or infinite values. Impute them (e.g. "
        "sklearn.impute.SimpleImputer) or drop those rows before fitting."
    )


def _scale_params(scale, stats):
    """``(offset, span)`` so that scaled = (X - offset) / span; constants -> 0."""
    if scale is None:
        return None, None
    if scale == "minmax":
        lo, hi = stats["min"], stats["max"]
        offset, span = lo, hi - lo
    else:  # "standard"
        offset, span = stats["mean"], np.sqrt(stats["var"])
    span = np.where(span > 0, span, 1.0)  # a constant feature maps to 0
    return offset, span


def numpy_scale_params(X, scale):
    """``(offset, span)`` of an in-memory ``X`` (``(None, None)`` for no scaling)."""
    stats = {}
    if scale == "minmax":
        stats = {"min": X.min(axis=0), "max": X.max(axis=0)}
    elif scale == "standard":
        stats = {"mean": X.mean(axis=0), "var": X.var(axis=0)}
    return _scale_params(scale, stats)


def _encode(y, classes):
    return np.searchsorted(classes, y).astype(np.int64)


def prepare_training_data(X, y, scale) -> TrainingData:
    """Encode labels, check values, scale features (``None``, "minmax", "standard")."""
    if is_dask_collection(X) or is_dask_collection(y):
        return _prepare_dask(X, y, scale)
    X = np.asarray(X, dtype=np.float64)
    classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    check_classes(classes, counts)
    offset, span = numpy_scale_params(X, scale)
    if offset is not None:
        X = (X - offset) / span
    return TrainingData(X, codes.astype(np.int64), classes, counts, offset, span)


def _prepare_dask(X, y, scale) -> TrainingData:
    import dask
    import dask.array as da

    X = da.asarray(X).astype(np.float64)
    y = da.asarray(y)
    if X.chunks[0] != y.chunks[0]:
        y = y.rechunk((X.chunks[0],))
    todo = {"finite": da.isfinite(X).all(), "unique": da.unique(y, return_counts=True)}
    if scale == "minmax":
        todo.update(min=X.min(axis=0), max=X.max(axis=0))
    elif scale == "standard":
        todo.update(mean=X.mean(axis=0), var=X.var(axis=0))
    (stats,) = dask.compute(todo)
    if not stats["finite"]:
        raise _not_finite_error()
    classes, counts = stats["unique"]
    if classes.dtype.kind == "f" and np.isnan(classes).any():
        raise ValueError("y contains NaN labels. Drop those rows or give them a label.")
    check_classes(classes, counts)
    offset, span = _scale_params(scale, stats)
    if offset is not None:
        X = (X - offset) / span
    codes = y.map_blocks(_encode, classes=classes, dtype=np.int64)
    return TrainingData(X, codes, classes, counts, offset, span)
