"""Compact genotype rows (uint8) through the SURF family.

Integer input whose features are all discrete, with values in [0, 255], stays
bytes from the user's array to the kernels (bit planes for the distances,
bytes for the sums):

- the same scores as the float64 path (the same rows given as float64) to
  1e-12 for SURF, SURF*, MultiSURF and MultiSURF*, every row and a sample of
  anchors, serial and threaded kernels, several tiles of anchors;
- equal to the brute-force reference (``tests/reference_surf.py``) and to
  skrebate 0.8.4's MultiSURF on GAMETES genotypes (2 and 3 classes);
- dask arrays (uint8 or wider integers) are converted block by block and give
  the same scores;
- continuous, mixed, negative or wider-than-a-byte integer data keep the
  float64 path (``compact_dtype_`` is ``None``);
- no float64 copy of ``X`` is made (numpy's allocations traced);
- float32 input (numpy, pandas, dask) stays float32 rows, which the kernels
  read in float64: the same scores as the float64 path on the same values to
  1e-12 (every variant, missing values and mixed data included), within the
  rounding of the scaled rows to float32 of the float64 fit (1e-5).
"""

import tracemalloc
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest

import dmargin
import dmargin.engine._numba as numba_policy
from dmargin.engine import thresholds
from dmargin.engine.kernels.distance import pack_planes
from tests import reference_surf as ref

VARIANTS = ["SURF", "SURFstar", "MultiSURF", "MultiSURFstar"]
GAMETES = str(Path(__file__).resolve().parent / "data" / "gametes") + "/"
ATOL = 1e-12


def genotypes(n=90, a=70, k=3, seed=0, values=3):
    """Hardy-Weinberg genotypes 0/1/2 (or ``values`` codes), ``k`` classes, two
    features that carry the class."""
    rng = np.random.default_rng(seed)
    maf = rng.uniform(0.05, 0.5, a)
    X = rng.binomial(values - 1, maf, size=(n, a)).astype(np.uint8)
    y = rng.integers(0, k, n)
    X[:, 3] = np.minimum(y, values - 1)
    X[:, 7] = (y + X[:, 9]) % values
    return X, y


def _gametes(name, label, n, seed=0):
    frame = pd.read_csv(GAMETES + name, sep="\t").sample(n, random_state=seed)
    return frame.drop(columns=label).to_numpy(np.int64), frame[label].to_numpy()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("k", [2, 3])
