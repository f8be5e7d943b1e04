"""The bad-input sweep: every defect, every estimator, every input path.

Each row of :data:`DEFECTS` is one input a user may hand to ``fit``, and
what they must get: a clear error (an exception raised by dmargin's or
scikit-learn's input checks, whose message matches) or a documented result
(finite weights, the informative feature ranked first).  Each is tried on
IRelief, ReliefF, Immigrate, SBSMF, LDMRFE and OnlineIRelief, through numpy,
pandas, dask arrays and Parquet (``read_parquet``).  A silent-garbage outcome
(NaN weights, a wrong ranking without an error) or an error raised from deep
inside numpy, numba, pandas or dask fails the test.

The second half holds each input rule to every public estimator and every
input kind it applies to: ``pd.NA`` in a nullable column is a missing value
(NaN), text is refused even when it parses as numbers, dask labels of unknown
length get X's message, and a missing label is named as one whatever its dtype.

``python -m tests.test_bad_input`` prints the "Bad input" table of ``docs/bad_input.md``.
"""

from __future__ import annotations

import functools
import re
import traceback
import warnings
from pathlib import Path

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dmargin
from dmargin._registry import estimator_names, example

ESTIMATORS = {
    "IRelief": lambda: dmargin.IRelief(max_iter=5, tol=0),
    "ReliefF": lambda: dmargin.ReliefF(n_neighbors=3),
    "Immigrate": lambda: dmargin.Immigrate(max_iter=3, tol=0),
    "SBSMF": lambda: dmargin.SBSMF(1, n_estimators=10),
    "LDMRFE": lambda: dmargin.LDMRFE(1),
    "OnlineIRelief": lambda: dmargin.OnlineIRelief(n_passes=1, random_state=0),
}
PATHS = ("numpy", "pandas", "dask", "parquet")


