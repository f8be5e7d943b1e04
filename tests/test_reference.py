"""dmargin's Relief-family estimators against the brute-force references.

Two groups of tests live here:

* checks of the references themselves (``tests/reference.py``): tiny cases whose
  answer is computed by hand in the test, and one self-consistency identity per
  reference;
* the library (``IRelief``, ``OnlineIRelief``, ``ReliefF``, ``Relief``) against the
  references to 1e-10 on small seeded data sets, each carrying the corner rows
  dmargin's numerical rules are about (a constant feature, duplicated rows with
  the same and with a different label, a one-sample class).

Equation and section numbers refer to Y. Sun, "Iterative RELIEF for Feature
Weighting: Algorithms, Theories, and Applications" (IEEE TPAMI 29(6), 2007);
ReliefF is Robnik-Šikonja & Kononenko (Machine Learning 53, 2003), as Weka
implements it.
"""

import warnings
from pathlib import Path

import numpy as np
import pytest

try:  # tests/ as a package (tests/__init__.py present)
    from . import reference
except ImportError:  # tests/ as a plain directory on sys.path (pytest's default)
    import reference

ATOL = 1e-10

# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def _gaussian_classes(rng, class_sizes, n_features, n_informative):
    """Return ``(X, codes)``: Gaussian classes whose means differ on a few features."""
    blocks, codes = [], []
    for code, size in enumerate(class_sizes):
        centre = np.zeros(n_features)
        centre[:n_informative] = rng.normal(0.0, 1.5, n_informative)
        blocks.append(centre + rng.normal(0.0, 1.0, (size, n_features)))
        codes.append(np.full(size, code))
    return np.vstack(blocks), np.concatenate(codes)


def _raw_units(rng, X):
    """Give every feature its own raw offset and range, so scaling matters."""
    offsets = rng.uniform(-5.0, 5.0, X.shape[1])
    spreads = rng.uniform(0.3, 4.0, X.shape[1])
    return offsets + spreads * X


def _shuffle_rows(rng, X, y):
    """Shuffle rows so that classes and corner rows are interleaved."""
    permutation = rng.permutation(len(y))
    return X[permutation], y[permutation]


@pytest.fixture(scope="module")
def binary_data_with_duplicate_row():
    """40 x 5, labels -1/+1; constant feature 2; one row duplicated with its label."""
    rng = np.random.default_rng(20240601)
    X, codes = _gaussian_classes(rng, [20, 19], n_features=5, n_informative=2)
    X = _raw_units(rng, X)
    X[:, 2] = 3.25  # constant feature
    labels = np.array([-1, 1])[codes]
    X, labels = _shuffle_rows(rng, X, labels)
    X = np.vstack([X, X[7]])  # exact duplicate, same label
    labels = np.append(labels, labels[7])
    return X, labels


@pytest.fixture(scope="module")
def three_class_data_with_singleton_and_conflicting_duplicate():
    """45 x 6, string labels; constant feature 0; a one-sample class "gamma";
    a row duplicated with a *different* label."""
    rng = np.random.default_rng(7)
    X, codes = _gaussian_classes(rng, [22, 21, 1], n_features=6, n_informative=3)
    X = _raw_units(rng, X)
    X[:, 0] = -1.0  # constant feature
    labels = np.array(["alpha", "beta", "gamma"])[codes]
    X, labels = _shuffle_rows(rng, X, labels)
    source = int(np.flatnonzero(labels == "alpha")[0])
    X = np.vstack([X, X[source]])  # exact duplicate, other label
    labels = np.append(labels, "beta")
    return X, labels


@pytest.fixture(scope="module")
def four_class_data_with_singleton_and_duplicates():
    """60 x 7, string labels of unequal length; constant feature 4; a one-sample
    class; one row duplicated with its label, one with another label."""
    rng = np.random.default_rng(31337)
    X, codes = _gaussian_classes(rng, [20, 19, 18, 1], n_features=7, n_informative=3)
    X = _raw_units(rng, X)
    X[:, 4] = 0.0  # constant feature
    labels = np.array(["a", "bb", "ccc", "dddd"])[codes]
    X, labels = _shuffle_rows(rng, X, labels)
    same = int(np.flatnonzero(labels == "ccc")[0])
    other = int(np.flatnonzero(labels == "a")[0])
    X = np.vstack([X, X[same], X[other]])
    labels = np.append(labels, [labels[same], "bb"])
    return X, labels


