"""Regression targets: ReliefF with a continuous endpoint and RReliefF.

- ReliefF on a continuous y equals skrebate 0.8.4's ``ReliefF`` on GAMETES'
  continuous-endpoint file and on continuous data to 1e-10, and a
  brute-force transcription of skrebate's scan with every row or a sample of
  anchors; classification is untouched (``target_type_``).
- RReliefF equals a brute-force transcription of the 2003 paper's Fig. 3
  to 1e-10 (rank influence and constant influence, every row or a sample),
  and ranks the two features a target depends on first.
- Both give the in-process answer on threaded dask and on a LocalCluster.
- The command line ranks by a continuous label with RReliefF, ReliefF and the
  SURF family.
"""

import types
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import skrebate.relieff

import dmargin
from dmargin import ReliefF, RReliefF
from dmargin._start import start_fit
from dmargin.relief._regression import continuous_relieff_sum, hit_counts
from tests import reference_regression as ref

GAMETES = (
    Path(__file__).resolve().parent
    / "data"
    / "gametes"
    / "GAMETES_Epistasis_2-Way_continuous_endpoint_a_20s_1600her_0.4__maf_0.2_EDM-2_01"
    ".tsv.gz"
)
TOL = 1e-10


@pytest.fixture(scope="module")
def gametes():
    data = pd.read_csv(GAMETES, sep="\t")
    return data.drop(columns="Class").to_numpy(dtype=float), data["Class"].to_numpy()


@pytest.fixture
def stable_skrebate(monkeypatch):
    """skrebate with its distance sort made stable.

    skrebate orders each row's distances with ``np.argsort`` (quicksort):
    equal distances -- everywhere in 0/1/2 genotypes -- come out in an order
    of the sort's making.  The stable sort keeps skrebate's rule and breaks
    ties by the lower row index, as dmargin does (unpatched, the GAMETES
    weights differ by up to 7e-3 from any fixed tie rule).
    """
    numpy = types.ModuleType("numpy_stable_argsort")
    numpy.__dict__.update(np.__dict__)
    numpy.argsort = lambda a, *args, **kw: np.argsort(a, kind="stable")
    monkeypatch.setattr(skrebate.relieff, "np", numpy)


def skrebate_weights(X, y, k):
    """skrebate's ReliefF with every feature continuous (``categorical_threshold=1``:
    dmargin's ReliefF range-scales every feature; 0/1/2 genotypes would
    otherwise be skrebate's discrete features)."""
    return (
        skrebate.relieff.ReliefF(n_neighbors=k, categorical_threshold=1)
        .fit(X, y)
        .feature_importances_
    )