def _base(n=40, a=4):
    """Feature 0 separates the two classes; the others are noise."""
    rng = np.random.default_rng(7)
    y = np.repeat([0, 1], n // 2)
    X = rng.uniform(-1, 1, size=(n, a))
    X[:, 0] = np.where(y == 1, 1.0, -1.0) + 0.1 * rng.uniform(-1, 1, n)
    return pd.DataFrame(X, columns=[f"f{j}" for j in range(a)]), pd.Series(y, name="label")


def _edit(fn):
    def make():
        X, y = _base()
        return fn(X.copy(), y.copy())

    return make


def _set(frame, row, col, value):
    frame = frame.astype(object) if isinstance(value, str) else frame
    frame.iloc[row, col] = value
    return frame


# name, how the data are made, paths it applies to, expected outcome:
# a regex for a clear error, or "ok" (finite weights, feature 0 first).
DEFECTS = [
    # The Relief family reads NaN as a missing value (skrebate's rule, tests/test_missing.py).
    (
        "NaN in X",
        _edit(lambda X, y: (_set(X, 3, 1, np.nan), y)),
        PATHS,
        {
            "*": r"NaN or infinite values in column ('f1'|1) \(1 rows\)",
            "ReliefF": "ok",
            "IRelief": "ok",
            "OnlineIRelief": "ok",
        },
    ),
    (
        "inf in X",
        _edit(lambda X, y: (_set(X, 3, 1, np.inf), y)),
        PATHS[:3],
        r"infinite values in column ('f1'|1) \(1 rows\)",
    ),
    ("a column of +-1e308", _edit(lambda X, y: (X.assign(f0=X.f0 * 1e308 / 1.1), y)), PATHS, "ok"),
    ("complex X", _edit(lambda X, y: (X.astype(complex), y)), PATHS[:3], r"complex"),
    (
        "a text column",
        _edit(lambda X, y: (X.assign(f2=X.f2.map(lambda v: f"{v:.2f}")), y)),
        PATHS[1:],
        r"not numeric",
    ),
    # ReliefF takes a continuous y as skrebate's continuous endpoint (tests/test_regression.py).
    (
        "continuous y",
        _edit(lambda X, y: (X, y + np.linspace(0.01, 0.5, len(y)))),
        PATHS,
        {"ReliefF": "ok", "*": r"continuous"},
    ),
    (
        "a missing label",
        _edit(lambda X, y: (X, y.astype(float).mask(y.index == 5))),
        PATHS,
        r"missing label|NaN label|no value in the label",
    ),
    ("one class", _edit(lambda X, y: (X, y * 0)), PATHS, r"single class|one class"),
    (
        "labels of mixed types",
        _edit(lambda X, y: (X, y.astype(object).where(y.index != 5, "five"))),
        PATHS[:3],
        r"[Mm]ix",
    ),
    (
        "X and y lengths differ",
        _edit(lambda X, y: (X, y.iloc[:-3])),
        PATHS[:3],
        r"rows but y has|inconsistent numbers of samples",
    ),
    (
        "no rows",
        _edit(lambda X, y: (X.iloc[:0], y.iloc[:0])),
        PATHS[:3],
        r"0 sample|no rows|at least",
    ),
    ("a constant feature", _edit(lambda X, y: (X.assign(f3=2.5), y)), PATHS, "ok"),
    (
        "duplicate rows",
        _edit(
            lambda X, y: (
                pd.concat([X, X.iloc[:10]], ignore_index=True),
                pd.concat([y, y.iloc[:10]], ignore_index=True),
            )
        ),
        PATHS,
        "ok",
    ),
    ("a class with one sample", _edit(lambda X, y: (X.iloc[:21], y.iloc[:21])), PATHS, "ok"),
    (
        "boolean and int64 > 2**53 features",
        _edit(lambda X, y: (X.assign(f2=X.f2 > 0, f3=(X.f3 > 0) * (2**60 + 1)), y)),
        PATHS,
        "ok",
    ),
]


def as_path(path, X, y, tmp_path):
    if path == "numpy":
        return X.to_numpy(), y.to_numpy()
    if path == "pandas":
        return X, y
    if path == "dask":
        Xn, yn = X.to_numpy(), y.to_numpy()
        rows = max(1, min(10, len(yn)))
        return (
            da.from_array(Xn, chunks=(rows, Xn.shape[1])),
            da.from_array(yn, chunks=(max(1, min(10, len(yn))),)),
        )
    frame = X.copy()
    frame["label"] = y.to_numpy() if len(y) == len(X) else y.reindex(X.index).to_numpy()
    file = Path(tmp_path) / "data.parquet"
    frame.to_parquet(file, row_group_size=10)
    return dmargin.read_parquet(file, "label")


#: Where a clear error may come from: dmargin's own checks and scikit-learn's
#: input validation (its messages name the problem).
_DOORS = (
    "dmargin/",
    "sklearn/utils/validation.py",
    "sklearn/utils/multiclass.py",
    "sklearn/utils/_array_api.py",
)


def outcome(est_name, defect, path, tmp_path):
    """``("error", message)`` or ``("ok", weights)`` for one fit."""
    _, make, _, _ = next(d for d in DEFECTS if d[0] == defect)
    X, y = make()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Xp, yp = as_path(path, X, y, tmp_path)
            est = ESTIMATORS[est_name]().fit(Xp, yp)
    except (ValueError, TypeError) as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        where = frames[-1].filename.replace("\\", "/")
        assert any(d in where for d in _DOORS), (
            f"{type(exc).__name__} raised deep inside {where}: {exc}"
        )
        return "error", f"{type(exc).__name__}: {exc}"
    scores = getattr(est, "feature_importances_", None)
    if scores is None or hasattr(est, "ranking_"):
        scores = -np.asarray(est.ranking_, dtype=float)
    return "ok", np.asarray(scores, dtype=float)


CASES = [(e, d[0], p) for d in DEFECTS for p in d[2] for e in ESTIMATORS]


@pytest.mark.parametrize("est_name,defect,path", CASES)
def test_bad_input(est_name, defect, path, tmp_path):
    expected = next(d[3] for d in DEFECTS if d[0] == defect)
    if isinstance(expected, dict):
        expected = expected.get(est_name, expected["*"])
    with dask.config.set(scheduler="threads"):
        kind, value = outcome(est_name, defect, path, tmp_path)
    if expected == "ok":
        assert kind == "ok", f"expected a result, got {value}"
        assert np.all(np.isfinite(value)), f"silent garbage: {value}"
        assert np.argmax(value) == 0, f"the separating feature is not first: {value}"
    else:
        assert kind == "error", f"expected an error matching {expected!r}, got weights {value}"
        assert re.search(expected, value), value
        assert len(value) < 700, f"the message is a dump, not a sentence: {value[:200]}..."


def table(tmp_path):
    """Markdown rows: input, paths, and the first estimator's message per path."""
    rows = ["| input | paths | what the user gets |", "| --- | --- | --- |"]
    for name, _, paths, _ in DEFECTS:
        with dask.config.set(scheduler="threads"):
            kind, value = outcome("IRelief", name, paths[0], tmp_path)
        first = re.split(r"\.\s+(?=[A-Z])", " ".join(str(value).split()))[0].rstrip(".")
        text = (
            "a result: finite weights, the separating feature first"
            if kind == "ok"
            else f"`{first.replace('|', '/')}.`"
        )
        rows.append(f"| {name} | {', '.join(paths)} | {text} |")
    return "\n".join(rows)


if __name__ == "__main__":  # pragma: no cover
    import tempfile

    print(table(tempfile.mkdtemp()))


# ---------------------------------------------------------------------------
# One rule for every input kind, on every public estimator: pandas nullable
# dtypes (pd.NA), text in numpy and dask arrays, dask labels of unknown length,
# missing labels of every dtype.
# ---------------------------------------------------------------------------

#: Every public estimator (the registry's), small enough to fit in a blink.
PUBLIC = {
    "BDSFS": lambda: dmargin.BDSFS(1),
    "SBSMF": lambda: dmargin.SBSMF(1, n_estimators=10),
    "AdaBoostCR": lambda: dmargin.AdaBoostCR(1, n_estimators=10),
    "AdaBoostStumps": lambda: dmargin.AdaBoostStumps(10),
    "BoostedImmigrate": lambda: dmargin.BoostedImmigrate(n_estimators=3, max_iter=2),
    "IM4E": lambda: dmargin.IM4E(max_iter=3),
    "IM4EImmigrate": lambda: dmargin.IM4EImmigrate(max_iter=3),
    "IRelief": lambda: dmargin.IRelief(max_iter=5, tol=0),
    "Immigrate": lambda: dmargin.Immigrate(max_iter=3),
    "LDM": lambda: dmargin.LDM(random_state=0),
    "LDMRFE": lambda: dmargin.LDMRFE(1, random_state=0),
    "MultiSURF": lambda: dmargin.MultiSURF(),
    "MultiSURFstar": lambda: dmargin.MultiSURFstar(),
    "OnlineIRelief": lambda: dmargin.OnlineIRelief(n_passes=1, random_state=0),
    "RReliefF": lambda: dmargin.RReliefF(n_neighbors=5),
    "Relief": lambda: dmargin.Relief(),
    "ReliefF": lambda: dmargin.ReliefF(n_neighbors=3),
    "SURF": lambda: dmargin.SURF(),
    "SURFstar": lambda: dmargin.SURFstar(),
    "SVMRFE": lambda: dmargin.SVMRFE(1, random_state=0),
    "SWRF": lambda: dmargin.SWRF(),
    "SWRFstar": lambda: dmargin.SWRFstar(),
    "MultiSWRF": lambda: dmargin.MultiSWRF(),
    "MultiSWRFstar": lambda: dmargin.MultiSWRFstar(),
    "MultiSWRFDB": lambda: dmargin.MultiSWRFDB(),
    "MultiSWRFDBstar": lambda: dmargin.MultiSWRFDBstar(),
    "Simba": lambda: dmargin.Simba(n_starts=1, random_state=0),
    "TuRF": lambda: dmargin.TuRF(dmargin.ReliefF(n_neighbors=3)),
    "KnockoffSelector": lambda: dmargin.KnockoffSelector(
        dmargin.ReliefF(n_neighbors=3), random_state=0
    ),
    "MuRelief": lambda: dmargin.MuRelief(n_neighbors=5),
    "Iter": lambda: dmargin.Iter(dmargin.ReliefF(n_neighbors=3), max_iter=3),
    "VLS": lambda: dmargin.VLS(
        dmargin.ReliefF(n_neighbors=3), num_feature_subset=3, size_feature_subset=2, random_state=0
    ),
}
# An estimator without a setting above fits as the registry builds it.
PUBLIC.update(
    {name: functools.partial(example, name) for name in estimator_names() if name not in PUBLIC}
)
#: What a fit learned, compared between two spellings of the same data.
_FITTED = ("feature_importances_", "ranking_", "dual_coef_")
_NAN_MESSAGE = r"NaN or infinite values in column ('f1'|1) \(1 rows\)\. Impute .*SimpleImputer"
_MISSING_LABELS = r"y contains 1 missing labels \(NaN, None or pd\.NA\): drop those rows"


def _takes_nan(name):
    return PUBLIC[name]().__sklearn_tags__().input_tags.allow_nan


def _try(name, X, y):
    """``("error", message)`` or ``("ok", fitted arrays)``; an error raised deep inside
    numpy, pandas or dask (not at the input checks) fails the test."""
    try:
        with warnings.catch_warnings(), dask.config.set(scheduler="threads"):
            warnings.simplefilter("ignore")
            est = PUBLIC[name]().fit(X, y)
    except (ValueError, TypeError) as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1].filename.replace("\\", "/")
        assert any(d in where for d in _DOORS), (
            f"{type(exc).__name__} raised deep inside {where}: {exc}"
        )
        assert len(str(exc)) < 700, f"the message is a dump, not a sentence: {exc}"
        return "error", f"{type(exc).__name__}: {exc}"
    return "ok", {a: np.asarray(getattr(est, a), dtype=float) for a in _FITTED if hasattr(est, a)}


