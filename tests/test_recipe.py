"""The recipe for a new Relief variant (``docs/contributing/adding_an_estimator.md``), followed in
this file alone.

A ReliefF whose neighbours weigh by their rank: the ``i``-th nearest of a
class counts ``1 / (i + 1)`` instead of ReliefF's ``1 / k``.  Its only code is a
per-anchor term and a subclass naming it; the engine, the execution modes,
sampled anchors, ``fit_cost`` and the scikit-learn API come with the subclass.
Nothing outside this file knows it.
"""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import dmargin
from tests import reference as ref

K = 4


def rank_weighted_agg(dist, idx, z, ya, miss_prior, missing=False):
    """An anchor block's share: ReliefF's term with the neighbours of each class
    averaged with weights ``1 / (rank + 1)`` over those found.

    ``dist``, ``idx``: ``(anchors, classes, k)``, nearest first (``inf`` where a
    class has fewer rows); ``z``: their differences, ``(anchors, classes, k, A)``
    (NaN where a value is missing, with ``missing``).
    """
    found = np.isfinite(dist)[..., None] & ~np.isnan(z)
    rank = 1.0 / (1.0 + np.arange(dist.shape[-1]))[None, None, :, None] * found
    total = rank.sum(axis=2)
    mean = np.divide(
        (rank * np.where(found, z, 0.0)).sum(axis=2),
        total,
        out=np.zeros(total.shape[:2] + z.shape[-1:]),
        where=total > 0,
    )
    ya = np.asarray(ya)
    weight = miss_prior[ya].copy()  # (anchors, classes), zero on the own class
    weight[np.arange(len(ya)), ya] = -1.0
    return np.einsum("ac,acf->f", weight, mean)


class RankWeightedReliefF(dmargin.ReliefF):
    """ReliefF with the ``i``-th nearest neighbour of a class weighted ``1 / (i + 1)``."""

    _agg = staticmethod(rank_weighted_agg)


def brute_force(X, y, k, anchors=None):
    """The same score, one anchor at a time over every other row (numpy only)."""
    Xs = ref.minmax_scale(X)
    classes, codes = np.unique(y, return_inverse=True)
    priors = np.bincount(codes) / len(codes)
    visited = range(len(y)) if anchors is None else anchors
    W = np.zeros(X.shape[1])
    for a in visited:
        d = np.abs(Xs - Xs[a]).sum(axis=1)
        for c in range(len(classes)):
            members = [j for j in np.flatnonzero(codes == c) if j != a]
            nearest = sorted(members, key=lambda j: (d[j], j))[:k]
            if not nearest:
                continue
            w = 1.0 / (1.0 + np.arange(len(nearest)))
            mean = (w[:, None] * np.abs(Xs[nearest] - Xs[a])).sum(axis=0) / w.sum()
            if c == codes[a]:
                W -= mean
            else:
                W += priors[c] / (1.0 - priors[codes[a]]) * mean
    return W / len(visited)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.random((90, 6))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.2 * rng.random(90) > 0.9, "b", "a")
    y[:12] = "c"  # three classes, one small
    return X, y


def test_it_is_not_relieff(data):
    X, y = data
    ours = RankWeightedReliefF(n_neighbors=K).fit(X, y).feature_importances_
    theirs = dmargin.ReliefF(n_neighbors=K).fit(X, y).feature_importances_
    assert np.abs(ours - theirs).max() > 1e-3


def test_exact_equals_the_brute_force(data):
    X, y = data
    est = RankWeightedReliefF(n_neighbors=K).fit(X, y)
    np.testing.assert_allclose(est.feature_importances_, brute_force(X, y, K), rtol=0, atol=1e-10)


def test_sampled_anchors_equal_the_brute_force_over_them(data):
    X, y = data
    est = RankWeightedReliefF(n_neighbors=K, n_anchors=30, random_state=1).fit(X, y)
    assert est.anchor_indices_.size == 30
    np.testing.assert_allclose(
        est.feature_importances_, brute_force(X, y, K, est.anchor_indices_), rtol=0, atol=1e-10
    )


@pytest.mark.cluster
@pytest.mark.parametrize("n_anchors", [None, 30])
def test_a_two_process_cluster_equals_in_process(data, n_anchors, local_cluster):
    import dask.array as da
    from distributed import Client, get_task_stream

    X, y = data
    make = lambda: RankWeightedReliefF(
        n_neighbors=K,
        n_anchors=n_anchors,  # noqa: E731
        random_state=1,
    )
    local = make().fit(X, y)
    Xd, yd = da.from_array(X, chunks=(30, -1)), da.from_array(y, chunks=30)
    with Client(local_cluster) as client:
        workers = set(client.scheduler_info()["workers"])
        with get_task_stream(client) as stream:
            remote = make().fit(Xd, yd)
    np.testing.assert_allclose(
        remote.feature_importances_, local.feature_importances_, rtol=0, atol=1e-10
    )
    ran = {t["worker"] for t in stream.data if str(t["key"]).find("dmargin-") >= 0}
    assert ran and ran <= workers  # the engine's tasks ran on the workers


def test_fit_cost_knows_it(data):
    X, _ = data
    cost = dmargin.fit_cost(RankWeightedReliefF(n_neighbors=K), *X.shape)
    assert cost == dmargin.fit_cost(dmargin.ReliefF(n_neighbors=K), *X.shape)


def test_pvalues_say_the_law_is_relieffs(data):
    X, y = data
    binary = y != "c"
    with pytest.warns(dmargin.UncalibratedPValuesWarning, match="other than ReliefF's"):
        est = RankWeightedReliefF(n_neighbors=K, pvalues=True).fit(X[binary], y[binary])
    assert not hasattr(est, "pvalues_")


@parametrize_with_checks([RankWeightedReliefF(n_neighbors=3)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