@pytest.fixture(scope="module")
def integer_grid_data_with_ties():
    """40 x 4 with values in {0, 1, 2}, 3 integer classes plus a one-sample class.

    Manhattan distances on these values (raw or min-max scaled) are exact dyadic
    numbers, so many neighbours tie exactly: this tests "ties by lower row index"
    (dmargin's rule).  Feature 3 is constant; rows repeat by construction.
    """
    rng = np.random.default_rng(99)
    labels = np.concatenate([np.zeros(13), np.ones(13), np.full(13, 2), [5]])
    labels = labels.astype(int)
    X = rng.integers(0, 3, (40, 4)).astype(float)
    X[:, 0] = np.clip(labels, 0, 2)  # an informative feature
    X[rng.random(40) < 0.3, 0] = 1.0  # ... with some noise
    X[:, 3] = 2.0  # constant feature
    X, labels = _shuffle_rows(rng, X, labels)
    return X, labels


@pytest.fixture(scope="module")
def larger_data_with_singleton_and_duplicates():
    """122 x 8, three string classes and a one-sample class; constant feature 7;
    one same-label and one other-label duplicate."""
    rng = np.random.default_rng(4242)
    X, codes = _gaussian_classes(rng, [40, 40, 37, 1], n_features=8, n_informative=3)
    X = _raw_units(rng, X)
    X[:, 7] = 12.0
    labels = np.array(["no", "yes", "maybe", "lonely"])[codes]
    X, labels = _shuffle_rows(rng, X, labels)
    X = np.vstack([X, X[0], X[1]])
    other_label = "no" if labels[1] != "no" else "yes"
    labels = np.append(labels, [labels[0], other_label])
    return X, labels


DATASET_NAMES = [
    "binary_data_with_duplicate_row",
    "three_class_data_with_singleton_and_conflicting_duplicate",
    "four_class_data_with_singleton_and_duplicates",
]


@pytest.fixture(params=DATASET_NAMES)
def dataset(request):
    """Each of the small corner-case data sets in turn, as ``(X_raw, y)``."""
    return request.getfixturevalue(request.param)


@pytest.fixture(params=DATASET_NAMES[1:])
def multiclass_dataset(request):
    """The corner-case data sets with more than two classes."""
    return request.getfixturevalue(request.param)


@pytest.fixture(
    params=[
        "binary_data_with_duplicate_row",
        "three_class_data_with_singleton_and_conflicting_duplicate",
        "four_class_data_with_singleton_and_duplicates",
        "integer_grid_data_with_ties",
    ]
)
def dataset_with_ties(request):
    """The corner-case data sets plus the integer grid with exact distance ties."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def dmargin():
    """The library under test; the test is skipped while the package is absent."""
    try:
        import dmargin as module
    except ModuleNotFoundError as error:
        if error.name != "dmargin":
            raise
        pytest.skip("dmargin is not importable yet")
    return module


def _scaled(X, scale):
    """What the library sees after its own scaling: reference input for ``scale``."""
    return reference.minmax_scale(X) if scale == "minmax" else np.asarray(X, float)


def _fit(estimator, X, y):
    """Fit ``estimator``; convergence and zero-weight warnings are not tested here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X, y)


def _visiting_order(n_samples, n_passes, block_size, shuffle, random_state):
    """OnlineIRelief's documented visiting order, all passes concatenated.

    Rows are cut into consecutive blocks of ``block_size``; one
    ``np.random.default_rng(random_state)`` per fit; in every pass each block is
    visited as ``start + rng.permutation(block_len)`` (or in row order).
    """
    rng = np.random.default_rng(random_state)
    order = []
    for _ in range(n_passes):
        for start in range(0, n_samples, block_size):
            block_len = min(block_size, n_samples - start)
            if shuffle:
                order.extend(start + rng.permutation(block_len))
            else:
                order.extend(range(start, start + block_len))
    return np.asarray(order)


# ---------------------------------------------------------------------------
# The references on hand-checkable cases
# ---------------------------------------------------------------------------


@pytest.fixture
def unit_square():
    """Corners of the unit square; feature 0 separates classes, feature 1 does not.

    x0 = (0, 0), x1 = (0, 1) in class 0; x2 = (1, 0), x3 = (1, 1) in class 1.
    """
    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = np.array([0, 0, 1, 1])
    return X, y


@pytest.fixture
def four_points_three_classes():
    """x0 = (0, 0) "a", x1 = (0, 1) "a", x2 = (1, 0) "b", x3 = (2, 0) "c".

    Classes b and c have one sample each (no hits); P(a) = 1/2, P(b) = P(c) = 1/4.
    """
    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [2.0, 0.0]])
    y = np.array(["a", "a", "b", "c"])
    return X, y


def test_reference_minmax_scale_by_hand():
    """(x - min) / (max - min) per feature; a constant feature becomes 0 (dmargin's rule)."""
    X = np.array([[1.0, 5.0, -2.0], [3.0, 5.0, 2.0], [2.0, 5.0, 0.0]])
    expected = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 1.0], [0.5, 0.0, 0.5]])
    np.testing.assert_allclose(reference.minmax_scale(X), expected, rtol=0, atol=0)