_REFERENCE = {}


def _reference(est_name, X, y, key):
    """``_try`` of a reference fit, once per estimator and ``key`` (the tests below
    compare many spellings of one data set with it)."""
    if (est_name, key) not in _REFERENCE:
        _REFERENCE[est_name, key] = _try(est_name, X, y)
    return _REFERENCE[est_name, key]


def _assert_same(got, want):
    assert got[0] == want[0], f"{got[1]} instead of {want[1]}"
    if got[0] == "error":
        assert got[1] == want[1]
    else:
        assert got[1].keys() == want[1].keys()
        for attr in want[1]:
            np.testing.assert_allclose(
                got[1][attr], want[1][attr], rtol=1e-12, atol=1e-12, err_msg=attr
            )


def test_public_lists_every_estimator():
    assert set(PUBLIC) == set(estimator_names())


#: Column f1 in a nullable dtype, and the same values as float64 (pd.NA -> NaN).
NULLABLE = {
    "Int64": lambda f1: (pd.array(np.round(f1 * 10).astype(int), dtype="Int64"), np.round(f1 * 10)),
    "Float64": lambda f1: (pd.array(f1, dtype="Float64"), f1.to_numpy()),
    "boolean": lambda f1: (pd.array(f1 > 0, dtype="boolean"), (f1 > 0).astype(float)),
}
X_KINDS = ("pandas", "dask DataFrame", "numpy object", "dask object array")


