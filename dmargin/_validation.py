"""Input checks at the door of ``fit`` / ``partial_fit`` / ``predict``.

Parameters are checked against each estimator's ``_parameter_constraints``;
data are checked lazily for dask input (metadata only, like dask-ml's
``check_array``) and through scikit-learn's ``validate_data`` for numpy and
pandas input.  Every error names the bad value and the fix.  Below this line
no code re-checks inputs.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import validate_data

from ._dask import (
    is_dask_array,
    is_dask_collection,
    is_dask_frame,
    is_dask_series,
    persist_with_known_rows,
)
from ._utils import warn

# ---------------------------------------------------------------------------
# Parameter constraints
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A number in ``[low, high]`` (``closed`` says which ends belong)."""

    kind: type
    low: float | None
    high: float | None
    closed: str = "both"

    def accepts(self, value):
        if isinstance(value, bool) or not isinstance(value, self.kind):
            return False
        if self.kind is numbers.Real and not np.isfinite(value):
            return False
        lo_ok = self.low is None or (
            value >= self.low if self.closed in ("both", "left") else value > self.low
        )
        hi_ok = self.high is None or (
            value <= self.high if self.closed in ("both", "right") else value < self.high
        )
        return lo_ok and hi_ok

    def __str__(self):
        name = "an int" if self.kind is numbers.Integral else "a float"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        lo = "-inf" if self.low is None else self.low
        hi = "inf" if self.high is None else self.high
        return f"{name} in {left}{lo}, {hi}{right}"


@dataclass(frozen=True)
class Options:
    values: tuple

    def accepts(self, value):
        return isinstance(value, str) and value in self.values

    def __str__(self):
        return "one of " + ", ".join(repr(v) for v in self.values)


class _Kind:
    def __init__(self, name, test):
        self.name, self.test = name, test

    def accepts(self, value):
        return self.test(value)

    def __str__(self):
        return self.name


NONE = _Kind("None", lambda v: v is None)
BOOLEAN = _Kind("a bool", lambda v: isinstance(v, (bool, np.bool_)))
ARRAY = _Kind("an array", lambda v: hasattr(v, "__array__") or isinstance(v, (list, tuple)))
RANDOM_STATE = _Kind(
    "None, a non-negative int or a numpy Generator/RandomState",
    lambda v: (
        v is None
        or (isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 0)
        or isinstance(v, (np.random.Generator, np.random.RandomState))
    ),
)


def check_params(estimator):
    """Check ``estimator.get_params()`` against ``_parameter_constraints``."""
    params = estimator.get_params(deep=False)
    for name, allowed in type(estimator)._parameter_constraints.items():
        value = params[name]
        if not any(c.accepts(value) for c in allowed):
            wanted = " or ".join(str(c) for c in allowed)
            raise ValueError(
                f"{type(estimator).__name__}: parameter {name}={value!r} is not valid; "
                f"it must be {wanted}."
            )


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def _is_numeric_dtype(dtype):
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return is_numeric_dtype(dtype) or is_bool_dtype(dtype)


def _check_numeric_dtypes(dtypes):
    """Refuse a pandas or dask DataFrame's columns whose dtype is not numeric or boolean."""
    bad = [(str(c), str(t)) for c, t in dtypes.items() if not _is_numeric_dtype(t)]
    if bad:
        kinds = sorted({t for _, t in bad})
        raise non_numeric_error([c for c, _ in bad], f"dtype {', '.join(kinds)}")


def non_numeric_error(columns, what):
    """The error for feature columns that are not numbers (``what``: their dtype, or a
    cell they hold), one rule for pandas, dask and numpy input."""
    columns = list(columns)
    more = f" and {len(columns) - 5} more" if len(columns) > 5 else ""
    return ValueError(
        f"Feature columns {columns[:5]}{more} are not numeric ({what}): convert numbers "
        "stored as text with pd.to_numeric or .astype(float), encode categories as numbers "
        "(e.g. one-hot or ordinal codes), or drop those columns before fitting."
    )


