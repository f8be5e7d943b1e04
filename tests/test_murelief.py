"""MuRelief against skrebate 0.8.4 itself and its transcription (1e-10).

dmargin fixes three of skrebate's accidents (``tests/skrebate_reference.py``, 9-11):
the anchor is never its own hit, a row sharing no feature with the anchor is never a
neighbour, and ties of the key go to the lower row index (compared in integers on
discrete data).  Every fit equals the transcription with those fixes; where none of
them occurs it equals skrebate itself, and where one does it is shown to differ.
"""

import numpy as np
import pytest

import dmargin
from tests import skrebate_reference as ref
from tests.test_skrebate_reference import dataset, skrebate_fit

ATOL = 1e-10
LABELS = [
    "gametes",
    "gametes-3class",
    "gametes-missing",
    "gametes-mixed",
    "wpbc",
    "corners",
    "continuous-multiclass",
    "one-sample-class",
    "missing-multiclass",
    "nan-pairs",
    "gametes-continuous-endpoint",
    "wpbc-time",
    "missing-continuous-target",
]
#: Where skrebate's own MuRelief is reproduced: continuous or mixed data without
#: rows at distance NaN, and n_neighbors below every class's size (skrebate then never
#: reaches the anchor itself, and its keys have no ties).
AS_SKREBATE = {
    ("gametes-mixed", 5),
    ("wpbc", 5),
    ("corners", 5),
    ("continuous-multiclass", 5),
    ("one-sample-class", 5),
    ("missing-multiclass", 5),
    ("wpbc-time", 5),
    ("missing-continuous-target", 5),
}


def _data(name):
    """The shared slices; wpbc's recurrence time (whole months) shifted by a quarter, so
    that dmargin reads it as the continuous target skrebate does."""
    X, y = dataset(name)
    return (X, y + 0.25) if name == "wpbc-time" else (X, y)


@pytest.mark.parametrize("k", [5, 100])
@pytest.mark.parametrize("name", LABELS)
def test_equals_skrebate_with_its_accidents_fixed(name, k):
    X, y = _data(name)
    ours = dmargin.MuRelief(n_neighbors=k).fit(X, y).feature_importances_
    fixed = ref.murelief(X, y, n_neighbors=k, fixed=True).feature_importances_
    assert np.abs(fixed).max() > 1e-6
    np.testing.assert_allclose(ours, fixed, rtol=0, atol=ATOL)
    theirs = skrebate_fit("MuRelief", X, y, n_neighbors=k).feature_importances_
    if (name, k) in AS_SKREBATE:
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=ATOL)
    else:
        assert np.abs(ours - theirs).max() > 1e-6


@pytest.mark.parametrize(
    "name", ["gametes", "wpbc", "missing-multiclass", "missing-continuous-target"]
)
def test_sampled_anchors(name):
    X, y = _data(name)
    est = dmargin.MuRelief(n_neighbors=7, n_anchors=19, random_state=2).fit(X, y)
    expected = ref.murelief(
        X, y, n_neighbors=7, fixed=True, anchors=list(est.anchor_indices_)
    ).feature_importances_
    np.testing.assert_allclose(est.feature_importances_, expected, rtol=0, atol=ATOL)


def test_fractional_neighbours_are_skrebates():
    X, y = dataset("continuous-multiclass")  # 50 rows: 0.2 -> int(0.2 * 50 / 2) = 5
    ours = dmargin.MuRelief(n_neighbors=0.2).fit(X, y).feature_importances_
    np.testing.assert_allclose(
        ours,
        skrebate_fit("MuRelief", X, y, n_neighbors=0.2).feature_importances_,
        rtol=0,
        atol=ATOL,
    )


def test_feature_weights_equal_skrebate():
    X, y = dataset("continuous-multiclass")
    w = np.random.default_rng(3).uniform(0.05, 1.0, X.shape[1])
    ours = dmargin.MuRelief(n_neighbors=5).fit(X, y, feature_weights=w).feature_importances_
    theirs = skrebate_fit("MuRelief", X, y, weights=w, n_neighbors=5).feature_importances_
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=ATOL)


def test_continuous_target_hits_are_within_one_standard_deviation():
    """skrebate's continuous endpoint: a row is a hit when its target lies within
    ``std(y, ddof=1)`` of the anchor's; scaling the target leaves the scores alone."""
    X, y = _data("wpbc-time")
    est = dmargin.MuRelief(n_neighbors=5).fit(X, y)
    assert est.target_type_ == "continuous" and not hasattr(est, "classes_")
    assert est.hit_bound_ == pytest.approx(np.std(y, ddof=1))
    scaled = dmargin.MuRelief(n_neighbors=5).fit(X, 3.0 * y + 1.0).feature_importances_
    np.testing.assert_allclose(scaled, est.feature_importances_, rtol=0, atol=ATOL)
    # a refit on class labels drops the continuous attributes
    est.fit(X, (y > np.median(y)).astype(int))
    assert est.target_type_ == "binary" and not hasattr(est, "hit_bound_")