def _as_kind(kind, X, y):
    """``X, y`` as a pandas or dask DataFrame, or as a numpy or dask object array (the
    cells as pandas holds them: Python numbers, pd.NA, str)."""
    if kind == "pandas":
        return X, y
    if kind == "dask DataFrame":
        return dd.from_pandas(X, npartitions=4), dd.from_pandas(y, npartitions=4)
    values = X.to_numpy(dtype=object)
    if kind.startswith("numpy"):
        return values, y.to_numpy()
    return da.from_array(values, chunks=(10, -1)), da.from_array(y.to_numpy(), chunks=10)


@pytest.mark.parametrize("kind", X_KINDS)
@pytest.mark.parametrize("dtype", list(NULLABLE))
@pytest.mark.parametrize("est_name", list(PUBLIC))
def test_pd_na_in_X_is_a_missing_value(est_name, dtype, kind):
    """pd.NA in a nullable column is NaN: the same result where NaN is a missing value,
    the same NaN message (naming the column and SimpleImputer) everywhere else."""
    X, y = _base()
    nullable, floats = NULLABLE[dtype](X.f1)
    with_na = X.assign(f1=nullable)
    with_na.loc[3, "f1"] = pd.NA
    with_nan = X.assign(f1=floats)
    with_nan.loc[3, "f1"] = np.nan
    want = _reference(est_name, with_nan, y, f"NaN in f1 as {dtype}")
    got = _try(est_name, *_as_kind(kind, with_na, y))
    if _takes_nan(est_name):
        assert want[0] == "ok", want[1]
    else:
        assert re.search(_NAN_MESSAGE, got[1]), got[1]
        want = (
            want[0],
            want[1].replace("'f1'", "1")
            if kind.endswith("array") or kind.startswith("numpy")
            else want[1],
        )
    _assert_same(got, want)


