"""Missing values (NaN) in ReliefF, the SURF family and IRelief: skrebate 0.8.4's rule.

The rule (``dmargin/engine/kernels/distance.py``, skrebate's
``get_row_missing`` and ``compute_score``): a pair's distance is the sum of
the differences over the features present in both rows (a discrete
mismatch counts 1) divided by their number; scoring leaves a difference with
a missing side out of that feature's sum and neighbour counts.  Checked
against skrebate's own ``feature_importances_`` to 1e-10 on the GAMETES
missing-value file (a sample of rows, 9 % of the cells missing) and on wpbc
with its four '?' cells, and the same answer in-process, on threaded dask and
on a LocalCluster.

Two of skrebate's quirks are taken out of its run, not copied into dmargin:
``np.argsort``'s unstable order of tied distances (ReliefF on 0/1/2 genotypes
ties at every k; skrebate is run with a stable sort, i.e. ties to the lower
row as dmargin's) and, for SURF and SURF*, the distance matrix its missing
path leaves lower-triangular (zeros above the diagonal), which halves their
global mean threshold; skrebate is run with the symmetric matrix its
complete-data path builds.

IRelief (no peer has it with missing values) is checked against a
brute-force transcription of the rule, ``tests/reference_missing.py``.
"""

import functools
import types
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest

import dmargin

skrebate = pytest.importorskip("skrebate")
import skrebate.relieff as skrebate_relieff  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
GAMETES = DATA / "gametes"
MISSING_FILE = (
    "GAMETES_Epistasis_2-Way_missing_values_0.1_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz"
)
ATOL = 1e-10


@functools.cache
def gametes_missing(n=240):
    """A seeded sample of ``n`` rows of the GAMETES missing-value file (0/1/2, NaN)."""
    frame = pd.read_csv(GAMETES / MISSING_FILE, sep="\t")
    rows = np.sort(np.random.default_rng(0).choice(len(frame), n, replace=False))
    X = frame.drop(columns="Class").to_numpy(dtype=float)[rows]
    return X, frame["Class"].to_numpy()[rows]


@functools.cache
def wpbc():
    """wpbc: 198 x 33 (Time, 30 nuclear features, tumour size, lymph nodes with 4 '?')."""
    frame = pd.read_csv(DATA / "breast-cancer" / "wpbc.data", header=None, na_values="?")
    return frame.iloc[:, 2:].to_numpy(dtype=float), frame.iloc[:, 1].to_numpy()


def _stable_numpy():
    """numpy with a stable ``argsort``: skrebate's ReliefF then breaks ties by row."""
    module = types.ModuleType("numpy_stable_argsort")
    module.__dict__.update(vars(np))
    module.argsort = functools.partial(np.argsort, kind="stable")
    return module


def _symmetric_missing(original):
    def distarray(self, xc, xd, cdiffs):
        lower = original(self, xc, xd, cdiffs)
        return lower + lower.T

    return distarray


def skrebate_scores(variant, X, y, monkeypatch, **params):
    monkeypatch.setattr(skrebate_relieff, "np", _stable_numpy())
    monkeypatch.setattr(
        skrebate.ReliefF,
        "_distarray_missing",
        _symmetric_missing(skrebate.ReliefF._distarray_missing),
    )
    return getattr(skrebate, variant)(n_jobs=1, **params).fit(X.copy(), y).feature_importances_


def ours(variant, **params):
    if variant == "ReliefF":
        params = {"discrete_threshold": 10, **params}
    return getattr(dmargin, variant)(**params)


VARIANTS = ["ReliefF", "SURF", "SURFstar", "MultiSURF", "MultiSURFstar"]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("data", [gametes_missing, wpbc], ids=["gametes", "wpbc"])
def test_equals_skrebate_with_missing_values(variant, data, monkeypatch):
    X, y = data()
    assert np.isnan(X).any()
    est = ours(variant).fit(X, y)
    params = {"n_neighbors": 10} if variant == "ReliefF" else {}  # skrebate's default is 100
    peer = skrebate_scores(variant, X, y, monkeypatch, **params)
    np.testing.assert_allclose(est.feature_importances_, peer, rtol=0, atol=ATOL)


