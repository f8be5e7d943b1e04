"""The SWRF family against skrebate 0.8.4 itself and its transcription (1e-10).

The data are ``tests/test_skrebate_reference.py``'s: real slices (GAMETES SNPs, binary,
three classes, a continuous endpoint, missing values, mixed features; wpbc with NaN
and its recurrence time as a continuous target) and synthetic corners (a constant
feature, duplicate rows, a class of one sample, NaN distances).  Where skrebate has
an accident dmargin does not reproduce (SWRF's mean with missing values, accident 1
of ``tests/skrebate_reference.py``; a row exactly at a mean threshold on discrete
data put on a side by rounding, accident 14), the fit is compared with the
transcription with the accident fixed, and shown to differ from skrebate.
"""

import numpy as np
import pytest

import dmargin
from tests import skrebate_reference as ref
from tests.test_skrebate_reference import REAL, SYNTHETIC, dataset, skrebate_fit

ATOL = 1e-10
VARIANTS = ref.SWRF_VARIANTS
GLOBAL = ("SWRF", "SWRFstar")  # one threshold: the mean of the whole matrix


def _fit(variant, X, y, **params):
    return getattr(dmargin, variant)(**params).fit(X, y)


def _data(name):
    """The shared slices; wpbc's recurrence time (whole months) shifted by a quarter, so
    that dmargin reads it as the continuous target skrebate does (dmargin takes floats
    that are all integers for class labels)."""
    X, y = dataset(name)
    return (X, y + 0.25) if name == "wpbc-time" else (X, y)


#: Where skrebate's own accidents change these scores (``tests/skrebate_reference.py``):
#: SWRF's mean with NaN in X (accident 1), and a row exactly at an anchor's mean
#: distance on discrete data, put on a side by ``np.mean``'s rounding (accident 14).
ACCIDENTS = {
    ("SWRF", "gametes-missing"),
    ("SWRF", "wpbc"),
    ("SWRF", "wpbc-time"),
    ("SWRF", "missing-multiclass"),
    ("SWRF", "missing-continuous-target"),
    ("SWRF", "nan-pairs"),
    ("SWRFstar", "gametes-missing"),
    ("SWRFstar", "wpbc"),
    ("SWRFstar", "wpbc-time"),
    ("SWRFstar", "missing-multiclass"),
    ("SWRFstar", "missing-continuous-target"),
    ("SWRFstar", "nan-pairs"),
    ("MultiSWRF", "gametes"),
    ("MultiSWRFstar", "gametes"),
    ("MultiSWRFstar", "gametes-continuous-endpoint"),
}


@pytest.mark.parametrize("name", REAL + SYNTHETIC)
@pytest.mark.parametrize("variant", VARIANTS)
def test_equals_skrebate(variant, name):
    """Equal to the transcription with skrebate's two accidents fixed; equal to skrebate
    itself wherever those accidents do not occur, and different where they do."""
    X, y = _data(name)
    ours = _fit(variant, X, y).feature_importances_
    fixed = ref.swrf_family(X, y, variant, whole_matrix=True, exact_means=True).feature_importances_
    assert np.abs(fixed).max() > 1e-6, "degenerate case: all scores ~0"
    np.testing.assert_allclose(ours, fixed, rtol=0, atol=ATOL)
    theirs = skrebate_fit(variant, X, y).feature_importances_
    if (variant, name) in ACCIDENTS:
        assert np.abs(ours - theirs).max() > 1e-6
    else:
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=ATOL)


@pytest.mark.parametrize(
    "name", ["gametes", "gametes-3class", "wpbc", "wpbc-time", "missing-multiclass"]
)
@pytest.mark.parametrize("variant", VARIANTS)
def test_sampled_anchors_equal_the_transcription(variant, name):
    X, y = _data(name)
    est = _fit(variant, X, y, n_anchors=17, random_state=3)
    anchors = est.anchor_indices_
    assert len(anchors) == 17
    expected = ref.swrf_family(
        X, y, variant, anchors=list(anchors), exact_means=True
    ).feature_importances_
    np.testing.assert_allclose(est.feature_importances_, expected, rtol=0, atol=ATOL)


def test_weights_change_the_scores():
    """The soft weights matter: SWRF differs from SURF on the same neighbours, and
    MultiSWRFDB from MultiSURF (the same near sets, weighed)."""
    X, y = dataset("gametes")
    for soft, hard in (("SWRF", "SURF"), ("MultiSWRFDB", "MultiSURF")):
        a = _fit(soft, X, y).feature_importances_
        b = _fit(hard, X, y).feature_importances_
        assert np.abs(a - b).max() > 1e-3


def test_a_constant_distance_has_unit_spread():
    """All rows equal but one: the anchors' spreads are not all 0, and rows with
    every distance equal weigh by ``tanh(2 |d - mu| / 1)`` (skrebate's zero spread -> 1)."""
    X = np.zeros((12, 3))
    X[0] = 1.0
    y = np.array([0, 1] * 6)
    for variant in VARIANTS:
        ours = _fit(variant, X, y).feature_importances_
        np.testing.assert_allclose(
            ours, skrebate_fit(variant, X, y).feature_importances_, rtol=0, atol=ATOL
        )