@pytest.mark.parametrize("outliers", [True, False])
def test_reference_irelief_unit_square_by_hand(unit_square, outliers):
    """One I-RELIEF step on the unit square, eqs. (8)-(12), sigma = 1.

    With w0 = (1/2, 1/2) every anchor has one hit at difference (0, 1) and misses
    at (1, 0) (d = 1/2) and (1, 1) (d = 1): P_m = p = 1 / (1 + e^{-1/2}) for the
    nearer one, so m - h = (1, -p); gamma = e^{-1/2} / (2 e^{-1/2} + e^{-1}).
    Then w = (1, 0); with w = (1, 0) the misses tie, nu stays on feature 0 and the
    second change is exactly 0.
    """
    X, y = unit_square
    p = 1.0 / (1.0 + np.exp(-0.5))
    gamma = np.exp(-0.5) / (2 * np.exp(-0.5) + np.exp(-1.0)) if outliers else 1.0

    one_step = reference.irelief(X, y, sigma=1.0, max_iter=1, outliers=outliers)
    np.testing.assert_allclose(one_step["nu"], gamma * np.array([1.0, -p]), atol=1e-15)
    np.testing.assert_allclose(one_step["w"], [1.0, 0.0], atol=1e-15)
    assert one_step["n_iter"] == 1
    np.testing.assert_allclose(one_step["history"], [np.sqrt(0.5)], atol=1e-15)

    converged = reference.irelief(X, y, sigma=1.0, outliers=outliers)
    assert converged["n_iter"] == 2
    np.testing.assert_allclose(converged["history"], [np.sqrt(0.5), 0.0], atol=1e-15)


@pytest.mark.parametrize("outliers", [True, False])
def test_reference_irelief_three_classes_by_hand(four_points_three_classes, outliers):
    """One step of I-RELIEF-2 and I-RELIEF-1 on four points, sigma = 1, w0 = 1/2.

    Weighted distances: d01 = d02 = d23 = 1/2, d03 = d12 = 1, d13 = 3/2.
    I-RELIEF-2 pools the misses in one soft-max (eq. (21)); I-RELIEF-1 takes a
    soft-max per class weighted by P(c) / (1 - P(y_n)) (eq. (20) with ReliefF's
    weight, dmargin's choice).  Anchors 2 and 3 have no hit: hbar = 0 and, with
    outliers, gamma = 0 (dmargin's rule for an empty hit set).
    """
    X, y = four_points_three_classes
    e = np.exp
    p = 1.0 / (1.0 + e(-0.5))  # soft-max of (-1/2, -1) at -1/2
    hit = np.array([0.0, 1.0])

    # I-RELIEF-2: one soft-max over all misses
    margin_terms = [
        p * np.array([1, 0]) + (1 - p) * np.array([2, 0]) - hit,
        p * np.array([1, 1]) + (1 - p) * np.array([2, 1]) - hit,
        (e(-0.5) * np.array([1, 0]) + e(-1.0) * np.array([1, 1]) + e(-0.5) * np.array([1, 0]))
        / (2 * e(-0.5) + e(-1.0)),
        (e(-1.0) * np.array([2, 0]) + e(-1.5) * np.array([2, 1]) + e(-0.5) * np.array([1, 0]))
        / (e(-1.0) + e(-1.5) + e(-0.5)),
    ]
    # I-RELIEF-1: per-class soft-max, weights P(c) / (1 - P(y_n))
    relieff_terms = [
        0.5 * np.array([1, 0]) + 0.5 * np.array([2, 0]) - hit,
        0.5 * np.array([1, 1]) + 0.5 * np.array([2, 1]) - hit,
        (2 / 3) * (p * np.array([1, 0]) + (1 - p) * np.array([1, 1])) + (1 / 3) * np.array([1, 0]),
        (2 / 3) * (p * np.array([2, 0]) + (1 - p) * np.array([2, 1])) + (1 / 3) * np.array([1, 0]),
    ]
    if outliers:  # eq. (10): hits' share of the kernel mass; no hit -> 0
        gammas = [
            e(-0.5) / (2 * e(-0.5) + e(-1.0)),
            e(-0.5) / (e(-0.5) + e(-1.0) + e(-1.5)),
            0.0,
            0.0,
        ]
    else:
        gammas = [1.0, 1.0, 1.0, 1.0]

    for mode, terms in [("margin", margin_terms), ("relieff", relieff_terms)]:
        expected_nu = sum(g * t for g, t in zip(gammas, terms, strict=True)) / 4
        result = reference.irelief(X, y, sigma=1.0, max_iter=1, multiclass=mode, outliers=outliers)
        np.testing.assert_allclose(result["nu"], expected_nu, rtol=0, atol=1e-15)


