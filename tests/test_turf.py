"""TuRF against skrebate 0.8.4's TURF, the peer that defines its semantics.

skrebate's TURF wraps any estimator with ``feature_importances_`` (and a
``rank_absolute`` attribute): given the same inner estimator (dmargin's), both
must produce the same scores exactly.
"""

import dask.array as da
import numpy as np
import pytest

import dmargin
from dmargin.datasets import load_dataset

skrebate_turf = pytest.importorskip("skrebate.turf")


class _ForSkrebate:
    """A dmargin estimator as skrebate's TURF expects it (it reads ``rank_absolute``)."""

    rank_absolute = False

    def __init__(self, make):
        self.make = make

    def fit(self, X, y):
        self.feature_importances_ = self.make().fit(X, y).feature_importances_
        return self


@pytest.mark.parametrize("pct,keep", [(0.5, 10), (0.5, 100), (0.2, 5), (0.3, 12), (0.9, 1)])
@pytest.mark.parametrize(
    "make",
    [lambda: dmargin.ReliefF(n_neighbors=5), lambda: dmargin.IRelief(max_iter=3, tol=0)],
    ids=["ReliefF", "IRelief"],
)
def test_turf_equals_skrebate(pct, keep, make):
    X, y = load_dataset("wdbc")
    ours = dmargin.TuRF(make(), pct=pct, keep=keep).fit(X, y)
    peer = skrebate_turf.TURF(_ForSkrebate(make), pct=pct, num_scores_to_return=keep)
    peer.fit(X.to_numpy(), y.to_numpy())
    np.testing.assert_allclose(
        ours.feature_importances_, peer.feature_importances_, rtol=0, atol=1e-10
    )
    order = np.argsort(ours.feature_importances_)[::-1]
    np.testing.assert_array_equal(order[:5], peer.top_features_[:5])


def test_ranking_is_rfe_like_and_transform_selects():
    X, y = load_dataset("wdbc")
    turf = dmargin.TuRF(dmargin.ReliefF(), pct=0.5, keep=10, n_features_to_select=3).fit(X, y)
    assert turf.n_iter_ == 2 and sorted(set(turf.ranking_)) == [1, 2, 3]
    assert (turf.ranking_ == 1).sum() == 8 and (turf.ranking_ == 2).sum() == 7
    # every survivor scores above every removed feature; later tiers above earlier ones
    assert (
        turf.feature_importances_[turf.ranking_ == 1].min()
        > turf.feature_importances_[turf.ranking_ == 2].max()
        > turf.feature_importances_[turf.ranking_ == 3].max()
    )
    top3 = np.sort(np.argsort(-turf.feature_importances_, kind="stable")[:3])
    assert list(turf.get_feature_names_out()) == list(X.columns[top3])  # in column order


def test_turf_on_dask_input_equals_numpy(threaded):
    X, y = load_dataset("wdbc")
    Xn, yn = X.to_numpy(), y.to_numpy()
    local = dmargin.TuRF(dmargin.ReliefF(), pct=0.4, keep=6).fit(Xn, yn)
    on_dask = dmargin.TuRF(dmargin.ReliefF(), pct=0.4, keep=6).fit(
        da.from_array(Xn, chunks=(150, 30)), da.from_array(yn, chunks=150)
    )
    np.testing.assert_allclose(
        on_dask.feature_importances_, local.feature_importances_, rtol=0, atol=1e-10
    )
    np.testing.assert_array_equal(on_dask.ranking_, local.ranking_)


def test_bad_parameters_are_named():
    X, y = load_dataset("wdbc")
    for bad in ({"pct": 0.0}, {"pct": 1.0}, {"keep": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            dmargin.TuRF(dmargin.ReliefF(), **bad).fit(X, y)
    with pytest.raises(ValueError, match="estimator"):
        dmargin.TuRF("relieff").fit(X, y)