def _nullable_as_float(X, lazy=False):
    """A DataFrame's nullable numeric and boolean columns (``Int64``, ``Float64``,
    ``boolean``, pyarrow numbers) as float64, ``pd.NA`` as NaN.

    ``pd.NA`` is a missing value, as NaN is: estimators that take missing
    values read it as one, the others refuse it with the NaN message.  In
    memory only the columns that hold ``pd.NA`` change (integer columns keep
    their dtype); a dask DataFrame (``lazy``) cannot tell without a pass, so
    all of them become float64 (as object blocks they would be read cell by cell).
    """
    nullable = [
        j for j, t in enumerate(X.dtypes) if not isinstance(t, np.dtype) and _is_numeric_dtype(t)
    ]
    if lazy:
        return X.astype({X.columns[j]: np.float64 for j in nullable}) if nullable else X
    nullable = [j for j in nullable if X.iloc[:, j].isna().any()]
    if nullable:
        X = X.copy(deep=False)  # by position: column names may repeat
        for j in nullable:
            X.isetitem(j, X.iloc[:, j].astype(np.float64))
    return X


def carried_names(X):
    """The column names a dask array carries as ``feature_names`` (the arrays of
    :func:`dmargin.read_parquet`), as an object array; ``None`` for any other input
    or names that do not match its columns."""
    names = getattr(X, "feature_names", None) if is_dask_array(X) else None
    if names is None or X.ndim != 2 or len(names) != X.shape[1]:
        return None
    return np.asarray([str(c) for c in names], dtype=object)


def _frames_to_arrays(X, y):
    """Dask DataFrames/Series as arrays with known row chunks: ``(X, y, names)``.

    Both are persisted in one call, so partitions that X and y share (the
    blocks of ``read_parquet(..., as_frame=True)``, or two selections of one
    frame) are computed once; the row counts are then taken from the
    persisted blocks instead of another pass over the source.  Persisting
    also matters because a DataFrame's graph is lowered anew for every later
    graph that uses it, with different task specs under the same keys, which
    distributed warns about (and which would recompute the frame each time).
    ``names`` are X's column names (``None`` for arrays that carry none).
    """
    names, todo = carried_names(X), {}
    if is_dask_frame(X):
        _check_numeric_dtypes(X.dtypes)
        names = np.asarray([str(c) for c in X.columns], dtype=object)
        todo["X"] = _nullable_as_float(X, lazy=True).to_dask_array()
    if is_dask_frame(y):
        if len(y.columns) != 1:
            raise ValueError(
                f"y must be one label column; got a DataFrame with {len(y.columns)} columns."
            )
        y = y[y.columns[0]]
    if is_dask_series(y):
        with warnings.catch_warnings():
            # dask stores text labels as pyarrow strings and says so when it hands
            # them back as objects; object labels are what the checks expect.
            warnings.filterwarnings("ignore", "Dask currently has limited support", UserWarning)
            todo["y"] = y.to_dask_array()
    if not todo:
        return X, y, names
    out = dict(zip(todo, persist_with_known_rows(*todo.values())))
    return out.get("X", X), out.get("y", y), names


def _check_dask_X(estimator, X, reset, names=None):
    """Metadata-only checks for a dask array; returns it (object blocks as float64)."""
    if not is_dask_array(X):
        raise TypeError(f"Expected a dask array or DataFrame, got {type(X).__name__}.")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D array of shape (n_samples, n_features); got {X.ndim}-D.")
    _check_known_rows(X, "X")
    if np.issubdtype(X.dtype, np.complexfloating):
        raise _complex_error(f"dtype {X.dtype}")
    if X.dtype == object:  # numbers in object blocks are fine; text is named when read
        X = X.map_blocks(_numeric_block, names=names, dtype=np.float64)
    elif not (np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.bool_)):
        raise non_numeric_error(_column_labels(X.shape[1], names), f"dtype {X.dtype}")
    if X.shape[0] == 0:
        raise ValueError("X has 0 rows (0 samples); at least 2 are needed to fit.")
    if reset:
        estimator.n_features_in_ = X.shape[1]
        if names is not None:
            estimator.feature_names_in_ = names
        elif hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
    elif X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} was fitted with "
            f"{estimator.n_features_in_} features."
        )
    return X


def _check_known_rows(a, name):
    """A dask array's row chunk sizes must be known (to line rows of X up with labels)."""
    if any(np.isnan(c) for c in a.chunks[0]):
        raise ValueError(
            f"The dask array {name} has unknown chunk sizes along its rows: call "
            f"{name}.compute_chunk_sizes() first, build it with "
            "to_dask_array(lengths=True), or pass the dask DataFrame or Series itself."
        )


def _column_labels(n, names=None):
    return list(range(n)) if names is None else [str(c) for c in names]


def _numeric_block(block, names=None):
    """An object block of a dask X as float64, or an error naming its text columns."""
    return _object_as_float(block, names, strict=True)


def _is_number(v):
    return isinstance(v, (numbers.Number, np.number, np.bool_)) and not isinstance(v, complex)