def _text(kind):
    """X with column f2 as text that parses as numbers ("0.53"), in one input kind."""
    X, y = _base()
    text = X.assign(f2=X.f2.map(lambda v: f"{v:.2f}"))
    if kind == "numpy <U":
        return X.to_numpy().astype(str), y.to_numpy()
    if kind == "dask <U":
        return da.from_array(X.to_numpy().astype(str), chunks=(10, -1)), da.from_array(
            y.to_numpy(), chunks=10
        )
    if kind == "pandas object":
        return text.astype({"f2": object}), y
    return _as_kind(kind.replace(" str", ""), text, y)


TEXT_KINDS = {
    "numpy object": r"\[2\]",
    "dask object array": r"\[2\]",
    "pandas str": r"\['f2'\]",
    "pandas object": r"\['f2'\]",
    "dask DataFrame str": r"\['f2'\]",
    "numpy <U": r"\[0, 1, 2, 3\]",
    "dask <U": r"\[0, 1, 2, 3\]",
}


@pytest.mark.parametrize("kind", list(TEXT_KINDS))
@pytest.mark.parametrize("est_name", list(PUBLIC))
def test_text_features_are_refused_in_every_input_kind(est_name, kind):
    """Numbers stored as text are refused wherever they come from, naming the columns
    and the fix."""
    outcome_ = _try(est_name, *_text(kind))
    assert outcome_[0] == "error", "text parsed as numbers"
    assert re.search(
        TEXT_KINDS[kind] + r" are not numeric \(.*\): convert numbers stored as "
        r"text with pd\.to_numeric or \.astype\(float\)",
        outcome_[1],
    ), outcome_[1]


@pytest.mark.parametrize("kind", ["numpy object", "dask object array"])
@pytest.mark.parametrize("est_name", list(PUBLIC))
def test_numbers_in_object_arrays_are_read(est_name, kind):
    """An object array of Python numbers is read as numbers, None as NaN."""
    X, y = _base()
    values = X.to_numpy().astype(object)
    values[:, 2] = [int(v * 100) for v in X.f2]  # Python ints among the floats
    values[3, 1] = None
    floats = values.astype(np.float64)
    if kind == "numpy object":
        got = _try(est_name, values, y.to_numpy())
    else:
        got = _try(
            est_name, da.from_array(values, chunks=(10, -1)), da.from_array(y.to_numpy(), chunks=10)
        )
    want = _try(est_name, floats, y.to_numpy())
    assert want[0] == ("ok" if _takes_nan(est_name) else "error"), want[1]
    _assert_same(got, want)