def test_equals_float64_path_and_reference(variant, k):
    X, y = genotypes(k=k, seed=k)
    est = getattr(dmargin, variant)().fit(X, y)
    dense = getattr(dmargin, variant)().fit(X.astype(np.float64), y)
    assert est.compact_dtype_ == np.uint8 and dense.compact_dtype_ is None
    np.testing.assert_allclose(
        est.feature_importances_, dense.feature_importances_, rtol=0, atol=ATOL
    )
    np.testing.assert_allclose(
        est.feature_importances_, ref.surf_family(X, y, variant), rtol=0, atol=1e-10
    )
    assert est.discrete_features_.all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_sample_of_anchors(variant):
    X, y = genotypes(n=80, a=50, seed=5)
    est = getattr(dmargin, variant)(n_anchors=25, random_state=3).fit(X, y)
    dense = getattr(dmargin, variant)(n_anchors=25, random_state=3).fit(X.astype(float), y)
    assert est.compact_dtype_ == np.uint8
    np.testing.assert_array_equal(est.anchor_indices_, dense.anchor_indices_)
    np.testing.assert_allclose(
        est.feature_importances_, dense.feature_importances_, rtol=0, atol=ATOL
    )
    expected = ref.surf_family(X, y, variant, anchors=est.anchor_indices_)
    np.testing.assert_allclose(est.feature_importances_, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("variant", ["MultiSURF", "SURFstar", "MultiSURFstar"])
def test_threads_and_tiles(variant, monkeypatch):
    """Threaded twins, and many small tiles of pass 2 (each reduced on its own)."""
    X, y = genotypes(n=70, a=300, seed=11, values=5)
    expected = ref.surf_family(X, y, variant)
    monkeypatch.setattr(numba_policy, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(thresholds, "COMPACT_TILE_BYTES", 8 * 3 * 2 * 301 * 6)
    est = getattr(dmargin, variant)().fit(X, y)
    assert est.compact_dtype_ == np.uint8
    np.testing.assert_allclose(est.feature_importances_, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("bits", [1, 2, 3, 8])
def test_bit_planes_count_mismatches(bits):
    """Every value width: the mismatch counts of all pairs, features not a multiple of 64."""
    rng = np.random.default_rng(bits)
    X = rng.integers(0, 2**bits, size=(13, 130)).astype(np.uint8)
    X[4] = X[2]  # a pair with no mismatch
    planes = pack_planes(X, bits)
    assert planes.shape == (13, 3, bits)
    from dmargin.engine.kernels import compact

    moments = compact.COMPACT_MOMENTS_TWINS[0](planes, np.arange(13))
    D = (X[:, None, :] != X[None, :, :]).sum(axis=2).astype(np.float64)
    np.testing.assert_array_equal(moments[:, 0], 12.0)
    np.testing.assert_array_equal(moments[:, 1], D.sum(axis=1))
    np.testing.assert_array_equal(moments[:, 2], (D**2).sum(axis=1))


@pytest.mark.parametrize(
    "name,label",
    [
        ("GAMETES_Epistasis_2-Way_20atts_0.4H_EDM-1_1.tsv.gz", "class"),
        ("3Class_Datasets_Loc_2_01.txt", "Class"),
    ],
)
def test_skrebate_multisurf_on_genotypes(name, label):
    skrebate = pytest.importorskip("skrebate")
    X, y = _gametes(name, label, 150)
    est = dmargin.MultiSURF().fit(X, y)  # int64 0/1/2: bytes
    assert est.compact_dtype_ == np.uint8
    expected = skrebate.MultiSURF(n_jobs=1).fit(X.astype(np.float64), y).feature_importances_
    np.testing.assert_allclose(est.feature_importances_, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.bool_])
def test_dask_blocks(dtype):
    X, y = genotypes(n=75, a=40, seed=2, values=2 if dtype is np.bool_ else 3)
    X = X.astype(dtype)
    expected = dmargin.MultiSURFstar().fit(X.astype(np.float64), y).feature_importances_
    Xd, yd = da.from_array(X, chunks=(20, 40)), da.from_array(y, chunks=20)
    est = dmargin.MultiSURFstar().fit(Xd, yd)
    assert est.compact_dtype_ == np.uint8
    np.testing.assert_allclose(est.feature_importances_, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize("variant", ["MultiSURF", "SURF"])
def test_dask_sample_of_anchors_and_local_cluster(variant, client):
    """Workers of a LocalCluster convert and hold the byte blocks; a sample of anchors
    scores against them."""
    X, y = genotypes(n=70, a=30, seed=13)
    Xd, yd = da.from_array(X.astype(np.int16), chunks=(25, 30)), da.from_array(y, chunks=25)
    for params in ({}, {"n_anchors": 20, "random_state": 1}):
        est = getattr(dmargin, variant)(**params).fit(Xd, yd)
        dense = getattr(dmargin, variant)(**params).fit(X.astype(np.float64), y)
        assert est.compact_dtype_ == np.uint8
        np.testing.assert_array_equal(est.anchor_indices_ is None, dense.anchor_indices_ is None)
        np.testing.assert_allclose(
            est.feature_importances_, dense.feature_importances_, rtol=0, atol=ATOL
        )


def test_dask_rows_stay_bytes(monkeypatch):
    """The persisted blocks the kernels read are uint8."""
    seen = _row_dtypes(monkeypatch)
    X, y = genotypes(n=60, a=30, seed=4)
    dmargin.MultiSURF().fit(
        da.from_array(X.astype(np.int32), chunks=(20, 30)), da.from_array(y, chunks=20)
    )
    assert seen and all(d == np.uint8 for d in seen)


@pytest.mark.parametrize(
    "case", ["float", "negative", "wide", "continuous", "mixed", "threshold-0"]
)
def test_other_data_keep_the_float64_path(case):
    X, y = genotypes(n=60, a=20, seed=6)
    X = X.astype(np.int64)
    params = {}
    if case == "float":
        X = X.astype(np.float64)
    elif case == "negative":
        X[0, 0] = -1
    elif case == "wide":
        X[0, 0] = 256
    elif case == "continuous":  # integers with more than 10 distinct values: continuous
        X = np.random.default_rng(0).integers(0, 60, size=X.shape)
    elif case == "mixed":
        X[:, 0] = np.arange(60) % 30
    else:
        params["discrete_threshold"] = 0
    est = dmargin.MultiSURF(**params).fit(X, y)
    assert est.compact_dtype_ is None
    expected = ref.surf_family(X, y, "MultiSURF", **params)
    np.testing.assert_allclose(est.feature_importances_, expected, rtol=0, atol=1e-10)


def test_pandas_integer_frame():
    X, y = genotypes(n=50, a=12, seed=8)
    frame = pd.DataFrame(X.astype(np.int16), columns=[f"snp{i}" for i in range(12)])
    est = dmargin.MultiSURF(n_features_to_select=3).fit(frame, y)
    assert est.compact_dtype_ == np.uint8
    assert list(est.feature_names_in_) == list(frame.columns) and est.n_features_in_ == 12
    expected = dmargin.MultiSURF().fit(X.astype(float), y).feature_importances_
    np.testing.assert_allclose(est.feature_importances_, expected, rtol=0, atol=ATOL)
    assert est.transform(frame).shape == (50, 3)


def test_bad_labels_same_error():
    X, y = genotypes(n=30, a=10)
    with pytest.raises(ValueError, match="rows but y has"):
        dmargin.MultiSURF().fit(X, y[:-1])


def test_no_float64_copy_of_X(monkeypatch):
    """A fit's numpy allocations stay far below a float64 copy of X (8 bytes a value)."""
    X, y = genotypes(n=100, a=60_000, seed=9)
    monkeypatch.setattr(thresholds, "COMPACT_TILE_BYTES", 4 * 2**20)
    dmargin.MultiSURF().fit(X[:10, :100], y[:10])  # imports and compilation outside the trace
    tracemalloc.start()
    try:
        est = dmargin.MultiSURF().fit(X, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert est.compact_dtype_ == np.uint8
    # X as float64 alone would be 8 * X.nbytes; the bit planes, one tile of partials
    # and its reduction take a few bytes a value.
    assert peak < 4 * X.nbytes, peak


def test_few_distinct_large_codes():
    """Codes up to 255 with few distinct values per feature are discrete: compact."""
    X, y = genotypes(n=60, a=25, seed=12)
    X = np.array([7, 130, 255], dtype=np.uint8)[X]
    est = dmargin.MultiSURFstar().fit(X, y)
    assert est.compact_dtype_ == np.uint8 and est.discrete_features_.all()
    np.testing.assert_allclose(
        est.feature_importances_, ref.surf_family(X, y, "MultiSURFstar"), rtol=0, atol=1e-10
    )


def test_too_many_features_to_select_warns_once():
    X, y = genotypes(n=40, a=12, seed=14)
    with pytest.warns(UserWarning, match="n_features_to_select=50 exceeds the 12 features") as rec:
        est = dmargin.MultiSURF(n_features_to_select=50).fit(X, y)
    assert est.compact_dtype_ == np.uint8 and len(rec) == 1
    assert est.transform(X).shape == (40, 12)


# ---------------------------------------------------------------------------
# Float32 rows: float32 input stays float32, the kernels compute in float64
# ---------------------------------------------------------------------------


def _continuous(n=120, a=9, seed=13):
    rng = np.random.default_rng(seed)
    X = rng.random((n, a)).astype(np.float32)
    y = rng.integers(0, 2, n)
    X[:, 1] += 0.4 * y
    X[:, 4] = rng.integers(0, 3, n)  # discrete: mixed data (ramps, weighted mismatches)
    return X, y


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("missing", [False, True])
def test_float32_rows_equal_the_float64_path_on_the_same_values(variant, missing):
    X, y = _continuous()
    if missing:
        X[::7, 2] = np.nan
    cls = getattr(dmargin, variant)
    for n_anchors in (None, 40):
        single = cls(scale=None, n_anchors=n_anchors, random_state=0).fit(X, y)
        double = cls(scale=None, n_anchors=n_anchors, random_state=0).fit(X.astype(np.float64), y)
        assert single.compact_dtype_ == np.float32 and double.compact_dtype_ is None
        np.testing.assert_allclose(
            single.feature_importances_, double.feature_importances_, rtol=1e-12, atol=1e-15
        )


def _row_dtypes(monkeypatch):
    """The dtypes of the row blocks pass 1's tiles read, as they are read."""
    seen = []
    original = thresholds._pair_moments

    def spy(Xp, *args):
        seen.append(Xp.dtype)
        return original(Xp, *args)

    monkeypatch.setattr(thresholds, "_pair_moments", spy)
    return seen


def test_float32_rows_scaled_in_float64_and_rounded_once(monkeypatch, stir_everywhere):
    X, y = _continuous(seed=14)
    seen = _row_dtypes(monkeypatch)
    single = dmargin.MultiSURF(pvalues=True).fit(X, y)
    double = dmargin.MultiSURF(pvalues=True).fit(X.astype(np.float64), y)
    assert seen and all(d == np.float32 for d in seen[: len(seen) // 2])  # the float32 fit
    # The scaled rows differ by their rounding to float32: measured 1.6e-7 relative.
    np.testing.assert_allclose(single.feature_importances_, double.feature_importances_, rtol=1e-5)
    np.testing.assert_allclose(single.pvalues_, double.pvalues_, rtol=1e-4)


def test_float32_dask_rows_stay_float32(monkeypatch, stir_everywhere):
    X, y = _continuous(seed=15)
    seen = _row_dtypes(monkeypatch)
    remote = dmargin.MultiSURF(pvalues=True, discrete_threshold=0).fit(
        da.from_array(X, chunks=(40, 9)), y
    )
    assert seen and all(d == np.float32 for d in seen) and remote.compact_dtype_ == np.float32
    local = dmargin.MultiSURF(pvalues=True, discrete_threshold=0).fit(X, y)
    for name in ("feature_importances_", "pvalues_"):
        np.testing.assert_allclose(
            getattr(remote, name), getattr(local, name), rtol=1e-10, atol=1e-14
        )


def test_float32_pandas_frame_and_what_keeps_float64():
    X, y = _continuous(seed=16)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(9)])
    assert dmargin.MultiSURF().fit(frame, y).compact_dtype_ == np.float32
    mixed = frame.astype({"f0": np.float64})  # not every column float32: float64 rows
    assert dmargin.MultiSURF().fit(mixed, y).compact_dtype_ is None
    target = X[:, 0].astype(np.float64) + 0.25  # a continuous target: the float64 path
    assert dmargin.MultiSURF().fit(X, target).compact_dtype_ is None