def test_reference_irelief_zero_weights_by_hand():
    """Alternating labels on a line: every hit is farther than the misses.

    x_n = (n, n), y = 0, 1, 0, 1.  All m - h are negative, so nu^+ = 0: w becomes
    0, the change ||0 - w0|| = 1/sqrt(2) is recorded and the loop stops (dmargin's
    rule for nu^+ = 0).
    """
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    y = np.array([0, 1, 0, 1])
    result = reference.irelief(X, y, sigma=2.0, tol=0.0)
    np.testing.assert_array_equal(result["w"], [0.0, 0.0])
    assert result["n_iter"] == 1
    np.testing.assert_allclose(result["history"], [1 / np.sqrt(2)], atol=1e-15)
    assert np.all(result["nu"] < 0)


def test_reference_online_irelief_by_hand(unit_square):
    """Two online steps on the unit square, Fig. 3 with eta_t = 1/(a t + 1).

    Step 1, anchor 0 with w0 = (1/2, 1/2): pi = gamma (1, -p) as in the batch case,
    nu = pi / (a + 1), hence w = (1, 0).  Step 2, anchor 2 with w = (1, 0): hit x3 at
    d = 0, misses x0 and x1 both at d = 1 (uniform soft-max), so
    m - h = (1, 1/2) - (0, 1) and gamma = 1 / (1 + 2 e^{-1/sigma}).
    """
    X, y = unit_square
    sigma, a = 1.0, 3.0
    p = 1.0 / (1.0 + np.exp(-0.5))
    pi_1 = np.exp(-0.5) / (2 * np.exp(-0.5) + np.exp(-1.0)) * np.array([1.0, -p])
    nu_1 = pi_1 / (a + 1)
    pi_2 = 1.0 / (1.0 + 2 * np.exp(-1.0)) * np.array([1.0, -0.5])
    nu_2 = nu_1 + (pi_2 - nu_1) / (2 * a + 1)

    first = reference.online_irelief(X, y, [0], sigma=sigma, a=a)
    np.testing.assert_allclose(first["nu"], nu_1, rtol=0, atol=1e-15)
    np.testing.assert_allclose(first["w"], [1.0, 0.0], rtol=0, atol=1e-15)
    second = reference.online_irelief(X, y, [0, 2], sigma=sigma, a=a)
    np.testing.assert_allclose(second["nu"], nu_2, rtol=0, atol=1e-15)
    np.testing.assert_allclose(second["w"], [1.0, 0.0], rtol=0, atol=1e-15)


def test_reference_online_irelief_keeps_w_while_nu_nonpositive():
    """Fig. 3 step (8) is skipped while nu^+ = 0: w stays at ones(A) / A."""
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    y = np.array([0, 1, 0, 1])
    result = reference.online_irelief(X, y, [1, 2, 0], sigma=1.0)
    assert np.all(result["nu"] < 0)
    np.testing.assert_array_equal(result["w"], [0.5, 0.5])


def test_reference_relieff_by_hand(unit_square, four_points_three_classes):
    """ReliefF (Robnik-Šikonja & Kononenko 2003, Fig. 3) on four points.

    Unit square: each anchor has one hit at (0, 1) and misses at (1, 0), (1, 1), so
    k = 1 gives W = (1, -1) and k = 10 (k_H = 1, k_C = 2) gives W = (1, -1/2).
    Three classes, k = 1 (Manhattan d01 = d02 = d23 = 1, d03 = d12 = 2, d13 = 3):
    anchors contribute (3/2, -1), (3/2, 0), (1, 0) and (5/3, 0) with the prior
    weights P(C) / (1 - P(c)) = 1/2, 1/2 | 2/3, 1/3 | 2/3, 1/3, so
    W = (17/12, -1/4).
    """
    X, y = unit_square
    np.testing.assert_allclose(reference.relieff(X, y, 1), [1.0, -1.0], atol=1e-15)
    np.testing.assert_allclose(reference.relieff(X, y, 10), [1.0, -0.5], atol=1e-15)

    X, y = four_points_three_classes
    np.testing.assert_allclose(reference.relieff(X, y, 1), [17 / 12, -1 / 4], rtol=0, atol=1e-15)


def test_reference_relieff_breaks_ties_by_lower_index():
    """x0 = (0, 0) "A"; x1 = (1, 0), x2 = (0, 1) "B"; x3 = (0, 3) "A"; k = 1.

    Anchor 0's misses x1 and x2 tie at distance 1; the lower index x1 wins, so the
    contributions are (1, -3), (0, -1), (-1, 0), (0, -1) and W = (0, -5) / 4.
    (Taking x2 instead would give W = (-1, -4) / 4.)
    """
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    y = np.array(["A", "B", "B", "A"])
    np.testing.assert_allclose(reference.relieff(X, y, 1), [0.0, -1.25], rtol=0, atol=1e-15)


