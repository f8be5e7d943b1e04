"""Iter and VLS around dmargin estimators against skrebate 0.8.4's ``Iter`` and ``VLS``
around skrebate's same estimators (same seed), to 1e-10, and VLS's subset fits as one
graph on a cluster."""

import numpy as np
import pytest

import dmargin
from tests import skrebate_reference as ref
from tests.test_skrebate_reference import dataset

skrebate = pytest.importorskip("skrebate")
ATOL = 1e-10

#: (dmargin estimator, skrebate estimator): the same scores on the data below.
PAIRS = {
    "MultiSURF": (lambda: dmargin.MultiSURF(), lambda **kw: skrebate.MultiSURF(n_jobs=1, **kw)),
    "SURFstar": (lambda: dmargin.SURFstar(), lambda **kw: skrebate.SURFstar(n_jobs=1, **kw)),
    "SWRFstar": (lambda: dmargin.SWRFstar(), lambda **kw: skrebate.SWRFstar(n_jobs=1, **kw)),
    "MultiSWRFDB": (
        lambda: dmargin.MultiSWRFDB(),
        lambda **kw: skrebate.MultiSWRFDB(n_jobs=1, **kw),
    ),
}
DATA = ["gametes", "gametes-continuous-endpoint", "continuous-multiclass"]


def _close(ours, theirs):
    np.testing.assert_allclose(ours, np.asarray(theirs.feature_importances_), rtol=0, atol=ATOL)


@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize("inner", list(PAIRS))
def test_iter_equals_skrebate(inner, data):
    X, y = dataset(data)
    ours_inner, theirs_inner = PAIRS[inner]
    ours = dmargin.Iter(ours_inner(), max_iter=6, beta=0.3).fit(X, y)
    theirs = skrebate.Iter(theirs_inner(), max_iter=6, beta=0.3).fit(X.copy(), y)
    _close(ours.feature_importances_, theirs)
    assert ours.n_iter_ >= 2


def test_iter_rank_absolute_equals_skrebate():
    X, y = dataset("gametes")
    ours = dmargin.Iter(dmargin.MultiSURF(), max_iter=5, rank_absolute=True).fit(X, y)
    theirs = skrebate.Iter(skrebate.MultiSURF(n_jobs=1, rank_absolute=True), max_iter=5).fit(
        X.copy(), y
    )
    _close(ours.feature_importances_, theirs)


def test_iter_stops_when_the_scores_settle():
    X, y = dataset("gametes")
    est = dmargin.Iter(dmargin.MultiSURF(), max_iter=10, convergence_threshold=1.0).fit(X, y)
    assert est.n_iter_ == 2 and est.converged_
    # the weights of the second fit are the first fit's scores, rescaled
    first = dmargin.MultiSURF().fit(X, y).feature_importances_
    np.testing.assert_allclose(est.feature_weights_, np.clip(first, 0, None) / first.max())
    assert not dmargin.Iter(dmargin.MultiSURF(), max_iter=1).fit(X, y).converged_


@pytest.mark.parametrize(
    "p, num, size, seed", [(20, 40, 5, 4), (20, 3, 7, 1), (23, 5, 5, 9), (7, 2, 100, 0)]
)
def test_vls_subsets_equal_skrebates(p, num, size, seed):
    from dmargin.wrappers._vls import feature_subsets

    # (the transcription's subsets are skrebate's: tests/test_skrebate_reference.py)
    assert feature_subsets(p, num, size, seed) == ref.vls_subsets(p, num, size, seed)


@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize("inner", list(PAIRS))
def test_vls_equals_skrebate(inner, data):
    X, y = dataset(data)
    ours_inner, theirs_inner = PAIRS[inner]
    ours = dmargin.VLS(
        ours_inner(), num_feature_subset=6, size_feature_subset=7, random_state=5
    ).fit(X, y)
    theirs = skrebate.VLS(
        theirs_inner(), num_feature_subset=6, size_feature_subset=7, random_state=5
    ).fit(X.copy(), y)
    _close(ours.feature_importances_, theirs)


def test_vls_rank_absolute_and_weights_equal_skrebate():
    X, y = dataset("gametes")
    w = np.random.default_rng(3).uniform(0.05, 1.0, X.shape[1])
    ours = dmargin.VLS(
        dmargin.MultiSURF(),
        num_feature_subset=5,
        size_feature_subset=6,
        random_state=2,
        rank_absolute=True,
    ).fit(X, y, feature_weights=w)
    theirs = skrebate.VLS(
        skrebate.MultiSURF(n_jobs=1, rank_absolute=True),
        num_feature_subset=5,
        size_feature_subset=6,
        random_state=2,
    ).fit(X.copy(), y, weights=w)
    _close(ours.feature_importances_, theirs)


def test_vls_keeps_genotypes_as_bytes():
    X, y = dataset("gametes")
    est = dmargin.VLS(
        dmargin.MultiSURF(), num_feature_subset=4, size_feature_subset=5, random_state=0
    )
    on_bytes = est.fit(X.astype(np.uint8), y).feature_importances_
    np.testing.assert_allclose(on_bytes, est.fit(X, y).feature_importances_, rtol=0, atol=ATOL)


def test_vls_must_cover_the_features():
    X, y = dataset("gametes")
    with pytest.raises(
        ValueError,
        match=r"3 x 5 does not cover the 20 features.*"
        r"num_feature_subset=4",
    ):
        dmargin.VLS(dmargin.SURF(), num_feature_subset=3, size_feature_subset=5).fit(X, y)


@pytest.mark.cluster
def test_vls_subset_fits_are_one_graph_on_the_workers(local_cluster):
    """On a cluster the subset fits are tasks of one graph, run on the workers; the
    scores equal the in-process fit's, and a refit with another seed is other tasks."""
    import dask.array as da
    from distributed import Client, get_task_stream

    X, y = dataset("gametes")
    make = lambda seed: dmargin.VLS(
        dmargin.MultiSURF(),
        num_feature_subset=6,  # noqa: E731
        size_feature_subset=4,
        random_state=seed,
    )
    local = make(1).fit(X, y).feature_importances_
    Xd, yd = da.from_array(X, chunks=(20, -1)), da.from_array(y, chunks=20)
    with Client(local_cluster) as client:
        workers = set(client.scheduler_info()["workers"])
        with get_task_stream(client) as stream:
            remote = make(1).fit(Xd, yd).feature_importances_
            other = make(2).fit(Xd, yd).feature_importances_
    np.testing.assert_allclose(remote, local, rtol=0, atol=ATOL)
    np.testing.assert_allclose(other, make(2).fit(X, y).feature_importances_, rtol=0, atol=ATOL)
    fits = [
        t
        for t in stream.data
        if str(t["key"]).startswith("_subset_scores") or "_subset_scores" in str(t["key"])
    ]
    assert len(fits) == 12, [t["key"] for t in stream.data][:20]
    assert {t["worker"] for t in fits} <= workers
