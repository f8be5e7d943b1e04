"""``tests/skrebate_reference.py`` against skrebate 0.8.4's own output (1e-10).

SWRF, SWRF*, MultiSWRF, MultiSWRF*, MultiSWRFDB, MultiSWRFDB* and MuRelief on slices
of the real data in ``tests/data`` (GAMETES: discrete, 3 classes, continuous
endpoint, missing values, mixed; wpbc: continuous with missing values, binary and a
continuous target) and on synthetic data (corner rows, a one-sample class, pairs with
no feature in common); skrebate's options (``label_type``, ``multiclass_threshold``,
``categorical_threshold``, ``categorical_features``, ``n_neighbors``,
``rank_absolute``); feature weights (the weighted distance, ``weight_final_scores``,
the failures); the Iter and VLS wrappers with a fixed seed.  Each comparison also
checks that the scores are not trivially zero, so that every test can fail.
"""

import functools
import random
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests import skrebate_reference as ref

skrebate = pytest.importorskip("skrebate")

DATA = Path(__file__).resolve().parent / "data"
GAMETES = DATA / "gametes"
ATOL = 1e-10

REFERENCE = {
    "SWRF": ref.swrf,
    "SWRFstar": ref.swrf_star,
    "MultiSWRF": ref.multiswrf,
    "MultiSWRFstar": ref.multiswrf_star,
    "MultiSWRFDB": ref.multiswrfdb,
    "MultiSWRFDBstar": ref.multiswrfdb_star,
    "MuRelief": ref.murelief,
}
ESTIMATORS = list(REFERENCE)


# ----------------------------------------------------------------------------------
# Data


def _gametes(name, label, n, seed=0):
    frame = pd.read_csv(GAMETES / name, sep="\t").sample(n, random_state=seed)
    return frame.drop(columns=label).to_numpy(np.float64), frame[label].to_numpy()


def _wpbc():
    frame = pd.read_csv(DATA / "breast-cancer" / "wpbc.data", header=None, na_values="?")
    rows = sorted(set(range(0, len(frame), 3)) | set(np.flatnonzero(frame.isna().any(axis=1))))
    return frame.iloc[rows]  # 69 rows, the 4 with a missing lymph-node count among them