def test_reference_relief_by_hand():
    """Relief's closed form (eq. (6)) with ties broken by the lower index.

    x0 = 0 "A", x1 = e1 "B", x2 = e2 "B", x3 = 2 e3 "A".  Anchor 0's misses x1, x2 tie
    (-> x1), anchor 3's misses x1, x2 tie at 3 (-> x1).  Contributions (1, 0, -2),
    (0, -1, 0), (-1, 0, 0), (1, 0, 0): z = (1, -1, -2) and w = (1, 0, 0).
    (The higher index would give z = (-1, 1, -2) and w = (0, 1, 0).)
    """
    X = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 2]], dtype=float)
    y = np.array(["A", "B", "B", "A"])
    np.testing.assert_allclose(reference.relief(X, y), [1.0, 0.0, 0.0], atol=1e-15)


def test_reference_relief_without_hits_and_all_negative_z():
    """A sample with no hit has hit term 0; z^+ = 0 gives the zero vector."""
    X = np.array([[0.0], [1.0], [3.0]])
    y = np.array([0, 1, 0])
    # z = |0-1| - |0-3| + |1-0| - 0 + |3-1| - |3-0| = -2 + 1 - 1 = -2
    np.testing.assert_array_equal(reference.relief(X, y), [0.0])
    X = np.array([[0.0], [1.0], [3.0]])
    y = np.array([0, 1, 2])  # nobody has a hit: z = 1 + 1 + 2 = 4 > 0
    np.testing.assert_array_equal(reference.relief(X, y), [1.0])


# ---------------------------------------------------------------------------
# The references: self-consistency
# ---------------------------------------------------------------------------


def test_reference_minmax_scale_is_affine_invariant(
    four_class_data_with_singleton_and_duplicates,
):
    """Scaling undoes any per-feature positive affine map and spans [0, 1]."""
    X, _ = four_class_data_with_singleton_and_duplicates
    rng = np.random.default_rng(0)
    shifted = rng.uniform(-3, 3, X.shape[1]) + rng.uniform(0.1, 5, X.shape[1]) * X
    scaled = reference.minmax_scale(X)
    np.testing.assert_allclose(reference.minmax_scale(shifted), scaled, atol=1e-12)
    constant = np.ptp(X, axis=0) == 0
    np.testing.assert_array_equal(scaled[:, constant], 0.0)
    np.testing.assert_allclose(scaled[:, ~constant].min(axis=0), 0.0, atol=0)
    np.testing.assert_allclose(scaled[:, ~constant].max(axis=0), 1.0, atol=1e-15)


@pytest.fixture(scope="module")
def continuous_data_without_ties():
    """30 x 4 scaled continuous data with three classes: no distance ties."""
    rng = np.random.default_rng(5)
    X, codes = _gaussian_classes(rng, [10, 10, 10], n_features=4, n_informative=2)
    return reference.minmax_scale(X), np.array(["u", "v", "w"])[codes]


def test_reference_irelief_small_sigma_is_relief(continuous_data_without_ties):
    """sigma -> 0 without outlier removal: one I-RELIEF step is RELIEF (§3.2).

    The paper: "if sigma -> 0, I-RELIEF is equivalent to iterating the original
    RELIEF (NM = NH = 1) provided that outlier removal is not considered".  With
    w0 uniform, ranking by d_w is ranking by Manhattan distance, so the soft-maxes
    become one-hot on NH and NM, and eq. (12) is eq. (6).  I-RELIEF-1 likewise
    becomes ReliefF with k = 1 (Section 4).
    """
    X, y = continuous_data_without_ties
    for binary in (False, True):
        keep = y != "w" if binary else np.ones(len(y), bool)
        step = reference.irelief(X[keep], y[keep], sigma=1e-6, max_iter=1, outliers=False)
        np.testing.assert_allclose(step["w"], reference.relief(X[keep], y[keep]), atol=1e-12)

    step = reference.irelief(X, y, sigma=1e-6, max_iter=1, outliers=False, multiclass="relieff")
    W = reference.relieff(X, y, n_neighbors=1)
    np.testing.assert_allclose(step["nu"], W, atol=1e-12)


def test_reference_irelief_infinite_sigma_converges_in_one_step(
    three_class_data_with_singleton_and_conflicting_duplicate,
):
    """sigma -> +inf: nu in eq. (12) no longer depends on w, so the second change is 0.

    The paper (§3.2): "if sigma -> +inf, I-RELIEF converges in one step because the
    term nu in (12) is a constant vector for any initial feature weights".  With
    uniform soft-maxes and gamma_n = 1, I-RELIEF-1's nu is ReliefF with k >= N.
    """
    X, y = three_class_data_with_singleton_and_conflicting_duplicate
    X = reference.minmax_scale(X)
    for mode in ("margin", "relieff"):
        result = reference.irelief(X, y, sigma=np.inf, tol=1e-12, multiclass=mode)
        assert result["n_iter"] == 2
        assert result["history"][1] == 0.0

    uniform = reference.irelief(
        X, y, sigma=np.inf, max_iter=1, outliers=False, multiclass="relieff"
    )
    np.testing.assert_allclose(
        uniform["nu"], reference.relieff(X, y, n_neighbors=len(y)), atol=1e-14
    )


