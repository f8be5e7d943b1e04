"""``rank_absolute`` (skrebate's): ``transform`` ranks the features by ``|score|``, as
skrebate 0.8.4's ``top_features_`` with ``rank_absolute=True``."""

import numpy as np
import pytest

import dmargin
from tests.test_skrebate_reference import dataset, skrebate_fit

ESTIMATORS = {
    "SURF": {},
    "MultiSURFstar": {},
    "SWRFstar": {},
    "MultiSWRF": {},
    "MuRelief": {"n_neighbors": 5},
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_selects_skrebates_top_features(name):
    X, y = dataset("continuous-multiclass")
    params = ESTIMATORS[name]
    theirs = skrebate_fit(name, X, y, rank_absolute=True, **params)
    for k in (1, 2, 3, 4):
        ours = getattr(dmargin, name)(rank_absolute=True, n_features_to_select=k, **params).fit(
            X, y
        )
        assert set(ours.get_support(indices=True)) == set(theirs.top_features_[:k])


def test_a_negative_score_is_kept_by_its_magnitude():
    X, y = dataset("gametes")
    scores = dmargin.SURFstar().fit(X, y).feature_importances_
    order = np.argsort(-np.abs(scores), kind="stable")
    k = int(np.flatnonzero(scores[order] < 0)[0]) + 1  # down to the first negative score
    est = dmargin.SURFstar(n_features_to_select=k, rank_absolute=True).fit(X, y)
    assert set(est.get_support(indices=True)) == set(order[:k])
    assert set(dmargin.SURFstar(n_features_to_select=k).fit(X, y).get_support(indices=True)) != set(
        order[:k]
    )
    # None: every feature with a nonzero score
    est.set_params(n_features_to_select=None)
    np.testing.assert_array_equal(est.get_support(), scores != 0)


def test_relieff_takes_it_too():
    X, y = dataset("gametes")
    est = dmargin.ReliefF(n_neighbors=10, rank_absolute=True, n_features_to_select=4).fit(X, y)
    top = np.argsort(-np.abs(est.feature_importances_), kind="stable")[:4]
    assert set(est.get_support(indices=True)) == set(top)
