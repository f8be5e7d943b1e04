"""Mixed discrete and continuous features in ReliefF: skrebate 0.8.4's semantics and outputs.

A feature with at most ``discrete_threshold`` distinct values is discrete
(difference 0/1); when the data mix both kinds a discrete mismatch weighs
``A / A_discrete`` in the distance and a scored continuous difference above
the feature's standard deviation counts 1 (skrebate's "ramp").  Checked
against skrebate's ``feature_importances_`` to 1e-10 on the GAMETES mixed
file (11 discrete 0/1/2 features, 9 continuous), with skrebate's argsort
made stable (ties to the lower row, as dmargin's; see tests/test_missing.py).
"""

import functools
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest

import dmargin
from tests.test_missing import ATOL, skrebate_scores

MIXED_FILE = (
    Path(__file__).resolve().parent
    / "data"
    / "gametes"
    / ("GAMETES_Epistasis_2-Way_mixed_attribute_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz")
)


@functools.cache
def gametes_mixed(n=300):
    frame = pd.read_csv(MIXED_FILE, sep="\t")
    rows = np.sort(np.random.default_rng(1).choice(len(frame), n, replace=False))
    features = frame.drop(columns="Class")
    return (
        features.to_numpy(dtype=float)[rows],
        frame["Class"].to_numpy()[rows],
        list(features.columns),
    )


@pytest.mark.parametrize("k", [1, 10])
def test_relieff_equals_skrebate_on_mixed_features(k, monkeypatch):
    X, y, _ = gametes_mixed()
    est = dmargin.ReliefF(n_neighbors=k, discrete_threshold=10).fit(X, y)
    peer = skrebate_scores("ReliefF", X, y, monkeypatch, n_neighbors=k)
    np.testing.assert_allclose(est.feature_importances_, peer, rtol=0, atol=ATOL)


def test_discrete_features_are_skrebates():
    X, y, names = gametes_mixed()
    continuous = {"N4", "N5", "N6", "N8", "N10", "N12", "N15", "M0P0", "M0P1"}  # data README
    est = dmargin.ReliefF(discrete_threshold=10).fit(X, y)
    assert est.discrete_features_.tolist() == [n not in continuous for n in names]
    assert not dmargin.ReliefF().fit(X, y).discrete_features_.any()  # the default: Weka's


def test_mixed_with_missing_values_equals_skrebate(monkeypatch):
    """Both at once: discrete mismatches then count 1 in a mean over the features present."""
    X, y, _ = gametes_mixed()
    X = X.copy()
    rng = np.random.default_rng(2)
    X[rng.random(X.shape) < 0.05] = np.nan
    for variant in ("ReliefF", "MultiSURF"):
        params = {"discrete_threshold": 10} if variant == "ReliefF" else {}
        est = getattr(dmargin, variant)(**params).fit(X, y)
        peer = skrebate_scores(
            variant, X, y, monkeypatch, **({"n_neighbors": 10} if variant == "ReliefF" else {})
        )
        np.testing.assert_allclose(
            est.feature_importances_, peer, rtol=0, atol=ATOL, err_msg=variant
        )


def test_threaded_dask_equals_in_process():
    X, y, _ = gametes_mixed()
    est = dmargin.ReliefF(discrete_threshold=10, n_anchors=50, random_state=0)
    expected = est.fit(X, y).feature_importances_
    with dask.config.set(scheduler="threads"):
        got = est.fit(
            da.from_array(X, chunks=(80, -1)), da.from_array(y, chunks=80)
        ).feature_importances_
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


def test_a_column_of_mostly_zeros_is_counted_as_a_whole_column_is():
    """Distinct values: a column's first rows decide only once they show more than the
    cap; a column of zeros for its first thousands of rows, or discrete all through,
    is counted exactly (its heads, 128 rows then 8 times more, cannot decide)."""
    from dmargin.engine import merge

    rng = np.random.default_rng(3)
    n = 20_000
    X = np.zeros((n, 5))
    X[5_000:, 0] = rng.normal(size=n - 5_000)  # continuous, zeros for 5,000 rows
    X[:, 1] = rng.integers(0, 10, size=n)  # 10 values: discrete at the cap
    X[:, 2] = rng.integers(0, 11, size=n)  # 11 values: one over the cap
    X[-1, 3] = 1.0  # two values, the second in the last row
    X[:, 4] = rng.normal(size=n)  # continuous from the first rows
    uniques, *_ = merge.column_summary_chunk(X, 10)
    counts = [11 if u is None else u.size for u in uniques]
    expected = [min(np.unique(X[:, j]).size, 11) for j in range(5)]
    assert counts == expected == [11, 10, 11, 2, 11]
    for j in (1, 3):
        np.testing.assert_array_equal(uniques[j], np.unique(X[:, j]))