def _unknown_length_labels(kind, y):
    series = dd.from_pandas(y, npartitions=4)
    if kind == "to_dask_array()":
        return series.to_dask_array()
    return series[series >= 0].values  # a filtered series' values


@pytest.mark.parametrize("x_kind", ["numpy", "dask array"])
@pytest.mark.parametrize("y_kind", ["to_dask_array()", "filtered .values"])
@pytest.mark.parametrize("est_name", list(PUBLIC))
def test_dask_labels_of_unknown_length(est_name, y_kind, x_kind):
    """y with unknown chunk sizes gets X's message, naming y and the fix.  RReliefF
    reads a continuous target whole (N floats), so it needs no chunk sizes."""
    X, y = _base()
    Xk = X.to_numpy() if x_kind == "numpy" else da.from_array(X.to_numpy(), chunks=(10, -1))
    got = _try(est_name, Xk, _unknown_length_labels(y_kind, y))
    if est_name == "RReliefF":
        _assert_same(got, _reference(est_name, X.to_numpy(), y.to_numpy(), "numpy"))
    else:
        assert got[0] == "error", "a result from labels of unknown length"
        assert re.search(
            r"dask array y has unknown chunk sizes along its rows: call "
            r"y\.compute_chunk_sizes\(\) first",
            got[1],
        ), got[1]


@pytest.mark.parametrize("est_name", list(PUBLIC))
def test_dask_labels_of_unknown_length_the_fix(est_name):
    """The fixes the message names (compute_chunk_sizes, or the dask Series itself)
    give the numpy result."""
    X, y = _base()
    Xk = da.from_array(X.to_numpy(), chunks=(10, -1))
    want = _reference(est_name, X.to_numpy(), y.to_numpy(), "numpy")
    assert want[0] == "ok", want[1]
    _assert_same(
        _try(est_name, Xk, _unknown_length_labels("to_dask_array()", y).compute_chunk_sizes()), want
    )
    _assert_same(_try(est_name, Xk, dd.from_pandas(y, npartitions=4)), want)


#: Labels with one missing value, in each dtype a label column may have.
LABELS = {
    "float NaN": lambda y: y.astype(float).mask(y.index == 5),
    "object None": lambda y: y.map({0: "no", 1: "yes"}).astype(object).mask(y.index == 5, None),
    "string pd.NA": lambda y: y.map({0: "no", 1: "yes"}).astype("string").mask(y.index == 5),
    "Int64 pd.NA": lambda y: y.astype("Int64").mask(y.index == 5),
    "boolean pd.NA": lambda y: (y == 1).astype("boolean").mask(y.index == 5),
    "category NaN": lambda y: y.map({0: "no", 1: "yes"}).astype("category").mask(y.index == 5),
}
Y_KINDS = ("numpy", "pandas", "dask Series", "dask array")


def _labels_as(kind, y):
    if kind == "numpy":
        return y.to_numpy()
    if kind == "pandas":
        return y
    if kind == "dask Series":
        return dd.from_pandas(y, npartitions=4)
    return da.from_array(y.to_numpy(), chunks=10)


@pytest.mark.parametrize("y_kind", Y_KINDS)
@pytest.mark.parametrize("labels", list(LABELS))
@pytest.mark.parametrize("est_name", list(PUBLIC))
def test_missing_labels_say_so_in_every_dtype(est_name, labels, y_kind):
    """One missing label, whatever its dtype, is counted and named with the fix (not
    taken for a label of another type).  RReliefF takes a numeric target and has its
    own message for a missing or non-numeric one."""
    X, y = _base()
    y = LABELS[labels](y)
    Xk = da.from_array(X.to_numpy(), chunks=(10, -1)) if y_kind.startswith("dask") else X.to_numpy()
    got = _try(est_name, Xk, _labels_as(y_kind, y))
    assert got[0] == "error", "a result from a missing label"
    expected = r"missing \(NaN\)|numeric target" if est_name == "RReliefF" else _MISSING_LABELS
    assert re.search(expected, got[1]), got[1]
