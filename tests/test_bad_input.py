"""The bad-input sweep: every defect, every estimator, every input path.

Each row of :data:`DEFECTS` is one input a user may hand to ``fit``, and
what they must get: a clear error (an exception raised by dmargin's or
scikit-learn's input checks, whose message matches) or a documented result
(finite weights, the informative feature ranked first).  Each is tried on
IRelief, ReliefF, Immigrate, SBSMF, LDMRFE and OnlineIRelief, through numpy,
pandas, dask arrays and Parquet (``read_parquet``).  A silent-garbage outcome
(NaN weights, a wrong ranking without an error) or an error raised from deep
inside numpy, numba, pandas or dask fails the test.

``python -m tests.test_bad_input`` prints the README's "Bad input" table.
"""

from __future__ import annotations

import re
import traceback
import warnings
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest

import dmargin

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
    ("NaN in X", _edit(lambda X, y: (_set(X, 3, 1, np.nan), y)), PATHS,
     {"*": r"NaN or infinite values in column ('f1'|1) \(1 rows\)", "ReliefF": "ok",
      "IRelief": "ok", "OnlineIRelief": "ok"}),
    ("inf in X", _edit(lambda X, y: (_set(X, 3, 1, np.inf), y)), PATHS[:3],
     r"infinite values in column ('f1'|1) \(1 rows\)"),
    ("a column of +-1e308", _edit(lambda X, y: (X.assign(f0=X.f0 * 1e308 / 1.1), y)), PATHS,
     "ok"),
    ("complex X", _edit(lambda X, y: (X.astype(complex), y)), PATHS[:3], r"complex"),
    ("a text column", _edit(lambda X, y: (X.assign(f2=X.f2.map(lambda v: f"{v:.2f}")), y)),
     PATHS[1:], r"not numeric"),
    # ReliefF takes a continuous y as skrebate's continuous endpoint (tests/test_regression.py).
    ("continuous y", _edit(lambda X, y: (X, y + np.linspace(0.01, 0.5, len(y)))), PATHS,
     {"ReliefF": "ok", "*": r"continuous"}),
    ("a missing label", _edit(lambda X, y: (X, y.astype(float).mask(y.index == 5))), PATHS,
     r"missing label|NaN label|no value in the label"),
    ("one class", _edit(lambda X, y: (X, y * 0)), PATHS, r"single class|one class"),
    ("labels of mixed types", _edit(lambda X, y: (X, y.astype(object).where(
        y.index != 5, "five"))), PATHS[:3], r"[Mm]ix"),
    ("X and y lengths differ", _edit(lambda X, y: (X, y.iloc[:-3])), PATHS[:3],
     r"rows but y has|inconsistent numbers of samples"),
    ("no rows", _edit(lambda X, y: (X.iloc[:0], y.iloc[:0])), PATHS[:3],
     r"0 sample|no rows|at least"),
    ("a constant feature", _edit(lambda X, y: (X.assign(f3=2.5), y)), PATHS, "ok"),
    ("duplicate rows", _edit(lambda X, y: (pd.concat([X, X.iloc[:10]], ignore_index=True),
                                           pd.concat([y, y.iloc[:10]], ignore_index=True))),
     PATHS, "ok"),
    ("a class with one sample", _edit(lambda X, y: (X.iloc[:21], y.iloc[:21])), PATHS, "ok"),
    ("boolean and int64 > 2**53 features",
     _edit(lambda X, y: (X.assign(f2=X.f2 > 0, f3=(X.f3 > 0) * (2**60 + 1)), y)), PATHS, "ok"),
]


def as_path(path, X, y, tmp_path):
    if path == "numpy":
        return X.to_numpy(), y.to_numpy()
    if path == "pandas":
        return X, y
    if path == "dask":
        Xn, yn = X.to_numpy(), y.to_numpy()
        rows = max(1, min(10, len(yn)))
        return (da.from_array(Xn, chunks=(rows, Xn.shape[1])),
                da.from_array(yn, chunks=(max(1, min(10, len(yn))),)))
    frame = X.copy()
    frame["label"] = y.to_numpy() if len(y) == len(X) else y.reindex(X.index).to_numpy()
    file = Path(tmp_path) / "data.parquet"
    frame.to_parquet(file, row_group_size=10)
    return dmargin.read_parquet(file, "label")


#: Where a clear error may come from: dmargin's own checks and scikit-learn's
#: input validation (its messages name the problem).
_DOORS = ("dmargin/", "sklearn/utils/validation.py", "sklearn/utils/multiclass.py",
          "sklearn/utils/_array_api.py")


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
        assert any(d in where for d in _DOORS), \
            f"{type(exc).__name__} raised deep inside {where}: {exc}"
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
    for name, _, paths, expected in DEFECTS:
        with dask.config.set(scheduler="threads"):
            kind, value = outcome("IRelief", name, paths[0], tmp_path)
        first = re.split(r"\.\s+(?=[A-Z])", " ".join(str(value).split()))[0].rstrip(".")
        text = ("a result: finite weights, the separating feature first"
                if kind == "ok" else f"`{first.replace('|', '/')}.`")
        rows.append(f"| {name} | {', '.join(paths)} | {text} |")
    return "\n".join(rows)


if __name__ == "__main__":  # pragma: no cover
    import tempfile

    print(table(tempfile.mkdtemp()))