def test_reference_online_irelief_one_pass_is_batch_average(
    four_class_data_with_singleton_and_duplicates,
):
    """With a = 1, eta_t = 1/(t + 1) and eq. (27) gives nu_T = sum_t pi_t / (T + 1).

    With sigma = inf the E-step does not depend on w, so one pass over all rows
    gives N / (N + 1) times the batch nu of eq. (11), and the same w (eq. (12)).
    """
    X, y = four_class_data_with_singleton_and_duplicates
    X = reference.minmax_scale(X)
    N = len(y)
    order = np.random.default_rng(1).permutation(N)
    for mode in ("margin", "relieff"):
        online = reference.online_irelief(X, y, order, sigma=np.inf, a=1.0, multiclass=mode)
        batch = reference.irelief(X, y, sigma=np.inf, max_iter=1, multiclass=mode)
        np.testing.assert_allclose(online["nu"], N / (N + 1) * batch["nu"], atol=1e-14)
        np.testing.assert_allclose(online["w"], batch["w"], atol=1e-12)


def test_reference_relieff_k1_binary_is_relief_z(binary_data_with_duplicate_row):
    """Binary ReliefF with k = 1 is z / N of Relief (the prior factor is 1).

    Hence its normalised positive part is Relief's w (eq. (6)).
    """
    X, y = binary_data_with_duplicate_row
    X = reference.minmax_scale(X)
    W = reference.relieff(X, y, n_neighbors=1)
    z_plus = np.maximum(W, 0.0)
    np.testing.assert_allclose(z_plus / np.linalg.norm(z_plus), reference.relief(X, y), atol=1e-14)


# ---------------------------------------------------------------------------
# The library against the references
# ---------------------------------------------------------------------------


def _assert_irelief_equal(estimator, expected):
    """Compare an IRelief fit with a reference.irelief result."""
    np.testing.assert_allclose(estimator.feature_importances_, expected["w"], rtol=0, atol=ATOL)
    assert estimator.n_iter_ == expected["n_iter"]
    assert isinstance(estimator.history_, np.ndarray)
    np.testing.assert_allclose(
        estimator.history_, np.asarray(expected["history"]), rtol=0, atol=ATOL
    )


@pytest.mark.parametrize("scale", [None, "minmax"])
@pytest.mark.parametrize("sigma", [0.5, 2.0, 10.0])
@pytest.mark.parametrize("outliers", [True, False])
@pytest.mark.parametrize("multiclass", ["margin", "relieff"])
def test_irelief_matches_reference(dmargin, dataset, multiclass, outliers, sigma, scale):
    """Five full updates (tol = 0): w, n_iter_, history_ as eqs. (8)-(12)."""
    X, y = dataset
    estimator = dmargin.IRelief(
        sigma=sigma,
        max_iter=5,
        tol=0.0,
        multiclass=multiclass,
        outliers=outliers,
        scale=scale,
    )
    _fit(estimator, X, y)
    expected = reference.irelief(
        _scaled(X, scale),
        y,
        sigma=sigma,
        max_iter=5,
        tol=0.0,
        multiclass=multiclass,
        outliers=outliers,
    )
    _assert_irelief_equal(estimator, expected)
    np.testing.assert_array_equal(estimator.classes_, np.unique(y))


@pytest.mark.parametrize("scale", [None, "minmax"])
@pytest.mark.parametrize("outliers", [True, False])
@pytest.mark.parametrize("multiclass", ["margin", "relieff"])
def test_irelief_stops_where_reference_stops(dmargin, dataset, multiclass, outliers, scale):
    """Default tol = 1e-3 with max_iter = 5: the stop of Fig. 2, step (6)."""
    X, y = dataset
    estimator = dmargin.IRelief(max_iter=5, multiclass=multiclass, outliers=outliers, scale=scale)
    _fit(estimator, X, y)
    expected = reference.irelief(
        _scaled(X, scale), y, max_iter=5, multiclass=multiclass, outliers=outliers
    )
    _assert_irelief_equal(estimator, expected)


@pytest.mark.parametrize("multiclass", ["margin", "relieff"])
def test_irelief_matches_reference_until_convergence(
    dmargin, larger_data_with_singleton_and_duplicates, multiclass
):
    """Default sigma, tol and max_iter on 122 rows: the loop stops where Fig. 2 does."""
    X, y = larger_data_with_singleton_and_duplicates
    estimator = _fit(dmargin.IRelief(multiclass=multiclass), X, y)
    expected = reference.irelief(reference.minmax_scale(X), y, multiclass=multiclass)
    _assert_irelief_equal(estimator, expected)