def test_relieff_neighbours_and_three_classes_follow_the_rule(monkeypatch):
    """k = 3 and a third class made from a third of the rows; skrebate's multiclass
    weighting of the misses differs from Weka's (dmargin's), so two classes are
    compared to skrebate and three to a direct evaluation of the rule."""
    X, y = gametes_missing()
    est = ours("ReliefF", n_neighbors=3).fit(X, y)
    peer = skrebate_scores("ReliefF", X, y, monkeypatch, n_neighbors=3)
    np.testing.assert_allclose(est.feature_importances_, peer, rtol=0, atol=ATOL)
    y3 = np.where(np.arange(len(y)) % 3 == 0, 2, y)
    np.testing.assert_allclose(
        ours("ReliefF", n_neighbors=3).fit(X, y3).feature_importances_,
        brute_relieff(X, y3, 3),
        rtol=0,
        atol=ATOL,
    )


def brute_relieff(X, y, k, anchors=None):
    """ReliefF on discrete 0/1/2 features with NaN, pair by pair: skrebate's distance,
    Weka's miss priors, per-feature neighbour counts; ``anchors``: the rows scored
    (every row by default), averaged."""
    n, a = X.shape
    classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    prior = counts / n
    present = ~np.isnan(X)
    W = np.zeros(a)
    anchors = range(n) if anchors is None else anchors
    for i in anchors:
        both = present[i] & present
        diff = (X[i] != X).astype(float)
        d = np.where(both, diff, 0.0).sum(axis=1) / both.sum(axis=1)
        d[i] = np.inf
        for c in range(len(classes)):
            members = np.flatnonzero((codes == c) & np.isfinite(d))
            near = members[np.lexsort((members, d[members]))][:k]
            valid = both[near]
            found = valid.sum(axis=0)
            mean = np.divide(
                np.where(valid, diff[near], 0.0).sum(axis=0),
                found,
                out=np.zeros(a),
                where=found > 0,
            )
            if c == codes[i]:
                W -= mean
            else:
                W += prior[c] / (1.0 - prior[codes[i]]) * mean
    return W / len(anchors)


def test_relieff_with_a_sample_of_anchors_follows_the_rule():
    X, y = gametes_missing()
    y3 = np.where(np.arange(len(y)) % 3 == 0, 2, y)
    est = ours("ReliefF", n_neighbors=5, n_anchors=50, random_state=4).fit(X, y3)
    np.testing.assert_allclose(
        est.feature_importances_, brute_relieff(X, y3, 5, est.anchor_indices_), rtol=0, atol=ATOL
    )


def test_distance_is_the_mean_over_the_features_present():
    """Rows that differ only where one of them is missing are at distance 0."""
    X = np.array(
        [
            [0.0, 1.0, np.nan],
            [0.0, 1.0, 2.0],
            [0.0, 2.0, 2.0],
            [1.0, 2.0, 0.0],
            [1.0, np.nan, 0.0],
            [1.0, 2.0, 1.0],
        ]
    )
    y = np.array([0, 0, 0, 1, 1, 1])
    est = dmargin.ReliefF(n_neighbors=1, discrete_threshold=10).fit(X, y)
    np.testing.assert_allclose(est.feature_importances_, brute_relieff(X, y, 1), atol=ATOL)
    assert est.discrete_features_.all()


@pytest.mark.parametrize("variant", ["ReliefF", "MultiSURF", "SURFstar"])
def test_threaded_dask_equals_in_process(variant):
    X, y = gametes_missing()
    params = {"n_anchors": 60, "random_state": 1} if variant == "SURFstar" else {}
    expected = ours(variant, **params).fit(X, y).feature_importances_
    with dask.config.set(scheduler="threads"):
        got = (
            ours(variant, **params)
            .fit(da.from_array(X, chunks=(70, -1)), da.from_array(y, chunks=70))
            .feature_importances_
        )
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


@pytest.mark.cluster
def test_cluster_equals_in_process(local_cluster):
    from distributed import Client

    X, y = wpbc()
    expected = {v: ours(v).fit(X, y).feature_importances_ for v in ("ReliefF", "MultiSURF")}
    with Client(local_cluster):
        for variant, weights in expected.items():
            got = (
                ours(variant)
                .fit(da.from_array(X, chunks=(50, -1)), da.from_array(y, chunks=50))
                .feature_importances_
            )
            np.testing.assert_allclose(got, weights, rtol=0, atol=ATOL, err_msg=variant)