#: What an object cell holds (:func:`_object_as_float`).
_NUMBER, _MISSING, _TEXT, _OTHER = 0, 1, 2, 3


def _cell_kind(v):
    import pandas as pd

    if _is_number(v):
        return _NUMBER
    if v is None or v is pd.NA:
        return _MISSING
    return _TEXT if isinstance(v, (str, bytes)) else _OTHER


def _object_as_float(values, names=None, strict=False):
    """A 2-D object array (numpy X, or a block of a dask X) as float64.

    Numbers are read as they are; ``None`` and ``pd.NA`` are missing values
    (NaN), as scikit-learn reads ``None``.  Text is refused even when it
    parses as a number ("0.5"), as pandas and dask columns of strings are: a
    column of text is a data problem to fix upstream, not to guess at.  Any
    other object is refused too (``strict``), or gives ``None`` so that
    scikit-learn's conversion reports it (its ``TypeError``).
    """
    kinds = np.frompyfunc(_cell_kind, 1, 1)(values).astype(np.int8)
    for kind, what in ((_TEXT, "text such as"), (_OTHER, "objects such as")):
        bad = (kinds == kind).any(axis=0)
        if not bad.any() or (kind == _OTHER and not strict):
            continue
        j = int(np.argmax(bad))
        cell = values[int(np.argmax(kinds[:, j] == kind)), j]
        labels = _column_labels(values.shape[1], names)
        raise non_numeric_error([labels[c] for c in np.flatnonzero(bad)], f"{what} {cell!r}")
    if (kinds == _OTHER).any():
        return None
    return np.where(kinds == _MISSING, np.nan, values).astype(np.float64)


def _numpy_numeric(X):
    """A numpy (or list) ``X`` of text or objects: object cells read by
    :func:`_object_as_float`, string dtypes refused; any other ``X`` unchanged."""
    values = np.asarray(X)
    if values.ndim != 2:
        return X  # scikit-learn names the shape
    if values.dtype.kind in "US":
        raise non_numeric_error(_column_labels(values.shape[1]), f"dtype {values.dtype}")
    if values.dtype == object:
        as_float = _object_as_float(values)
        return values if as_float is None else as_float
    return X


def check_one_label_type(values):
    """Labels of one Python type: ``1`` and ``"1"`` are not two classes to order."""
    if values.dtype == object:
        kinds = sorted({type(v).__name__ for v in values})
        if len(kinds) > 1:
            raise ValueError(
                f"y mixes label types ({', '.join(kinds)}); use labels of one "
                "type (e.g. convert them all to str)."
            )


def not_finite_error(bad_per_column, names=None, allow_nan=False):
    """The error for NaN/inf in X, naming the columns and how many rows each has
    (``allow_nan``: the estimator takes NaN as missing values; these are infinite)."""
    bad = np.asarray(bad_per_column)
    columns = np.flatnonzero(bad)
    label = (lambda j: repr(names[j])) if names is not None else (lambda j: str(j))
    parts = [f"column {label(j)} ({int(bad[j])} rows)" for j in columns[:3]]
    more = f" and {len(columns) - 3} more columns" if len(columns) > 3 else ""
    if allow_nan:
        return ValueError(
            f"X contains infinite values in {', '.join(parts)}{more}. NaN is read as a "
            "missing value, infinity is not: replace those values (e.g. by NaN) or drop "
            "those rows before fitting."
        )
    return ValueError(
        f"X contains NaN or infinite values in {', '.join(parts)}{more}. Impute them (e.g. "
        "sklearn.impute.SimpleImputer in a Pipeline before the selector) or drop those rows "
        "before fitting."
    )


def _complex_error(what):
    # scikit-learn's own wording first: its estimator checks look for it.
    return ValueError(
        f"Complex data not supported: X has complex values ({what}). Split them "
        "into real features (e.g. real and imaginary parts, or the modulus) "
        "before fitting."
    )


def missing_label_mask(values):
    """Which labels are missing: NaN, ``None`` or ``pd.NA`` (numpy labels or a block)."""
    import pandas as pd

    if values.dtype == object or values.dtype.kind == "f":
        return np.asarray(pd.isna(values), dtype=bool)
    return np.zeros(values.shape, dtype=bool)


def missing_labels_error(count):
    """The error for ``count`` missing labels, one message for every input kind."""
    return ValueError(
        f"y contains {count} missing labels (NaN, None or pd.NA): drop those rows "
        "(read_parquet(..., missing_label='drop') for Parquet data) or give them a label."
    )