def _synthetic(kind):
    rng = np.random.default_rng(7)
    n = 50
    if kind == "corners":  # continuous + a constant feature (-> discrete: mixed), dups
        y = np.repeat([0, 1], n // 2)
        X = rng.normal(size=(n, 5))
        X[:, 0] += 1.5 * y
        X = np.column_stack([X, np.full(n, 0.5)])
        X[10] = X[11]  # duplicate rows, one class
        X[20] = X[40]  # and across classes
        return X, y
    if kind == "continuous-multiclass":
        y = rng.integers(0, 3, n)
        X = rng.normal(size=(n, 5))
        X[:, 1] += y
        return X, y
    if kind == "one-sample-class":  # mixed, string labels, a class of one sample
        y = np.array(["a"] * 20 + ["b"] * 18 + ["c"] * 11 + ["d"])
        X = np.column_stack([rng.integers(0, 3, size=(n, 2)), rng.normal(size=(n, 3))])
        X[:, 2] += (y == "b") * 2.0
        return X.astype(float), y
    if kind in ("missing-multiclass", "missing-continuous-target"):
        X = np.column_stack([rng.integers(0, 3, size=(n, 3)), rng.normal(size=(n, 3))])
        y = rng.integers(0, 3, n) if kind == "missing-multiclass" else rng.normal(size=n)
        X = X.astype(float)
        X[rng.random(X.shape) < 0.15] = np.nan
        return X, y
    if kind == "nan-pairs":  # rows observing disjoint features: NaN distances
        X = np.column_stack([rng.integers(0, 3, size=(n, 2)), rng.normal(size=(n, 1))])
        X[:10, 0:2] = np.nan  # observe feature 2 only
        X[10:20, 2] = np.nan  # observe features 0, 1 only
        return X, rng.integers(0, 2, n)
    raise KeyError(kind)


@functools.lru_cache
def dataset(name):
    """``(X, y)``: small slices, each fit by skrebate in well under a second."""
    if name == "gametes":  # 20 SNPs 0/1/2, binary
        return _gametes("GAMETES_Epistasis_2-Way_20atts_0.4H_EDM-1_1.tsv.gz", "class", 80)
    if name == "gametes-3class":
        return _gametes("3Class_Datasets_Loc_2_01.txt", "Class", 60, seed=2)
    if name == "gametes-continuous-endpoint":
        return _gametes(
            "GAMETES_Epistasis_2-Way_continuous_endpoint_a_20s_1600her_0.4__"
            "maf_0.2_EDM-2_01.tsv.gz",
            "Class",
            60,
        )
    if name == "gametes-missing":
        return _gametes(
            "GAMETES_Epistasis_2-Way_missing_values_0.1_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz",
            "Class",
            60,
        )
    if name == "gametes-mixed":  # 11 discrete, 9 continuous
        return _gametes(
            "GAMETES_Epistasis_2-Way_mixed_attribute_a_20s_1600her_0.4__maf_0.2_EDM-2_01.tsv.gz",
            "Class",
            60,
        )
    if name == "wpbc":  # 33 continuous features with NaN, N/R
        frame = _wpbc()
        return frame.iloc[:, 2:].to_numpy(np.float64), frame.iloc[:, 1].to_numpy()
    if name == "wpbc-time":  # recurrence time as a continuous target
        frame = _wpbc()
        return frame.iloc[:, 3:].to_numpy(np.float64), frame.iloc[:, 2].to_numpy(np.float64)
    return _synthetic(name)


REAL = [
    "gametes",
    "gametes-3class",
    "gametes-continuous-endpoint",
    "gametes-missing",
    "gametes-mixed",
    "wpbc",
    "wpbc-time",
]
SYNTHETIC = [
    "corners",
    "continuous-multiclass",
    "one-sample-class",
    "missing-multiclass",
    "missing-continuous-target",
    "nan-pairs",
]


# ----------------------------------------------------------------------------------
# Helpers


def skrebate_fit(estimator, X, y, weights=None, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # skrebate's 0/0 on NaN pairs
        model = getattr(skrebate, estimator)(n_jobs=1, **params)
        if weights is None:
            return model.fit(X.copy(), y)
        return model.fit(X.copy(), y, weights=weights)


def reference_fit(estimator, X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return REFERENCE[estimator](X, y, **params)


def assert_same_fit(ours, theirs):
    """Scores to 1e-10; the ranking equal where the scores leave no tie."""
    peer = np.asarray(theirs.feature_importances_)
    assert np.abs(peer).max() > 1e-6, "degenerate case: all scores ~0"
    np.testing.assert_allclose(ours.feature_importances_, peer, rtol=0, atol=ATOL)
    key = np.sort(np.abs(peer) if _rank_absolute(theirs) else peer)
    if np.diff(key).min() > 1e-9:
        np.testing.assert_array_equal(ours.top_features_, theirs.top_features_)
    else:  # ties: skrebate's order must be non-increasing in our scores
        ours_key = ours.feature_importances_
        if _rank_absolute(theirs):
            ours_key = np.abs(ours_key)
        assert np.all(np.diff(ours_key[theirs.top_features_]) <= ATOL)


def _rank_absolute(model):
    return bool(getattr(model, "rank_absolute", False))


def _params(estimator):
    return {"n_neighbors": 10} if estimator == "MuRelief" else {}


# ----------------------------------------------------------------------------------
# The estimators on real and synthetic data


@pytest.mark.parametrize("name", REAL + SYNTHETIC)
@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_equals_skrebate(estimator, name):
    X, y = dataset(name)
    params = _params(estimator)
    assert_same_fit(
        reference_fit(estimator, X, y, **params), skrebate_fit(estimator, X, y, **params)
    )


def test_the_data_cover_skrebates_branches():
    """The fixtures reach every kind of data, target and distance the reference has."""
    seen = set()
    for name in REAL + SYNTHETIC:
        X, y = dataset(name)
        data = ref._Data(X, y, None, 10, 10, None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _, has_nan = ref.distance_array(data)
        seen |= {
            data.data_type,
            data.class_type,
            ("missing", data.has_missing),
            ("nan-distance", has_nan),
        }
    assert seen >= {
        "categorical",
        "continuous",
        "mixed",
        "binary",
        "multiclass",
        ("missing", True),
        ("missing", False),
        ("nan-distance", True),
    }


def test_knife_edge_follows_numpy_rounding():
    """Accident 14: on this GAMETES slice a row lies exactly at an anchor's mean distance
    (k/p with sum k = (N-1) k), and np.mean's rounding puts it on the near side; the
    reference keeps that (the equality tests above), an exact comparison would not."""
    X, _ = dataset("gametes")
    n, p = X.shape
    K = (X[:, None, :] != X[None, :, :]).sum(-1)
    flipped = 0
    for i in range(n):
        k = np.delete(K[i], i)
        at_mean = k * (n - 1) == k.sum()
        flipped += np.count_nonzero(at_mean & (k / p < np.mean(k / p)))
    assert flipped > 0


def _exact_distances(n, seed):
    """4 binary features, n rows: distances k/4 and (n = 8: N^2 = 64; n = 9: N-1 = 8)
    means that are exact binary fractions, so rows lie exactly at the thresholds."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2, size=(n, 4)).astype(float), rng.integers(0, 2, n)


@pytest.mark.parametrize(
    "estimator,n,seed", [("SWRFstar", 8, 44), ("MultiSWRFstar", 9, 3), ("MuRelief", 9, 3)]
)
def test_rows_exactly_at_the_threshold(estimator, n, seed):
    """Accidents 11 and 14: strict ``<`` / ``>`` (a row at the mean is neither near nor
    far) and MuRelief's tied keys at the ``n_neighbors`` cut."""
    X, y = _exact_distances(n, seed)
    D = (X[:, None, :] != X[None, :, :]).sum(-1) / 4
    off = ~np.eye(n, dtype=bool)
    if estimator == "SWRFstar":
        assert np.count_nonzero(D[off] == D.mean()) > 0
    else:
        rows = [np.delete(D[i], i) for i in range(n)]
        assert sum(np.count_nonzero(r == np.mean(r)) for r in rows) > 0
    params = {"n_neighbors": 2} if estimator == "MuRelief" else {}
    assert_same_fit(
        reference_fit(estimator, X, y, **params), skrebate_fit(estimator, X, y, **params)
    )


# ----------------------------------------------------------------------------------
# Options

OPTIONS = [
    ("gametes-3class", {"label_type": "continuous"}),  # labels_std = 0 (accident 8)
    ("gametes-3class", {"multiclass_threshold": 2}),  # continuous, labels_std = 0
    ("gametes", {"label_type": "multiclass"}),  # 2 classes scored as multiclass
    ("gametes-mixed", {"categorical_threshold": 2}),  # 0/1/2 SNPs become continuous
    ("continuous-multiclass", {"categorical_features": [0, 2]}),
    ("wpbc-time", {"categorical_threshold": 40}),  # few-valued features discrete
]


@pytest.mark.parametrize("estimator", ["SWRFstar", "MultiSWRFDBstar", "MuRelief"])
@pytest.mark.parametrize("name,options", OPTIONS, ids=[f"{n}-{next(iter(o))}" for n, o in OPTIONS])
def test_options_equal_skrebate(estimator, name, options):
    X, y = dataset(name)
    params = {**_params(estimator), **options}
    assert_same_fit(
        reference_fit(estimator, X, y, **params), skrebate_fit(estimator, X, y, **params)
    )


@pytest.mark.parametrize("n_neighbors", [100, 0.3, 3])
def test_murelief_neighbour_counts(n_neighbors):
    """Default 100 (>= every class: the anchor itself is taken, accident 9), a fraction,
    and a small k where ties at the cut follow argsort (accident 11)."""
    X, y = dataset("gametes-3class")
    assert_same_fit(
        reference_fit("MuRelief", X, y, n_neighbors=n_neighbors),
        skrebate_fit("MuRelief", X, y, n_neighbors=n_neighbors),
    )


def test_murelief_takes_the_anchor_itself():
    """Accident 9: with n_neighbors >= class size every row is taken, the anchor too."""
    X, y = dataset("gametes")
    data = ref._Data(X, y, None, 10, 10, None)
    D, has_nan = ref.distance_array(data)
    nn = ref.murelief_neighbours(data, ref._pair_lookup(D), has_nan, 0, 100)
    assert 0 in nn and len(nn) == len(y)


@pytest.mark.parametrize("estimator", ["SWRFstar", "MultiSWRFDBstar"])
def test_rank_absolute_equals_skrebate(estimator):
    X, y = dataset("gametes-mixed")
    ours = reference_fit(estimator, X, y, rank_absolute=True)
    assert_same_fit(ours, skrebate_fit(estimator, X, y, rank_absolute=True))
    # the option matters here (negative scores), so the check can fail
    assert not np.array_equal(ours.top_features_, reference_fit(estimator, X, y).top_features_)


# ----------------------------------------------------------------------------------
# Feature weights


def _weights(p, seed=3):
    return np.random.default_rng(seed).uniform(0.05, 1.0, p)


@pytest.mark.parametrize(
    "name,weight_final_scores",
    [
        ("gametes", False),
        ("gametes", True),
        ("continuous-multiclass", False),
        ("gametes-missing", True),
        ("wpbc", False),
    ],
)
@pytest.mark.parametrize("estimator", ["SWRFstar", "MultiSWRFDBstar", "MuRelief"])
def test_weighted_distance_equals_skrebate(estimator, name, weight_final_scores):
    X, y = dataset(name)
    w = _weights(X.shape[1])
    params = {**_params(estimator), "weight_final_scores": weight_final_scores}
    ours = reference_fit(estimator, X, y, weights=w, **params)
    assert_same_fit(ours, skrebate_fit(estimator, X, y, weights=w, **params))
    unweighted = reference_fit(estimator, X, y, **params).feature_importances_
    assert np.abs(ours.feature_importances_ - unweighted).max() > 1e-6


@pytest.mark.parametrize("name", ["gametes-mixed", "missing-multiclass"])
def test_weights_fail_on_mixed_data(name):
    """Accident 7: skrebate raises; so does the reference."""
    X, y = dataset(name)
    w = _weights(X.shape[1])
    with pytest.raises(ValueError):
        skrebate_fit("SWRF", X, y, weights=w)
    with pytest.raises(ValueError):
        reference_fit("SWRF", X, y, weights=w)


def test_weights_as_a_list_are_ignored():
    """Accident 7: a list is silently ignored (an ndarray is not)."""
    X, y = dataset("gametes")
    w = _weights(X.shape[1])
    as_list = skrebate_fit("MultiSWRF", X, y, weights=list(w))
    assert_same_fit(reference_fit("MultiSWRF", X, y, weights=list(w)), as_list)
    np.testing.assert_array_equal(
        as_list.feature_importances_, skrebate_fit("MultiSWRF", X, y).feature_importances_
    )
    assert (
        np.abs(
            as_list.feature_importances_
            - skrebate_fit("MultiSWRF", X, y, weights=w).feature_importances_
        ).max()
        > 1e-6
    )


# ----------------------------------------------------------------------------------
# Iter


def _scorer(estimator, **params):
    def fit(X, y, weights=None):
        return reference_fit(estimator, X, y, weights=weights, **params)

    return fit


ITER_CASES = [  # estimator, data, inner params, Iter params
    ("SWRF", "gametes", {}, {"max_iter": 4, "beta": 0.3}),
    ("MultiSWRFDBstar", "continuous-multiclass", {}, {"max_iter": 3}),
    ("MuRelief", "gametes-missing", {"n_neighbors": 10}, {"max_iter": 2}),
    ("SWRFstar", "wpbc", {"rank_absolute": True}, {"max_iter": 3}),
    ("MultiSWRF", "gametes", {"weight_final_scores": True}, {"max_iter": 3}),
    # stops early: |T(s_{t-1}) - s_t| < 0.9 (accident 12)
    ("MultiSWRF", "gametes", {}, {"max_iter": 6, "convergence_threshold": 0.9}),
]


@pytest.mark.parametrize(
    "estimator,name,inner,outer",
    ITER_CASES,
    ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(ITER_CASES)],
)
def test_iter_equals_skrebate(estimator, name, inner, outer):
    X, y = dataset(name)
    relief = getattr(skrebate, estimator)(n_jobs=1, **inner)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = skrebate.Iter(relief, **outer).fit(X.copy(), y)
    ours = ref.iter_relief(
        _scorer(estimator, **inner), X, y, rank_absolute=inner.get("rank_absolute", False), **outer
    )
    assert_same_fit(ours, theirs)
    # the weighted iterations moved the scores away from the plain fit
    plain = reference_fit(estimator, X, y, **inner).feature_importances_
    assert np.abs(ours.feature_importances_ - plain).max() > 1e-6


def test_iter_convergence_compares_with_transformed_scores():
    """Accident 12: compared with s_{t-1} (< 0.9 apart) Iter would stop after the first
    weighted fit; compared with T(s_{t-1}) (in [0, 1]) it goes on."""
    X, y = dataset("gametes")
    scorer = _scorer("MultiSWRF")
    early = ref.iter_relief(scorer, X, y, max_iter=2).feature_importances_
    late = ref.iter_relief(scorer, X, y, max_iter=6, convergence_threshold=0.9)
    assert np.abs(early - late.feature_importances_).max() > 1e-6


# ----------------------------------------------------------------------------------
# VLS


@pytest.mark.parametrize(
    "p,num,size,seed", [(20, 5, 6, 3), (20, 4, 5, 0), (7, 3, 3, 11), (9, 2, 20, 5), (13, 6, 4, 1)]
)
def test_vls_subsets_equal_skrebates(p, num, size, seed):
    """Same draws from ``random`` as ``VLS.make_subsets`` (padding and extra subsets)."""
    model = skrebate.VLS(
        skrebate.SWRF(), num_feature_subset=num, size_feature_subset=size, random_state=seed
    )
    random.seed(seed)
    theirs = model.make_subsets(list(range(p)), num, min(size, p))
    assert ref.vls_subsets(p, num, size, seed) == theirs


VLS_CASES = [  # estimator, data, inner params, VLS params, fit weights
    ("SWRF", "gametes", {}, {"num_feature_subset": 5, "size_feature_subset": 6}, False),
    (
        "MultiSWRFstar",
        "gametes-mixed",
        {},
        {"num_feature_subset": 4, "size_feature_subset": 7},
        False,
    ),
    (
        "MultiSWRFDBstar",
        "gametes-3class",
        {"rank_absolute": True},
        {"num_feature_subset": 5, "size_feature_subset": 6},
        False,
    ),
    (
        "MuRelief",
        "gametes",
        {"n_neighbors": 10},
        {"num_feature_subset": 4, "size_feature_subset": 8},
        True,
    ),
]


@pytest.mark.parametrize(
    "estimator,name,inner,outer,weighted", VLS_CASES, ids=[f"{c[0]}-{c[1]}" for c in VLS_CASES]
)
def test_vls_equals_skrebate(estimator, name, inner, outer, weighted):
    X, y = dataset(name)
    w = _weights(X.shape[1]) if weighted else None
    relief = getattr(skrebate, estimator)(n_jobs=1, **inner)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = skrebate.VLS(relief, random_state=4, **outer).fit(X.copy(), y, weights=w)
    ours = ref.vls(
        _scorer(estimator, **inner),
        X,
        y,
        random_state=4,
        weights=w,
        rank_absolute=inner.get("rank_absolute", False),
        **outer,
    )
    assert_same_fit(ours, theirs)
    # another seed draws other subsets and other scores: the seed is really used
    other = ref.vls(
        _scorer(estimator, **inner),
        X,
        y,
        random_state=5,
        weights=w,
        rank_absolute=inner.get("rank_absolute", False),
        **outer,
    )
    assert np.abs(other.feature_importances_ - ours.feature_importances_).max() > 1e-6