@pytest.mark.parametrize("outliers", [True, False])
def test_irelief_with_given_initial_weights(dmargin, dataset, outliers):
    """``init=array`` is w^(0), used as given (Fig. 2, step (1))."""
    X, y = dataset
    w0 = np.random.default_rng(3).uniform(0.2, 2.0, X.shape[1])
    estimator = dmargin.IRelief(sigma=1.0, max_iter=4, tol=0.0, outliers=outliers, init=w0)
    _fit(estimator, X, y)
    expected = reference.irelief(
        reference.minmax_scale(X),
        y,
        sigma=1.0,
        max_iter=4,
        tol=0.0,
        outliers=outliers,
        w0=w0,
    )
    np.testing.assert_allclose(estimator.feature_importances_, expected["w"], rtol=0, atol=ATOL)
    np.testing.assert_allclose(
        estimator.history_, np.asarray(expected["history"]), rtol=0, atol=ATOL
    )


def test_irelief_zero_weights(dmargin):
    """nu^+ = 0 (every hit farther than the misses): w = 0 after one update."""
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    y = np.array([0, 1, 0, 1])
    estimator = _fit(dmargin.IRelief(scale=None, tol=0.0), X, y)
    expected = reference.irelief(X, y, tol=0.0)
    np.testing.assert_array_equal(estimator.feature_importances_, expected["w"])
    assert estimator.n_iter_ == expected["n_iter"] == 1
    np.testing.assert_allclose(estimator.history_, expected["history"], rtol=0, atol=ATOL)


def test_irelief_string_and_integer_labels_agree(
    dmargin, four_class_data_with_singleton_and_duplicates
):
    """Relabelling the classes (strings -> integers) changes nothing but classes_."""
    X, y = four_class_data_with_singleton_and_duplicates
    codes = np.unique(y, return_inverse=True)[1] * 7 - 3
    for mode in ("margin", "relieff"):
        by_name = _fit(dmargin.IRelief(max_iter=3, tol=0.0, multiclass=mode), X, y)
        by_code = _fit(dmargin.IRelief(max_iter=3, tol=0.0, multiclass=mode), X, codes)
        np.testing.assert_allclose(
            by_name.feature_importances_,
            by_code.feature_importances_,
            rtol=0,
            atol=ATOL,
        )


def _check_online_irelief(dmargin, X, y, n_passes, block_size, shuffle, random_state, **params):
    """Fit OnlineIRelief and compare with reference.online_irelief over its order."""
    scale = params.pop("scale", "minmax")
    estimator = dmargin.OnlineIRelief(
        n_passes=n_passes,
        tol=0,
        scale=scale,
        block_size=block_size,
        shuffle=shuffle,
        random_state=random_state,
        **params,
    )
    _fit(estimator, X, y)
    order = _visiting_order(len(y), n_passes, block_size, shuffle, random_state)
    expected = reference.online_irelief(_scaled(X, scale), y, order, **params)
    np.testing.assert_allclose(estimator.feature_importances_, expected["w"], rtol=0, atol=ATOL)


@pytest.mark.parametrize("scale", [None, "minmax"])
@pytest.mark.parametrize("sigma", [0.5, 2.0, 10.0])
@pytest.mark.parametrize("outliers", [True, False])
@pytest.mark.parametrize("multiclass", ["margin", "relieff"])
def test_online_irelief_matches_reference(dmargin, dataset, multiclass, outliers, sigma, scale):
    """OnlineIRelief follows Fig. 3 with eta = 1/(a t + 1), eq. (27): two passes,
    shuffled 7-row blocks."""
    X, y = dataset
    _check_online_irelief(
        dmargin,
        X,
        y,
        n_passes=2,
        block_size=7,
        shuffle=True,
        random_state=0,
        sigma=sigma,
        a=10.0,
        outliers=outliers,
        multiclass=multiclass,
        scale=scale,
    )


@pytest.mark.parametrize(
    "block_size, shuffle, random_state",
    [(1, True, 5), (16, False, None), (16, True, 12345), (1000, True, 3)],
)
def test_online_irelief_visiting_order(dmargin, dataset, block_size, shuffle, random_state):
    """The anchors are visited block by block, each block permuted by one
    default_rng(random_state) per fit (or in row order without shuffle)."""
    X, y = dataset
    _check_online_irelief(
        dmargin,
        X,
        y,
        n_passes=2,
        block_size=block_size,
        shuffle=shuffle,
        random_state=random_state,
    )