def _as_label_array(y):
    """Labels as a 1-D numpy or dask array (pandas Series unwrapped)."""
    if is_dask_array(y):
        return y
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()
    return np.asarray(y)


def integer_input(X):
    """Whether ``X`` (numpy, pandas, dask array or frame) holds only integer or
    boolean columns, judged from its dtypes alone (no pass over the values)."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "columns"):
        kinds = [
            np.dtype(t).kind if isinstance(t, np.dtype) else getattr(t, "kind", "O") for t in dtypes
        ]
        return bool(kinds) and all(k in "biu" for k in kinds)
    dtype = getattr(X, "dtype", None)
    if dtype is None:
        return False
    return np.dtype(dtype).kind in "biu"


def check_X_y(
    estimator,
    X,
    y,
    *,
    reset=True,
    min_samples=2,
    allow_nan=False,
    keep_integers=False,
    keep_float32=False,
    continuous=False,
    labels_typed=False,
):
    """Validate ``X, y``; returns ``(X, y)`` as numpy or dask arrays.

    ``min_samples=1`` lets a stream's later chunk (``partial_fit``) be one row.
    ``allow_nan``: NaN in ``X`` are missing values (the estimator handles
    them); infinite values are still refused.  ``keep_integers``: integer or
    boolean ``X`` keeps its dtype instead of becoming float64 (the SURF
    family's compact genotype rows, :func:`dmargin.io._training.compact_data`);
    ``keep_float32``: so does ``float32`` ``X`` (the SURF family's float32 rows).
    ``continuous``: ``y`` is a continuous target, checked by
    :func:`target_values` (the class-label checks do not apply).
    ``labels_typed``: :func:`is_continuous` has already said that ``y`` is not
    a continuous target (``type_of_target`` is not asked again).

    numpy / pandas ``X`` goes through scikit-learn's ``validate_data`` (NaN,
    inf, dtype, ``feature_names_in_``); dask ``X`` is checked on metadata and
    its values are checked for finiteness in the scaling pass.  One rule for
    every input kind: ``pd.NA`` (nullable columns, object cells) and ``None``
    are NaN; text is refused even when it parses as numbers; numbers in object
    arrays are read; a dask ``y``, like a dask ``X``, needs known row chunks.
    """
    if is_dask_collection(X) or is_dask_collection(y):
        X, y, names = _frames_to_arrays(X, y)
    if is_dask_collection(X):
        X = _check_dask_X(estimator, X, reset, names)
    else:
        if hasattr(X, "dtypes") and hasattr(X, "columns"):
            _check_numeric_dtypes(X.dtypes)
            X = _nullable_as_float(X)
            complex_columns = [str(c) for c, t in X.dtypes.items() if t.kind == "c"]
        else:
            X = _numpy_numeric(X)
            dtype = getattr(X, "dtype", None)
            dtype = np.asarray(X).dtype if dtype is None else dtype
            complex_columns = ["X"] if dtype.kind == "c" else []
        if complex_columns:
            raise _complex_error(
                f"columns {complex_columns}"
                if hasattr(X, "columns")
                else f"dtype {np.asarray(X).dtype}"
            )
        # Sums of finite values near the float limit overflow inside the finiteness
        # check; they are finite, and scaling handles them (dmargin.io._training).
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                dtype = (
                    None
                    if keep_integers and integer_input(X)
                    else [np.float64, np.float32]
                    if keep_float32
                    else np.float64
                )
                X = validate_data(
                    estimator,
                    X,
                    reset=reset,
                    dtype=dtype,
                    ensure_min_samples=min_samples,
                    ensure_all_finite="allow-nan" if allow_nan else True,
                )
            except ValueError as exc:
                if "NaN" not in str(exc) and "infinity" not in str(exc):
                    raise
                values = np.asarray(X, dtype=np.float64)
                bad = (np.isinf(values) if allow_nan else ~np.isfinite(values)).sum(axis=0)
                names = [str(c) for c in X.columns] if hasattr(X, "columns") else None
                raise not_finite_error(bad, names, allow_nan) from None
    if y is None:
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the "
            "target y is None: feature selection by margins needs class labels."
        )
    y = _as_label_array(y)
    if is_dask_array(y):
        _check_known_rows(y, "y")
    if y.ndim == 2 and y.shape[1] == 1:
        warn(
            "A column-vector y was passed when a 1d array was expected; it is raveled.",
            DataConversionWarning,
        )
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array (one label per row); got shape {y.shape}.")
    ny, nx = y.shape[0], X.shape[0]
    if not (isinstance(ny, float) and np.isnan(ny)) and ny != nx:
        raise ValueError(f"X has {nx} rows but y has {ny} labels; they must match.")
    if y.dtype.kind == "c":
        raise ValueError(
            f"y has complex dtype {y.dtype}; class labels must be integers, strings or booleans."
        )
    if not is_dask_collection(y) and not continuous:  # dask labels: checked in _io
        missing = int(missing_label_mask(y).sum())
        if missing:
            raise missing_labels_error(missing)
        check_one_label_type(y)
        if not labels_typed:
            check_label_values(y)
    return X, y


def check_label_values(values):
    """Class labels, not a continuous target: the same test for numpy labels and for
    the distinct values of dask labels (``type_of_target`` gives the same answer on
    both)."""
    if type_of_target(values) == "continuous":
        raise ValueError(
            "Unknown label type: continuous. Margin-based selection needs "
            "class labels; bin a continuous target into classes first."
        )


def check_binary(estimator, classes, why):
    """Exactly two classes, for the estimators whose quantities are binary (``why``)."""
    if len(classes) != 2:
        raise ValueError(
            f"Only binary classification is supported. {type(estimator).__name__} is binary: "
            f"{why}, but y has {len(classes)} classes. Select features one class against the "
            "rest (relabel y) or use a multiclass selector such as dmargin.IRelief."
        )


def check_known_labels(labels, classes):
    """Labels outside ``classes`` (fixed by a stream's first ``partial_fit``) are refused."""
    unknown = np.setdiff1d(labels, classes)
    if unknown.size:
        raise ValueError(
            f"y has labels {unknown.tolist()} not seen in the classes "
            f"{np.asarray(classes).tolist()} of the first partial_fit call; pass "
            "classes= with every label on the first call."
        )


def check_classes(classes, counts):
    """At least two classes are needed for hits and misses."""
    if len(classes) < 2:
        raise ValueError(
            f"y has a single class ({np.asarray(classes)[:1].tolist()[0]!r}); margin-based "
            "selection needs at least "
            "two classes to define misses."
        )


# ---------------------------------------------------------------------------
# A continuous target (the Relief family's regression endpoint)
# ---------------------------------------------------------------------------


def is_continuous(y) -> bool | None:
    """Whether in-memory ``y`` is a continuous target as scikit-learn's
    ``type_of_target`` says: float values of which at least one is not an
    integer.

    ``None`` for labels that ``type_of_target`` refuses (NaN, mixed types): they
    are left to the classification checks, which name the problem.  A dask
    target is decided in the pass that reads the data
    (:func:`dmargin.io._training.prepare_training_data`), not here.
    """
    values = _as_label_array(y)
    if values.dtype.kind in "biu" and values.ndim in (1, 2):
        return False  # type_of_target's answer for integers, without its passes
    if values.dtype.kind in "fO" and missing_label_mask(values).any():
        return None  # scikit-learn would warn about the cast before the labels' error
    try:
        return type_of_target(y) == "continuous"
    except (ValueError, TypeError):
        return None


def target_values(estimator, y):
    """``y`` as a finite float64 numpy vector, or an error that names the problem."""
    name = type(estimator).__name__
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None.")
    y = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array (one target value per row); got shape {y.shape}.")
    if y.dtype.kind == "c":
        raise ValueError(
            f"Complex data not supported: {name} needs a real target; y has dtype {y.dtype}."
        )
    if y.dtype.kind == "O":  # numbers held as objects (a pandas object column) are numbers
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"Unknown label type: {name} needs a numeric target; y holds "
                "objects that are not numbers. Encode it as numbers, or use "
                "ReliefF for class labels."
            ) from None
    if y.dtype.kind not in "biuf":
        raise ValueError(
            f"{name} needs a numeric target; y has dtype {y.dtype}. Encode it as "
            "numbers, or use ReliefF for class labels."
        )
    if y.size < 2:
        raise ValueError(f"{name} needs at least 2 rows to compare targets; got {y.size} sample.")
    y = y.astype(np.float64)
    bad = int(np.sum(~np.isfinite(y)))
    if bad:
        raise ValueError(
            f"y contains {bad} missing (NaN) or infinite values. Drop those rows "
            "or give them a value."
        )
    if y.size and np.all(y == y[0]):
        raise ValueError(
            "y is constant: no feature can explain its differences. Check that "
            "the right column is the target."
        )
    return y


#: A constraint of one's own: ``Kind(description, test)``.
Kind = _Kind
