"""Inputs a hostile probe found mishandled: each one a test.

Permutations with a sample of anchors on dask rows, a fit inside a
``joblib`` dask task, the scale of ``feature_weights``, a label per row, a
p-value asked of a continuous target, the wrappers' parameter checks, seeds,
task keys of concurrent fits and NaN labels.
"""

from __future__ import annotations

import warnings

import dask
import dask.array as da
import numpy as np
import pytest

import dmargin


def _classes(n=300, a=6, k=2, seed=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.random((n, a))
    X[:, 1] += 0.5 * y
    return X, y


# -- permutations with anchors on several dask blocks ----------------------------------

@pytest.mark.parametrize("method", ["ReliefF", "MultiSURF"])
@pytest.mark.parametrize("chunks", [40, 77, 150])
def test_permutations_with_anchors_on_dask_equal_numpy(method, chunks):
    # The permuted labels' per-block class counts, not the original labels',
    # decide which rows the sample of anchors takes.
    X, y = _classes(n=300, k=3)
    make = getattr(dmargin, method)
    local = make(n_permutations=7, n_anchors=40, random_state=4).fit(X, y)
    with dask.config.set(scheduler="threads"):
        remote = make(n_permutations=7, n_anchors=40, random_state=4).fit(
            da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=chunks))
    np.testing.assert_allclose(remote.feature_importances_, local.feature_importances_,
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(remote.pvalues_, local.pvalues_, rtol=0, atol=1e-10)


def test_permutations_with_anchors_on_parquet_equal_numpy(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _classes(n=300, k=2)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(label=y)
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path, row_group_size=70)
    Xd, yd = dmargin.read_parquet(path, label="label")
    local = dmargin.ReliefF(n_permutations=7, n_anchors=50, random_state=2).fit(X, y)
    with dask.config.set(scheduler="threads"):
        remote = dmargin.ReliefF(n_permutations=7, n_anchors=50, random_state=2).fit(Xd, yd)
    np.testing.assert_allclose(remote.pvalues_, local.pvalues_, rtol=0, atol=1e-10)


def test_permuted_block_counts_are_the_permuted_labels(monkeypatch):
    from dmargin.engine import permute

    monkeypatch.setattr(permute, "SEGMENT", 16)
    rng = np.random.default_rng(1)
    per_segment = permute.segment_counts([30, 50, 20], 100, rng)
    bounds = [(0, 7), (7, 40), (40, 48), (48, 100)]
    labels = permute.labels_of(per_segment, 5, 0, 100)
    expected = [np.bincount(labels[a:b], minlength=3) for a, b in bounds]
    np.testing.assert_array_equal(permute.block_counts(per_segment, 5, bounds), expected)