def test_infinite_values_and_empty_columns_are_refused():
    X, y = gametes_missing()
    X = X.copy()
    X[5, 3] = np.inf
    with pytest.raises(ValueError, match="infinite values in column 3"):
        dmargin.ReliefF().fit(X, y)
    X[:, 3] = np.nan
    with pytest.raises(ValueError, match="Feature 3 has no value"):
        dmargin.MultiSURF().fit(X, y)


def test_dask_scaling_pass_reads_each_block_as_numpy_reads_the_whole():
    """The scaling pass takes each block's minima, maxima and counts in one task:
    a feature missing from a whole block, or whose extreme lies in another block,
    scales as in-process; values that are not finite are counted over every block."""
    X, y = gametes_missing()
    X = X.copy()
    X[:70, 2] = np.nan  # no value in the first block
    X[100, 4], X[200, 4] = -3.0, 7.0  # the range from two other blocks
    expected = dmargin.ReliefF().fit(X, y).feature_importances_
    with dask.config.set(scheduler="sync"):
        got = (
            dmargin.ReliefF()
            .fit(da.from_array(X, chunks=(70, -1)), da.from_array(y, chunks=70))
            .feature_importances_
        )
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)
    X[10, 3], X[150, 3], X[230, 3] = np.inf, -np.inf, np.nan
    blocks = da.from_array(X, chunks=(70, -1)), da.from_array(y, chunks=70)
    said = {}
    for make in (dmargin.ReliefF, dmargin.Relief):  # NaN missing; NaN refused
        for fit_X, fit_y in ((X, y), blocks):
            with pytest.raises(ValueError, match="infinite values in column") as error:
                make().fit(fit_X, fit_y)
            said.setdefault(make, set()).add(str(error.value))
    assert len(said[dmargin.ReliefF]) == len(said[dmargin.Relief]) == 1  # the same on both
    assert "infinite values in column 3 (2 rows). NaN" in said[dmargin.ReliefF].pop()
    bad = (~np.isfinite(X)).sum(axis=0)
    first = np.flatnonzero(bad)[0]
    assert f"column {first} ({bad[first]} rows)" in said[dmargin.Relief].pop()


@pytest.mark.parametrize(
    "make",
    [
        lambda: dmargin.Relief(),
        lambda: dmargin.Immigrate(max_iter=2),
        lambda: dmargin.SBSMF(1, n_estimators=5),
        lambda: dmargin.LDMRFE(1),
    ],
    ids=["Relief", "Immigrate", "SBSMF", "LDMRFE"],
)
def test_estimators_without_a_missing_value_rule_name_the_column_and_the_imputer(make):
    X, y = wpbc()
    with pytest.raises(ValueError, match=r"column 32 \(4 rows\).*SimpleImputer"):
        make().fit(X, y)


# ---------------------------------------------------------------------------
# I-RELIEF: the same differences, probabilities for counts (tests/reference_missing.py)
# ---------------------------------------------------------------------------


@functools.cache
def mixed_with_missing(n=90, classes=2):
    """GAMETES' mixed-attribute file (11 discrete, 9 continuous), 6 % NaN."""
    frame = pd.read_csv(
        GAMETES
        / ("GAMETES_Epistasis_2-Way_mixed_attribute_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz"),
        sep="\t",
    )
    rng = np.random.default_rng(3)
    rows = np.sort(rng.choice(len(frame), n, replace=False))
    X = frame.drop(columns="Class").to_numpy(dtype=float)[rows]
    X[rng.random(X.shape) < 0.06] = np.nan
    y = frame["Class"].to_numpy()[rows]
    if classes == 3:
        y = np.where(np.arange(n) % 3 == 0, 2, y)
    return X, y