def heavy_tailed(n=160, a=6, seed=0, mixed=False):
    """Continuous features, a target with outliers: some anchors have fewer than
    k hits in all the data, and many need more than the first pass's rows."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, a))
    y = 3 * X[:, 0] - 2 * X[:, 1] * X[:, 2] + 0.3 * rng.standard_t(1.5, n)
    if mixed:  # two 0/1/2 columns and 5 % missing cells
        X[:, 3:5] = np.floor(3 * X[:, 3:5])
        X[rng.random(X.shape) < 0.05] = np.nan
    return X, y


# ---------------------------------------------------------------------------
# ReliefF with a continuous endpoint: skrebate's semantics
# ---------------------------------------------------------------------------


def test_gametes_continuous_endpoint_equals_skrebate(gametes, stable_skrebate):
    X, y = gametes
    est = ReliefF(n_neighbors=10).fit(X, y)
    assert est.target_type_ == "continuous"
    assert not hasattr(est, "classes_")
    np.testing.assert_allclose(
        est.feature_importances_, skrebate_weights(X, y, 10), atol=TOL, rtol=0
    )
    # The two epistatic SNPs (M0P0, M0P1: the last two columns) rank first.
    assert set(np.argsort(-est.feature_importances_)[:2]) == {18, 19}
    # One anchor has 6 other hits (< k): skrebate counts the anchor itself as a hit.
    hits, _ = hit_counts(y, np.arange(len(y)), est.hit_bound_)
    assert hits.min() == 6


def test_continuous_data_equals_unpatched_skrebate():
    """Continuous features: no tied distances, skrebate as it is."""
    X, y = heavy_tailed(n=150, a=5, seed=1)
    for k in (3, 10):
        np.testing.assert_allclose(
            ReliefF(n_neighbors=k).fit(X, y).feature_importances_,
            skrebate_weights(X, y, k),
            atol=TOL,
            rtol=0,
        )


@pytest.mark.parametrize("n_anchors", [None, 40])
@pytest.mark.parametrize("k", [1, 5, 12])
def test_continuous_relieff_equals_brute_force(k, n_anchors):
    X, y = heavy_tailed()
    est = ReliefF(n_neighbors=k, n_anchors=n_anchors, random_state=3).fit(X, y)
    expected = ref.relieff_continuous(X, y, k, est.anchor_indices_)
    np.testing.assert_allclose(est.feature_importances_, expected, atol=TOL, rtol=0)
    if n_anchors:
        assert est.anchor_indices_.size == n_anchors


def test_anchors_short_of_hits_are_scored_again():
    """The first pass's nearest rows miss some anchors' k hits; later passes with
    more rows (and the anchors' rows alone) complete them, exactly."""
    X, y = heavy_tailed()
    rows, y = start_fit(ReliefF(), X, y)[1:3]
    bound = np.std(y, ddof=1)
    hits, misses = hit_counts(y, np.arange(y.size), bound)
    assert (hits < 5).any()  # fewer than k hits among all rows
    total, passes = continuous_relieff_sum(rows, y, 5, bound)
    assert passes >= 3
    np.testing.assert_allclose(total / y.size, ref.relieff_continuous(X, y, 5), atol=TOL, rtol=0)


def test_hit_counts_equal_counting_every_pair():
    rng = np.random.default_rng(4)
    y = np.round(rng.normal(size=300), 1)  # ties, and differences on the bound
    for bound in (np.std(y, ddof=1), 0.1, 0.3):
        hits, misses = hit_counts(y, np.arange(y.size), bound)
        full = np.abs(y[:, None] - y[None, :]) < bound
        np.testing.assert_array_equal(hits, full.sum(axis=1) - 1)
        np.testing.assert_array_equal(misses, (~full).sum(axis=1))


def test_classification_labels_keep_classification():
    X, y = heavy_tailed()
    labels = (y > np.median(y)).astype(float)  # 0.0 / 1.0: binary, not continuous
    est = ReliefF(n_neighbors=5).fit(X, labels)
    assert est.target_type_ == "binary"
    np.testing.assert_array_equal(est.classes_, [0.0, 1.0])
    assert ReliefF().fit(X, np.digitize(y, [0, 1, 2])).target_type_ == "multiclass"
    # A classification fit after a continuous one: the classes are back.
    est = ReliefF(n_neighbors=5).fit(X, y).fit(X, labels)
    assert est.target_type_ == "binary" and est.classes_.size == 2


@pytest.mark.parametrize(
    "y",
    [
        np.arange(300) % 7,
        np.arange(300, dtype=np.uint8),  # many integer values: classes, not a target
        np.arange(300) % 2 == 0,
        (np.arange(600) % 3).reshape(300, 2),
        np.arange(300).reshape(300, 1),
        np.arange(300) / 7,
        np.arange(300) % 5 * 1.0,
        np.array(["a", "b"] * 150, dtype=object),
    ],
)
def test_the_target_kind_is_scikit_learns(y):
    """Integers skip ``type_of_target``'s passes; the answer is still its answer."""
    from sklearn.utils.multiclass import type_of_target

    from dmargin._validation import is_continuous

    assert is_continuous(y) == (type_of_target(y) == "continuous")


def test_continuous_permutation_pvalues():
    X, y = heavy_tailed(n=120)
    est = ReliefF(n_neighbors=5, n_permutations=19, random_state=0).fit(X, y)
    assert est.pvalues_.shape == (6,) and est.qvalues_.shape == (6,)
    assert not hasattr(est, "t_statistics_")
    # Feature 0 carries most of y: no permuted target reaches its weight.
    assert est.pvalues_[0] == pytest.approx(1 / 20)
    assert np.all((est.pvalues_ >= 1 / 20) & (est.pvalues_ <= 1))
    with pytest.raises(dmargin.PValuesUnavailableError, match="n_permutations=0"):
        ReliefF(n_neighbors=5).fit(X, y).pvalues_


def _gametes_X(name):
    return pd.read_csv(GAMETES.with_name(name), sep="\t").drop(columns="Class").to_numpy(float)


@pytest.mark.parametrize(
    "file, rows, n_discrete",
    [
        (GAMETES.name, None, 20),  # 0/1/2 genotypes: every feature discrete
        (
            "GAMETES_Epistasis_2-Way_mixed_attribute_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz",
            None,
            11,
        ),
        (
            "GAMETES_Epistasis_2-Way_missing_values_0.1_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz",
            300,
            20,
        ),  # 10 % NaN; skrebate's missing-value distances are slow: 300 rows
    ],
)
def test_discrete_mixed_and_missing_features_equal_skrebates_defaults(
    gametes, stable_skrebate, file, rows, n_discrete
):
    """skrebate's own defaults (``categorical_threshold=10``): the features of GAMETES'
    discrete, mixed and missing-value files with the continuous endpoint's target."""
    X, y = _gametes_X(file)[:rows], gametes[1][:rows]
    est = ReliefF(n_neighbors=10, discrete_threshold=10).fit(X, y)
    expected = skrebate.relieff.ReliefF(n_neighbors=10).fit(X, y).feature_importances_
    np.testing.assert_allclose(est.feature_importances_, expected, atol=TOL, rtol=0)
    assert est.discrete_features_.sum() == n_discrete


# ---------------------------------------------------------------------------
# RReliefF
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_anchors", [None, 50])
@pytest.mark.parametrize("k, sigma", [(70, 20.0), (10, 3.0), (7, None), (500, 20.0)])
def test_rrelieff_equals_brute_force(k, sigma, n_anchors):
    X, y = heavy_tailed()
    est = RReliefF(n_neighbors=k, sigma=sigma, n_anchors=n_anchors, random_state=1).fit(X, y)
    expected = ref.rrelieff(X, y, k, sigma, est.anchor_indices_)
    np.testing.assert_allclose(est.feature_importances_, expected, atol=TOL, rtol=0)


def test_rrelieff_ranks_the_features_the_target_depends_on():
    rng = np.random.default_rng(7)
    X = rng.random((400, 10))
    y = np.sin(3 * X[:, 2]) + 2 * (X[:, 7] - 0.5) ** 2 + 0.05 * rng.normal(size=400)
    w = RReliefF().fit(X, y).feature_importances_
    assert set(np.argsort(-w)[:2]) == {2, 7}
    assert np.all(np.delete(w, [2, 7]) < min(w[2], w[7]) / 3)
    w = RReliefF(n_anchors=100, random_state=0).fit(X, y).feature_importances_
    assert set(np.argsort(-w)[:2]) == {2, 7}


def test_rrelieff_integer_target_and_selection():
    X, y = heavy_tailed()
    est = RReliefF(n_neighbors=10, n_features_to_select=2).fit(X, np.round(y).astype(int))
    assert est.transform(X).shape == (X.shape[0], 2)
    assert (
        dmargin.fit_cost(RReliefF(), 10_000, 20).seconds
        == dmargin.fit_cost(ReliefF(), 10_000, 20).seconds
    )
    assert "m N A with m = 100" in str(dmargin.fit_cost(RReliefF(n_anchors=100), 10_000, 20))


@pytest.mark.parametrize(
    "y, match",
    [
        (np.array(["a", "b"] * 80), "numeric target"),
        (np.r_[np.nan, np.ones(159)], "missing \\(NaN\\) or infinite"),
        (np.ones(160), "constant"),
        (np.ones((160, 2)), "1d array"),
    ],
)
def test_rrelieff_bad_targets(y, match):
    X, _ = heavy_tailed()
    with pytest.raises(ValueError, match=match):
        RReliefF().fit(X, y)


# ---------------------------------------------------------------------------
# In-process = threaded dask = LocalCluster
# ---------------------------------------------------------------------------

MAKERS = [
    pytest.param(lambda: ReliefF(n_neighbors=5), id="ReliefF"),
    pytest.param(lambda: ReliefF(n_neighbors=5, discrete_threshold=3), id="ReliefF-mixed-nan"),
    pytest.param(
        lambda: ReliefF(n_neighbors=5, n_anchors=60, random_state=2), id="ReliefF-anchors"
    ),
    pytest.param(lambda: RReliefF(n_neighbors=20, sigma=5.0), id="RReliefF"),
    pytest.param(lambda: RReliefF(n_anchors=60, random_state=2), id="RReliefF-anchors"),
]


def _dask_inputs(X, y, kind):
    if kind == "array":
        return da.from_array(X, chunks=(40, -1)), da.from_array(y, chunks=40)
    import dask.dataframe as dd

    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["target"] = y
    ddf = dd.from_pandas(frame, npartitions=4)
    return ddf.drop(columns="target"), ddf["target"]


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("kind", ["array", "frame"])
def test_threaded_dask_equals_in_process(make, kind):
    X, y = heavy_tailed(mixed=getattr(make(), "discrete_threshold", 0) > 0)
    expected = make().fit(X, y)
    Xd, yd = _dask_inputs(X, y, kind)
    with dask.config.set(scheduler="threads"):
        got = make().fit(Xd, yd)
    np.testing.assert_allclose(
        got.feature_importances_, expected.feature_importances_, atol=TOL, rtol=0
    )
    np.testing.assert_array_equal(
        np.asarray(got.anchor_indices_ if got.anchor_indices_ is not None else []),
        np.asarray(expected.anchor_indices_ if expected.anchor_indices_ is not None else []),
    )


@pytest.mark.parametrize("make", MAKERS)
def test_cluster_equals_in_process(make, local_cluster):
    from distributed import Client

    X, y = heavy_tailed(mixed=getattr(make(), "discrete_threshold", 0) > 0)
    expected = make().fit(X, y)
    with Client(local_cluster):
        got = make().fit(*_dask_inputs(X, y, "array"))
    np.testing.assert_allclose(
        got.feature_importances_, expected.feature_importances_, atol=TOL, rtol=0
    )
    if expected.anchor_indices_ is not None:
        np.testing.assert_array_equal(got.anchor_indices_, expected.anchor_indices_)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, args, make",
    [
        (
            "rrelieff",
            ["--sigma", "5", "--n-neighbors", "30"],
            lambda: RReliefF(sigma=5.0, n_neighbors=30),
        ),
        ("relieff", ["--anchors", "150"], lambda: ReliefF(n_anchors=150, random_state=0)),
        ("surf", [], lambda: dmargin.SURF()),  # skrebate's continuous endpoint, as ReliefF's
        (
            "multisurf",
            ["--anchors", "150"],
            lambda: dmargin.MultiSURF(n_anchors=150, random_state=0),
        ),
    ],
)
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_cli_ranks_by_a_continuous_label(tmp_path, method, args, make, suffix):
    from dmargin.cli import main

    rng = np.random.default_rng(5)
    X = rng.random((200, 6))
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(6)])
    frame["target"] = np.sin(3 * X[:, 4]) + X[:, 1]
    data = tmp_path / f"data{suffix}"
    frame.to_csv(data, index=False) if suffix == ".csv" else frame.to_parquet(data)
    out = tmp_path / "rank.csv"
    assert (
        main(
            [
                "select",
                str(data),
                "--label",
                "target",
                "--method",
                method,
                *args,
                "--random-state",
                "0",
                "--out",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    table = pd.read_csv(out)
    assert set(table["feature"][:2]) == {"x1", "x4"}
    est = make().fit(X, frame["target"].to_numpy())
    np.testing.assert_allclose(
        table["score"], est.feature_importances_[table["index"]], atol=TOL, rtol=0
    )


def _counted_blocks(X, y, rows=40):
    """Dask ``X, y`` whose blocks come from one read task each (as a Parquet row
    group's), and a counter of those reads."""
    reads = []

    def read(start):
        reads.append(start)
        return X[start : start + rows], y[start : start + rows]

    parts = [dask.delayed(read, pure=True, nout=2)(s) for s in range(0, len(y), rows)]
    sizes = [min(rows, len(y) - s) for s in range(0, len(y), rows)]
    Xd = da.concatenate(
        [da.from_delayed(p[0], (n, X.shape[1]), X.dtype) for p, n in zip(parts, sizes)]
    )
    yd = da.concatenate([da.from_delayed(p[1], (n,), y.dtype) for p, n in zip(parts, sizes)])
    return Xd, yd, reads


@pytest.mark.parametrize(
    "make", [lambda: ReliefF(n_neighbors=10), dmargin.MultiSURF], ids=["ReliefF", "MultiSURF"]
)
def test_a_dask_target_is_told_from_labels_in_the_data_pass(make):
    """Whether a dask ``y`` is a continuous target is decided in the pass that
    reads the data for its scaling: a continuous target costs no more reads of
    the blocks than class labels (one pass, then the persisted rows), and
    gives the in-process scores."""
    X, y = heavy_tailed()
    labels = (y > np.median(y)).astype(np.float64)  # floats that are class labels
    counts = {}
    for name, target in (("continuous", y), ("classes", labels)):
        Xd, yd, reads = _counted_blocks(X, target)
        with dask.config.set(scheduler="synchronous"):
            got = make().fit(Xd, yd)
        counts[name] = len(reads)
        expected = make().fit(X, target)
        assert got.target_type_ == expected.target_type_
        np.testing.assert_allclose(
            got.feature_importances_, expected.feature_importances_, atol=TOL, rtol=0
        )
    n_blocks = -(-len(y) // 40)
    assert counts["continuous"] == counts["classes"] == 2 * n_blocks