@pytest.mark.parametrize("a", [0.5, 1.0, 10.0])
def test_online_irelief_default_passes_on_larger_data(
    dmargin, larger_data_with_singleton_and_duplicates, a
):
    """Three passes (the default), 50-row blocks, on 122 rows; several rates a."""
    X, y = larger_data_with_singleton_and_duplicates
    _check_online_irelief(
        dmargin, X, y, n_passes=3, block_size=50, shuffle=True, random_state=2, a=a
    )


@pytest.mark.parametrize("scale", [None, "minmax"])
@pytest.mark.parametrize("n_neighbors", [1, 3, 10, 100])
def test_relieff_matches_reference(dmargin, dataset_with_ties, n_neighbors, scale):
    """ReliefF equals the Weka-semantics brute force, ties by lower index."""
    X, y = dataset_with_ties
    estimator = _fit(dmargin.ReliefF(n_neighbors=n_neighbors, scale=scale), X, y)
    expected = reference.relieff(_scaled(X, scale), y, n_neighbors=n_neighbors)
    np.testing.assert_allclose(estimator.feature_importances_, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize("scale", [None, "minmax"])
def test_relief_matches_reference_binary(dmargin, binary_data_with_duplicate_row, scale):
    """Relief equals z^+ / ||z^+|| of eq. (6) on binary data."""
    X, y = binary_data_with_duplicate_row
    estimator = _fit(dmargin.Relief(scale=scale), X, y)
    expected = reference.relief(_scaled(X, scale), y)
    np.testing.assert_allclose(estimator.feature_importances_, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize("scale", [None, "minmax"])
def test_relief_matches_reference_with_ties(dmargin, integer_grid_data_with_ties, scale):
    """Relief with exact distance ties: NM over all other classes, lower index wins."""
    X, y = integer_grid_data_with_ties
    estimator = _fit(dmargin.Relief(scale=scale), X, y)
    expected = reference.relief(_scaled(X, scale), y)
    np.testing.assert_allclose(estimator.feature_importances_, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize("scale", [None, "minmax"])
def test_relief_matches_reference_multiclass(dmargin, multiclass_dataset, scale):
    """Relief on more than two classes: NM is the nearest sample of any other class."""
    X, y = multiclass_dataset
    estimator = _fit(dmargin.Relief(scale=scale), X, y)
    expected = reference.relief(_scaled(X, scale), y)
    np.testing.assert_allclose(estimator.feature_importances_, expected, rtol=0, atol=ATOL)


@pytest.fixture(scope="module")
def far_apart_data():
    """32 x 4, three classes (one a singleton) stretched by 1e3: distances ~1e4.

    With ``sigma = 0.5`` the logits ``-d / sigma`` are around -1e4, where a naive
    ``exp(-d / sigma)`` underflows to 0 for every candidate: only the
    log-sum-exp form of eqs. (8)-(10) gives finite probabilities (dmargin's rule).
    """
    rng = np.random.default_rng(11)
    X, codes = _gaussian_classes(rng, [15, 15, 1], n_features=4, n_informative=2)
    X = 1e3 * _raw_units(rng, X)
    X[:, 3] = 7.0
    labels = np.array(["p", "q", "r"])[codes]
    X = np.vstack([X, X[0]])
    labels = np.append(labels, "q" if labels[0] != "q" else "p")
    return X, labels


@pytest.mark.parametrize("outliers", [True, False])
@pytest.mark.parametrize("multiclass", ["margin", "relieff"])
def test_irelief_far_apart_points(dmargin, far_apart_data, multiclass, outliers):
    """Unscaled, far-apart points: IRelief stays finite and equals the reference."""
    X, y = far_apart_data
    expected = reference.irelief(
        X, y, sigma=0.5, max_iter=3, tol=0.0, multiclass=multiclass, outliers=outliers
    )
    assert np.all(np.isfinite(expected["w"]))
    estimator = dmargin.IRelief(
        sigma=0.5,
        max_iter=3,
        tol=0.0,
        multiclass=multiclass,
        outliers=outliers,
        scale=None,
    )
    _assert_irelief_equal(_fit(estimator, X, y), expected)


@pytest.mark.parametrize("multiclass", ["margin", "relieff"])
def test_online_irelief_far_apart_points(dmargin, far_apart_data, multiclass):
    """Unscaled, far-apart points: OnlineIRelief equals the reference."""
    X, y = far_apart_data
    _check_online_irelief(
        dmargin,
        X,
        y,
        n_passes=2,
        block_size=8,
        shuffle=True,
        random_state=4,
        sigma=0.5,
        multiclass=multiclass,
        scale=None,
    )


@pytest.mark.parametrize(
    "module", sorted(p.name for p in Path(__file__).parent.glob("reference*.py"))
)
def test_references_import_nothing_from_dmargin(module):
    # The oracles must not share the library's code: no import of dmargin at all.
    import ast

    tree = ast.parse((Path(__file__).parent / module).read_text())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not [name for name in imported if name.split(".")[0] in ("dmargin", "tests")]