@pytest.mark.parametrize(
    "classes,multiclass,outliers,nan",
    [
        (2, "margin", True, True),
        (3, "margin", True, True),
        (3, "relieff", False, True),
        (2, "margin", True, False),
        (3, "relieff", True, False),
    ],
)
def test_irelief_equals_the_brute_force_rule(classes, multiclass, outliers, nan):
    from tests import reference_missing as ref

    X, y = mixed_with_missing(classes=classes)
    if not nan:
        X = np.where(np.isnan(X), 1.0, X)
    est = dmargin.IRelief(
        discrete_threshold=10,
        max_iter=3,
        tol=0,
        sigma=0.5,
        multiclass=multiclass,
        outliers=outliers,
    ).fit(X, y)
    discrete = est.discrete_features_
    assert discrete.sum() == 11
    expected = ref.irelief(X, y, 0.5, 3, discrete, multiclass, outliers)
    np.testing.assert_allclose(est.feature_importances_, expected, rtol=0, atol=ATOL)


def test_irelief_threaded_dask_equals_in_process():
    X, y = mixed_with_missing()
    est = dmargin.IRelief(discrete_threshold=10, max_iter=3, tol=0, n_anchors=40, random_state=0)
    expected = est.fit(X, y).feature_importances_
    with dask.config.set(scheduler="threads"):
        got = est.fit(
            da.from_array(X, chunks=(25, -1)), da.from_array(y, chunks=25)
        ).feature_importances_
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize(
    "multiclass,outliers,threshold,nan",
    [
        ("margin", True, 0, True),
        ("relieff", False, 0, True),
        ("margin", True, 10, True),
        ("relieff", True, 10, False),
    ],
)
def test_online_irelief_equals_the_brute_force_rule(multiclass, outliers, threshold, nan):
    from tests import reference_missing as ref

    X, y = mixed_with_missing(n=60, classes=3)
    if not nan:
        X = np.where(np.isnan(X), 1.0, X)
    est = dmargin.OnlineIRelief(
        n_passes=2,
        tol=0,
        sigma=0.5,
        a=2.0,
        shuffle=False,
        block_size=25,
        multiclass=multiclass,
        outliers=outliers,
        discrete_threshold=threshold,
    ).fit(X, y)
    assert est.discrete_features_.sum() == (11 if threshold else 0)
    expected = ref.online_irelief(X, y, 0.5, 2.0, 2, outliers, multiclass, est.discrete_features_)
    np.testing.assert_allclose(est.feature_importances_, expected, rtol=0, atol=ATOL)
    if threshold:  # the same features found on dask rows
        with dask.config.set(scheduler="threads"):
            Xd = da.from_array(X, chunks=(20, -1))
            assert np.array_equal(
                dmargin.OnlineIRelief(discrete_threshold=threshold, n_passes=1)
                .fit(Xd, da.from_array(y, chunks=20))
                .discrete_features_,
                est.discrete_features_,
            )
    # partial_fit over chunks: the chunk's own rows as candidates, the same rule
    chunks = dmargin.OnlineIRelief(
        sigma=0.5, a=2.0, shuffle=False, multiclass=multiclass, outliers=outliers
    )
    chunks.partial_fit(X[:30], y[:30], classes=np.unique(y))
    chunks.partial_fit(X[30:], y[30:])
    assert np.all(np.isfinite(chunks.feature_importances_))


def test_online_stream_with_missing_reference_rows_resumes_exactly(tmp_path):
    """NaN in the reference rows and the discrete features (found on the first chunk)
    survive save_state / load_state; the resumed stream continues as the uninterrupted
    one."""
    X, y = mixed_with_missing(n=60)
    params = {"sigma": 0.5, "random_state": 0, "discrete_threshold": 10}
    whole = dmargin.OnlineIRelief(**params).set_reference(X[:20], y[:20])
    for lo in range(0, 60, 20):
        whole.partial_fit(X[lo : lo + 20], y[lo : lo + 20], classes=np.unique(y))
    part = dmargin.OnlineIRelief(**params).set_reference(X[:20], y[:20])
    part.partial_fit(X[:20], y[:20], classes=np.unique(y))
    part.save_state(tmp_path / "stream.npz")
    resumed = dmargin.OnlineIRelief.load_state(tmp_path / "stream.npz")
    for lo in range(20, 60, 20):
        resumed.partial_fit(X[lo : lo + 20], y[lo : lo + 20])
    assert np.isnan(X[:20]).any() and whole.discrete_features_.any()
    np.testing.assert_array_equal(resumed.discrete_features_, whole.discrete_features_)
    np.testing.assert_array_equal(resumed.feature_importances_, whole.feature_importances_)
