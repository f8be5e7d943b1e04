"""dmargin's IMMIGRATE family against the brute-force references.

Two groups of tests live here:

* checks of the references themselves (``tests/reference_immigrate.py``): tiny
  cases whose answer is worked out by hand in the test, and one identity each
  (symmetry and norm of ``Sigma`` and ``W``, the cost identity of eq. 3.11, the
  scale invariance that only log-sum-exp keeps exact, AdaBoost's re-weighting);
* the library (``Immigrate``, ``IM4E``, ``IM4EImmigrate``, ``BoostedImmigrate``)
  against the references to 1e-10 on small seeded data sets, each carrying corner
  rows (a constant feature, a duplicated row -- with the same and with a different
  label -- and a one-sample class), string labels, several sigmas, sample weights
  and a far-apart set where a naive ``exp(-q / sigma)`` underflows.

Equation and section numbers refer to R. Zhao, P. Hong, J. S. Liu, "IMMIGRATE: A
Margin-Based Feature Selection Method with Interaction Terms" (Entropy 22(3),
2020); IM4E is Bei & Hong (2015) as the authors' R package Immigrate 0.2.1
computes it.
"""

import functools
import warnings

import numpy as np
import pytest

try:  # tests/ as a package (tests/__init__.py present)
    from . import reference_immigrate as ref
except ImportError:  # tests/ as a plain directory on sys.path (pytest's default)
    import reference_immigrate as ref

ATOL = 1e-10
SIGMAS = [0.5, 1.0, 4.0]
STEPS = [1, 2, 3, 4, 5]

# ---------------------------------------------------------------------------
# Data (plain functions, cached, so that reference results can be cached too)
# ---------------------------------------------------------------------------


def _gaussian_classes(rng, class_sizes, n_features, n_informative, separation=1.5):
    """Return ``(X, codes)``: Gaussian classes whose means differ on a few features."""
    blocks, codes = [], []
    for code, size in enumerate(class_sizes):
        centre = np.zeros(n_features)
        centre[:n_informative] = rng.normal(0.0, separation, n_informative)
        blocks.append(centre + rng.normal(0.0, 1.0, (size, n_features)))
        codes.append(np.full(size, code))
    return np.vstack(blocks), np.concatenate(codes)


def _raw_units(rng, X):
    """Give every feature its own raw offset and range, so scaling matters."""
    offsets = rng.uniform(-3.0, 3.0, X.shape[1])
    spreads = rng.uniform(0.3, 2.0, X.shape[1])
    return offsets + spreads * X


def _held_out(rng, X):
    """Six new points: four near the data, an exact copy of row 3, one far away."""
    centre, spread = X.mean(axis=0), X.std(axis=0) + 0.5
    near = centre + spread * rng.normal(0.0, 1.0, (4, X.shape[1]))
    far = centre + 6.0 * spread
    return np.vstack([near, X[3], far])


@functools.cache
def _data(name):
    """Return ``(X, y, X_new, sample_weight)`` for a named data set (read-only arrays)."""
    if name == "binary":
        # 40 x 5, labels "no"/"yes"; constant feature 2; row 7 duplicated with its label
        rng = np.random.default_rng(20240601)
        X, codes = _gaussian_classes(rng, [20, 19], n_features=5, n_informative=2, separation=0.6)
        X = _raw_units(rng, X)
        X[:, 2] = 3.25
        y = np.array(["no", "yes"])[codes]
        order = rng.permutation(len(y))
        X, y = X[order], y[order]
        X = np.vstack([X, X[7]])
        y = np.append(y, y[7])
    elif name == "three_class":
        # 45 x 6, string labels; constant feature 0; a one-sample class "gamma";
        # a row duplicated with a *different* label
        rng = np.random.default_rng(7)
        X, codes = _gaussian_classes(rng, [22, 21, 1], n_features=6, n_informative=3)
        X = _raw_units(rng, X)
        X[:, 0] = -1.0
        y = np.array(["alpha", "beta", "gamma"])[codes]
        order = rng.permutation(len(y))
        X, y = X[order], y[order]
        source = int(np.flatnonzero(y == "alpha")[0])
        X = np.vstack([X, X[source]])
        y = np.append(y, "beta")
    elif name == "far_apart":
        # 24 x 3, integer labels, stretched by 1e3: q / sigma ~ 1e6, so a naive
        # exp(-q / sigma) is 0 for every candidate of every anchor
        rng = np.random.default_rng(11)
        X, codes = _gaussian_classes(rng, [12, 11, 1], n_features=3, n_informative=2)
        X = 1e3 * X
        y = np.array([3, 5, 9])[codes]
        order = rng.permutation(len(y))
        X, y = X[order], y[order]
    else:
        raise KeyError(name)
    X_new = _held_out(rng, X)
    sample_weight = rng.uniform(0.2, 3.0, len(y))
    for array in (X, y, X_new, sample_weight):
        array.flags.writeable = False
    return X, y, X_new, sample_weight


DATASETS = ["binary", "three_class"]


@pytest.fixture(params=DATASETS)
def dataset(request):
    """The name of each corner-case data set in turn."""
    return request.param


@functools.cache
def _reference_immigrate(name, sigma, weighted=False, scale=None, max_iter=5, tol=0.0):
    """Cached ``reference.immigrate`` on a named data set (no pruning, default W0)."""
    X, y, _, sample_weight = _data(name)
    X = ref.standard_scale(X) if scale == "standard" else X
    return ref.immigrate(
        X,
        y,
        sigma=sigma,
        max_iter=max_iter,
        tol=tol,
        sample_weight=sample_weight if weighted else None,
    )


@functools.cache
def _reference_im4e(name, sigma, lam=1.0, weight_update="reference", scale=None, weighted=False):
    """Cached five-step ``reference.im4e`` (tol = 0) on a named data set."""
    X, y, _, sample_weight = _data(name)
    X = ref.standard_scale(X) if scale == "standard" else X
    return ref.im4e(
        X,
        y,
        sigma=sigma,
        lam=lam,
        max_iter=5,
        tol=0.0,
        weight_update=weight_update,
        sample_weight=sample_weight if weighted else None,
    )


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


def _estimator(dmargin, name):
    """``dmargin.<name>``, or skip the test while it is not written yet."""
    if not hasattr(dmargin, name):
        pytest.skip(f"dmargin.{name} does not exist yet (IMMIGRATE family in progress)")
    return getattr(dmargin, name)


def _fit(estimator, X, y, **fit_params):
    """Fit ``estimator``; warnings are not what these tests check."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X, y, **fit_params)


def _softmax_rows(logits):
    """Row-wise soft-max with the maximum subtracted (test-side, vectorised)."""
    logits = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    return e / e.sum(axis=1, keepdims=True)


def _pairwise_z(X):
    """``Z[n, j] = |x_n - x_j|``, shape (N, N, A) (test-side, vectorised)."""
    return np.abs(X[:, None, :] - X[None, :, :])


def _entropy(p):
    """``-sum p log p`` over positive entries (test-side)."""
    p = p[p > 0]
    return -np.sum(p * np.log(p))


# ---------------------------------------------------------------------------
# The references on hand-checkable cases
# ---------------------------------------------------------------------------


@pytest.fixture
def unit_square():
    """Corners of the unit square; feature 0 separates classes, feature 1 does not.

    x0 = (0, 0), x1 = (0, 1) in class "a"; x2 = (1, 0), x3 = (1, 1) in class "b".
    """
    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = np.array(["a", "a", "b", "b"])
    return X, y


def test_reference_standard_scale_by_hand():
    """(x - mean) / population std per feature; a constant feature becomes 0."""
    X = np.array([[1.0, 5.0, -2.0], [3.0, 5.0, 2.0], [2.0, 5.0, 0.0]])
    s0, s2 = np.sqrt(2.0 / 3.0), np.sqrt(8.0 / 3.0)  # population stds of columns 0, 2
    expected = np.array([[-1 / s0, 0.0, -2 / s2], [1 / s0, 0.0, 2 / s2], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(ref.standard_scale(X), expected, rtol=0, atol=1e-15)
    # new rows are scaled with the statistics of the rows given as fitted_on
    new = np.array([[2.0, 7.0, 4.0]])
    np.testing.assert_allclose(
        ref.standard_scale(new, fitted_on=X),
        [[0.0, 0.0, 4.0 / s2]],
        rtol=0,
        atol=1e-15,
    )


@pytest.mark.parametrize("sigma", SIGMAS)
def test_reference_immigrate_step_unit_square_by_hand(unit_square, sigma):
    """One IMMIGRATE step from W0 = I / sqrt(2) (eqs. 3.6, 3.8, 3.17).

    Every anchor has one hit at z = (0, 1) (alpha = 1) and misses at z = (1, 0)
    (q = 1/sqrt2) and z = (1, 1) (q = sqrt2), so beta = (p, r) with
    p = 1 / (1 + exp(-1 / (sqrt2 sigma))), r = 1 - p, and
    Sigma_n = [[0, 0], [0, 1]] - p [[1, 0], [0, 0]] - r [[1, 1], [1, 1]]
            = [[-1, -r], [-r, p]];  Sigma = 4 Sigma_n.
    Sigma_n has one negative eigenvalue mu = ((p - 1) - sqrt((p + 1)^2 + 4 r^2)) / 2
    with eigenvector u ~ (r, -1 - mu) >= 0, so W = u u^T (nothing to clip) and
    E = 4 H(p) (hit entropy 0), cost = trace(W Sigma) + sigma E = 4 mu + 4 sigma H(p).
    """
    X, y = unit_square
    p = 1.0 / (1.0 + np.exp(-1.0 / (np.sqrt(2.0) * sigma)))
    r = 1.0 - p
    mu = ((p - 1.0) - np.sqrt((p + 1.0) ** 2 + 4.0 * r**2)) / 2.0
    u = np.array([r, -1.0 - mu])
    u /= np.linalg.norm(u)
    H = -(p * np.log(p) + r * np.log(r))

    step = ref.immigrate_step(X, y, np.eye(2) / np.sqrt(2.0), sigma=sigma)
    np.testing.assert_allclose(
        step["Sigma"], 4.0 * np.array([[-1.0, -r], [-r, p]]), rtol=0, atol=1e-14
    )
    np.testing.assert_allclose(step["W"], np.outer(u, u), rtol=0, atol=1e-14)
    np.testing.assert_allclose(step["entropy"], 4.0 * H, rtol=0, atol=1e-14)
    np.testing.assert_allclose(step["cost"], 4.0 * mu + 4.0 * sigma * H, rtol=0, atol=1e-13)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_reference_immigrate_step_without_hits_by_hand(sigma):
    """A sample with no hit contributes only its miss terms (as in the R package).

    One feature, x = 0, 1 ("a") and 3 ("b"), W = [[1]], so q = z^2.  Anchors 0 and 1
    have one hit and one miss: (1 - 9) + (1 - 4).  Anchor 2 has no hit and misses
    at q = 9, 4 with beta = softmax(-9/sigma, -4/sigma).  Sigma < 0, so W = [[1]];
    E = -sum beta log beta (anchor 2 only); cost = Sigma + sigma E.
    """
    X = np.array([[0.0], [1.0], [3.0]])
    y = np.array(["a", "a", "b"])
    b0 = 1.0 / (1.0 + np.exp((9.0 - 4.0) / sigma))
    b1 = 1.0 - b0
    sigma_matrix = (1.0 - 9.0) + (1.0 - 4.0) - (9.0 * b0 + 4.0 * b1)
    entropy = -(b0 * np.log(b0) + b1 * np.log(b1))

    step = ref.immigrate_step(X, y, np.array([[1.0]]), sigma=sigma)
    np.testing.assert_allclose(step["Sigma"], [[sigma_matrix]], rtol=0, atol=1e-14)
    np.testing.assert_allclose(step["W"], [[1.0]], rtol=0, atol=0)
    np.testing.assert_allclose(step["entropy"], entropy, rtol=0, atol=1e-14)
    np.testing.assert_allclose(step["cost"], sigma_matrix + sigma * entropy, rtol=0, atol=1e-13)


def test_reference_immigrate_without_negative_eigenvalue_keeps_w():
    """Every hit farther than every miss: Sigma >= 0, W~ = 0, the step returns None.

    x = 0, 1, 2, 3 on one feature, labels alternate: hits at z = 2, misses at
    z = 1 or 3 with the nearer miss dominating, so Sigma > 0.  ``immigrate`` keeps
    W0 (change 0, hence it stops after one step with tol > 0) and flags it.
    """
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0, 1, 0, 1])
    step = ref.immigrate_step(X, y, np.array([[1.0]]), sigma=1.0)
    assert step["Sigma"][0, 0] > 0
    assert step["W"] is None

    result = ref.immigrate(X, y, W0=np.array([[3.0]]))
    np.testing.assert_array_equal(result["W"], [[1.0]])
    assert result["warned"]
    assert result["n_iter"] == 1
    assert result["change"] == [0.0]


@pytest.mark.parametrize("sigma", SIGMAS)
def test_reference_decision_by_hand(unit_square, sigma):
    """Eq. 3.18 for x' = (0.25, 0) with W = I / sqrt(2).

    q to class "a": 0.0625/sqrt2, 1.0625/sqrt2; to class "b": 0.5625/sqrt2,
    1.5625/sqrt2; S_c = sum_k q_k e^{-q_k/sigma} / sum_k e^{-q_k/sigma}.
    """
    X, y = unit_square
    s2 = np.sqrt(2.0)

    def expected_distance(q_pair):
        weights = np.exp(-np.asarray(q_pair) / sigma)
        return np.sum(weights * q_pair) / np.sum(weights)

    S_a = expected_distance([0.0625 / s2, 1.0625 / s2])
    S_b = expected_distance([0.5625 / s2, 1.5625 / s2])
    S = ref.immigrate_decision(X, y, np.eye(2) / s2, sigma, [[0.25, 0.0]])
    np.testing.assert_allclose(S, [[S_a, S_b]], rtol=0, atol=1e-15)
    assert ref.predict_from_scores(np.unique(y), S)[0] == "a"
    proba = ref.proba_from_scores(S, sigma)
    np.testing.assert_allclose(
        proba[0, 0], 1.0 / (1.0 + np.exp(-(S_b - S_a) / sigma)), rtol=0, atol=1e-15
    )

    # leave-one-out at x0: class "a" is {x1} only, class "b" is {x2, x3}
    S_loo = ref.immigrate_decision(X, y, np.eye(2) / s2, sigma, X, loo=True)
    np.testing.assert_allclose(S_loo[0, 0], 1.0 / s2, rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        S_loo[0, 1], expected_distance([1.0 / s2, 2.0 / s2]), rtol=0, atol=1e-15
    )


def test_reference_decision_empty_class_is_never_predicted():
    """Leave-one-out at a one-sample class: that class's set is empty, S = +inf."""
    X = np.array([[0.0], [0.1], [5.0]])
    y = np.array(["a", "a", "b"])
    S = ref.immigrate_decision(X, y, np.array([[1.0]]), 1.0, X, loo=True)
    assert S[2, 1] == np.inf
    assert ref.predict_from_scores(np.unique(y), S)[2] == "a"
    np.testing.assert_array_equal(ref.proba_from_scores(S, 1.0)[2], [1.0, 0.0])


@pytest.mark.parametrize("sigma", SIGMAS)
@pytest.mark.parametrize("loo", [False, True])
def test_reference_decision_with_identity_uses_squared_euclidean(dataset, sigma, loo):
    """With W = I, q = z^T z = ||x - x'||^2: eq. 3.18 recomputed vectorised."""
    X, y, X_new, _ = _data(dataset)
    A = X.shape[1]
    points = X if loo else X_new
    squared = np.sum((points[:, None, :] - X[None, :, :]) ** 2, axis=2)
    classes = np.unique(y)
    expected = np.zeros((len(points), len(classes)))
    for c, label in enumerate(classes):
        member = np.broadcast_to(y == label, squared.shape).copy()
        if loo:
            np.fill_diagonal(member, False)
        for i in range(len(points)):
            q = squared[i, member[i]]
            if q.size == 0:
                expected[i, c] = np.inf
                continue
            a = _softmax_rows(-q[None, :] / sigma)[0]
            expected[i, c] = np.sum(a * q)
    S = ref.immigrate_decision(X, y, np.eye(A), sigma, points, loo=loo)
    np.testing.assert_allclose(S, expected, rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------------------
# The references: identities
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", SIGMAS)
def test_reference_step_sigma_and_w_properties(dataset, sigma):
    """Sigma is exactly symmetric; W is symmetric, nonnegative, ||W||_F = 1 (eq. 3.5)."""
    X, y, _, sample_weight = _data(dataset)
    A = X.shape[1]
    for D in (None, sample_weight):
        step = ref.immigrate_step(X, y, np.eye(A) / np.sqrt(A), sigma, sample_weight=D)
        np.testing.assert_array_equal(step["Sigma"], step["Sigma"].T)
        W = step["W"]
        np.testing.assert_allclose(W, W.T, rtol=0, atol=1e-15)
        assert np.all(W >= 0)
        np.testing.assert_allclose(np.sqrt(np.sum(W**2)), 1.0, rtol=0, atol=1e-14)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("sigma", SIGMAS)
def test_reference_cost_identity(dataset, sigma, weighted):
    """trace(W_new Sigma) = sum_n D_n (sum_H alpha q_new - sum_M beta q_new) (eq. 3.11).

    alpha, beta are recomputed vectorised from the step's input W (eq. 3.6), and
    q_new with the step's output W; the entropy E = sum_n D_n (E_miss - E_hit) is
    recomputed too, so ``cost`` is eq. 3.5 / 3.19 evaluated directly.
    """
    X, y, _, sample_weight = _data(dataset)
    N, A = X.shape
    D = sample_weight if weighted else np.ones(N)
    W_old = _reference_immigrate(dataset, sigma)["W_history"][1]
    step = ref.immigrate_step(X, y, W_old, sigma, sample_weight=D if weighted else None)
    W_new = step["W"]

    Z = _pairwise_z(X)
    q_old = np.einsum("nja,ab,njb->nj", Z, W_old, Z)
    q_new = np.einsum("nja,ab,njb->nj", Z, W_new, Z)
    margin, entropy = 0.0, 0.0
    for n in range(N):
        hit = (y == y[n]) & (np.arange(N) != n)
        miss = y != y[n]
        beta = _softmax_rows(-q_old[n, miss][None, :] / sigma)[0]
        margin -= D[n] * np.sum(beta * q_new[n, miss])
        entropy += D[n] * _entropy(beta)
        if hit.any():
            alpha = _softmax_rows(-q_old[n, hit][None, :] / sigma)[0]
            margin += D[n] * np.sum(alpha * q_new[n, hit])
            entropy -= D[n] * _entropy(alpha)

    scale = max(1.0, abs(margin))
    np.testing.assert_allclose(np.trace(W_new @ step["Sigma"]), margin, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(step["entropy"], entropy, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(step["cost"], margin + sigma * entropy, rtol=0, atol=1e-12 * scale)


def test_reference_is_exact_where_naive_exp_underflows():
    """Scaling X by c and sigma by c^2 leaves every logit -q/sigma unchanged.

    So W of a step is the same and the scores S of eq. 3.18 scale by c^2 -- even at
    c = 1e3, where exp(-q/sigma) of every candidate underflows to 0 (the R package
    returns NaN there; dmargin's log-sum-exp does not).
    """
    X, y, X_new, _ = _data("far_apart")
    small = X / 1e3
    A = X.shape[1]
    W0 = np.eye(A) / np.sqrt(A)
    sigma = 0.5
    q = np.einsum("nja,ab,njb->nj", _pairwise_z(X), W0, _pairwise_z(X))
    others = ~np.eye(len(y), dtype=bool)
    assert np.all(np.exp(-q[others] / (1e6 * sigma)) > 0)  # fine at the small scale
    assert np.all(np.exp(-q[others] / sigma) == 0)  # naive exp: nothing left

    big = ref.immigrate_step(X, y, W0, sigma)
    ref_small = ref.immigrate_step(small, y, W0, sigma / 1e6)
    np.testing.assert_allclose(big["W"], ref_small["W"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(big["Sigma"], 1e6 * ref_small["Sigma"], rtol=1e-12)
    np.testing.assert_allclose(big["entropy"], ref_small["entropy"], rtol=1e-12)

    W = big["W"]
    S_big = ref.immigrate_decision(X, y, W, sigma, X_new)
    S_small = ref.immigrate_decision(small, y, W, sigma / 1e6, X_new / 1e3)
    np.testing.assert_allclose(S_big, 1e6 * S_small, rtol=1e-12)

    w0 = np.ones(A) / A
    big4 = ref.im4e_step(X, y, w0, sigma)
    small4 = ref.im4e_step(small, y, w0, sigma / 1e3)
    np.testing.assert_allclose(big4["w"], small4["w"], rtol=0, atol=1e-12)


def test_reference_sample_weight_scale(dataset):
    """D = c (constant): Sigma, E and the cost scale by c, W does not (eq. 3.19)."""
    X, y, _, _ = _data(dataset)
    A = X.shape[1]
    W0 = np.eye(A) / np.sqrt(A)
    plain = ref.immigrate_step(X, y, W0, 1.0)
    weighted = ref.immigrate_step(X, y, W0, 1.0, sample_weight=np.full(len(y), 2.5))
    np.testing.assert_allclose(weighted["W"], plain["W"], rtol=0, atol=1e-14)
    np.testing.assert_allclose(weighted["Sigma"], 2.5 * plain["Sigma"], rtol=1e-13)
    np.testing.assert_allclose(weighted["cost"], 2.5 * plain["cost"], rtol=1e-13)


def test_reference_immigrate_loop_bookkeeping(dataset):
    """tol = 0 runs max_iter steps; changes are ||W_t - W_{t-1}||_F; W0 is normalised;
    pruning from step max_iter // 2 leaves no entry below the threshold."""
    X, y, _, _ = _data(dataset)
    A = X.shape[1]
    result = ref.immigrate(X, y, max_iter=4, tol=0.0, W0=7.0 * np.eye(A))
    assert result["n_iter"] == 4
    default = _reference_immigrate(dataset, 1.0)
    for t in range(4):
        np.testing.assert_allclose(
            result["W_history"][t], default["W_history"][t], rtol=0, atol=1e-14
        )
    previous = [np.eye(A) / np.sqrt(A)] + result["W_history"][:-1]
    for t in range(4):
        change = np.linalg.norm(result["W_history"][t] - previous[t])
        np.testing.assert_allclose(result["change"][t], change, rtol=0, atol=1e-15)

    stopped = ref.immigrate(X, y, max_iter=10, tol=np.inf)
    assert stopped["n_iter"] == 1

    prune = 1.0 / A
    pruned = ref.immigrate(X, y, max_iter=6, tol=0.0, prune=prune)
    np.testing.assert_array_equal(pruned["W_history"][:2], default["W_history"][:2])
    for W in pruned["W_history"][2:]:
        assert np.all((W == 0) | (W >= prune))
        np.testing.assert_allclose(np.linalg.norm(W), 1.0, rtol=0, atol=1e-14)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_reference_im4e_unit_square_by_hand(unit_square, sigma):
    """One IM4E step from w = (1/2, 1/2) (Bei & Hong 2015, the R package's step).

    Each anchor: hit at z = (0, 1); misses at d = 1/2 (z = (1, 0)) and d = 1
    (z = (1, 1)) with beta = (p, 1 - p), p = 1 / (1 + exp(-1 / (2 sigma))); so
    mbar - hbar = (1, -p), m = 4 (1, -p) and E = 4 H(p).
    "reference": w = m^+ / sum m^+ = (1, 0); cost = -4 + 4 sigma H(p) + lam.
    "simplex", lam = 10: m / (2 lam) = (0.2, -0.2 p) projects to
    (0.6 + 0.1 p, 0.4 - 0.1 p).
    """
    X, y = unit_square
    p = 1.0 / (1.0 + np.exp(-1.0 / (2.0 * sigma)))
    H = -(p * np.log(p) + (1 - p) * np.log(1 - p))
    m = 4.0 * np.array([1.0, -p])

    step = ref.im4e_step(X, y, np.array([0.5, 0.5]), sigma=sigma, lam=0.7)
    np.testing.assert_allclose(step["m"], m, rtol=0, atol=1e-14)
    np.testing.assert_allclose(step["w"], [1.0, 0.0], rtol=0, atol=0)
    np.testing.assert_allclose(step["entropy"], 4.0 * H, rtol=0, atol=1e-14)
    np.testing.assert_allclose(step["cost"], -4.0 + 4.0 * sigma * H + 0.7, rtol=0, atol=1e-13)

    simplex = ref.im4e_step(
        X, y, np.array([0.5, 0.5]), sigma=sigma, lam=10.0, weight_update="simplex"
    )
    w = np.array([0.6 + 0.1 * p, 0.4 - 0.1 * p])
    np.testing.assert_allclose(simplex["w"], w, rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        simplex["cost"],
        w @ (-m) + 4.0 * sigma * H + 10.0 * np.sum(w**2),
        rtol=0,
        atol=1e-13,
    )


def test_reference_simplex_projection_is_the_minimiser():
    """The projection lies on the simplex and is nearer to v than any other point
    of it (random simplex points and the vertices); KKT: w = (v - tau)^+."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        v = rng.normal(0.0, 2.0, 5)
        w = ref.project_onto_simplex(v)
        assert np.all(w >= 0)
        np.testing.assert_allclose(np.sum(w), 1.0, rtol=0, atol=1e-14)
        others = np.vstack([rng.dirichlet(np.ones(5), 200), np.eye(5)])
        assert np.all(np.sum((others - v) ** 2, axis=1) >= np.sum((w - v) ** 2) - 1e-12)
        support = w > 0
        tau = v[support] - w[support]
        np.testing.assert_allclose(tau, tau[0], rtol=0, atol=1e-14)
        assert np.all(v[~support] <= tau[0] + 1e-14)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_reference_im4e_cost_identity(dataset, sigma):
    """w_new . (-m) = sum_n (sum_H alpha d_new - sum_M beta d_new), alpha and beta
    recomputed vectorised with the step's input w; w_new >= 0 sums to 1."""
    X, y, _, _ = _data(dataset)
    N = len(y)
    w_old = _reference_im4e(dataset, sigma)["w_history"][1]
    step = ref.im4e_step(X, y, w_old, sigma)
    w_new = step["w"]
    assert np.all(w_new >= 0)
    np.testing.assert_allclose(np.sum(w_new), 1.0, rtol=0, atol=1e-14)
    Z = _pairwise_z(X)
    d_old, d_new = Z @ w_old, Z @ w_new
    margin = 0.0
    for n in range(N):
        hit = (y == y[n]) & (np.arange(N) != n)
        miss = y != y[n]
        margin -= np.sum(_softmax_rows(-d_old[n, miss][None, :] / sigma)[0] * d_new[n, miss])
        if hit.any():
            alpha = _softmax_rows(-d_old[n, hit][None, :] / sigma)[0]
            margin += np.sum(alpha * d_new[n, hit])
    np.testing.assert_allclose(w_new @ (-step["m"]), margin, rtol=1e-12)


def test_reference_im4e_immigrate_is_the_two_stages(dataset):
    """IM4E-IMMIGRATE = IM4E, screening w_j > 2/A, IMMIGRATE from diag(w_kept) (§3.6)."""
    X, y, _, _ = _data(dataset)
    A = X.shape[1]
    result = ref.im4e_immigrate(X, y, sigma=1.0, max_iter=3, tol=0.0)
    w = ref.im4e(X, y, sigma=1.0, max_iter=3, tol=0.0)["w"]
    np.testing.assert_array_equal(result["features"], np.flatnonzero(w > 2.0 / A))
    kept = result["features"]
    stage2 = ref.immigrate(X[:, kept], y, sigma=1.0, max_iter=3, tol=0.0, W0=np.diag(w[kept]))
    np.testing.assert_array_equal(result["W"], stage2["W"])
    expected = np.zeros(A)
    expected[kept] = np.diag(stage2["W"])
    np.testing.assert_array_equal(result["importances"], expected)


@functools.cache
def _reference_bim(name, n_estimators, max_iter=2, scale=None):
    """Cached ``reference.bim`` on a named data set."""
    X, y, _, _ = _data(name)
    X = ref.standard_scale(X) if scale == "standard" else X
    return ref.bim(X, y, n_estimators, max_iter=max_iter)


def test_reference_bim_identities(dataset):
    """Algorithm 3: sigma schedule, first learner, AdaBoost's re-weighting, the vote.

    * sigma_t = 4 (0.2 / 4)^((t - 1) / T);
    * D_1 is uniform, so learner 1 is plain IMMIGRATE at sigma = 4 (W does not
      depend on a constant D, eq. 3.19);
    * after a kept round, h_t has weighted error sqrt(e (1 - e)) / (sqrt(e (1 - e))
      + 1 - e) under D_{t+1} (e = eps_t; only mistakes are multiplied, by
      e^alpha_t); after a discarded round D is unchanged;
    * with the kept learners' alphas, the votes of bim_predict add up to sum alpha.
    """
    X, y, X_new, _ = _data(dataset)
    T = 4
    model = _reference_bim(dataset, T)
    np.testing.assert_allclose(
        model["sigmas"], 4.0 * 0.05 ** (np.arange(T) / T), rtol=1e-15, atol=0
    )
    first = ref.immigrate(X, y, sigma=4.0, max_iter=2, tol=0.0)["W"]
    if 0 in model["kept"]:
        np.testing.assert_allclose(model["estimators"][0][0], first, rtol=0, atol=1e-13)

    classes = np.unique(y)
    D = np.full(len(y), 1.0 / len(y))
    for t in range(T):
        W_t = ref.immigrate(X, y, sigma=model["sigmas"][t], max_iter=2, tol=0.0, sample_weight=D)[
            "W"
        ]
        h = ref.predict_from_scores(
            classes, ref.immigrate_decision(X, y, W_t, model["sigmas"][t], X, loo=True)
        )
        wrong = h != y
        eps = np.sum(D[wrong])
        np.testing.assert_allclose(model["errors"][t], eps, rtol=0, atol=1e-15)
        if 0 < eps < 0.5:
            D = D * np.exp(0.5 * np.log((1 - eps) / eps) * wrong)
            D = D / D.sum()
            # Algorithm 3 multiplies only the mistakes by e^alpha = sqrt((1 - eps) / eps)
            root = np.sqrt(eps * (1 - eps))
            np.testing.assert_allclose(
                np.sum(D[wrong]), root / (root + 1 - eps), rtol=0, atol=1e-14
            )
    np.testing.assert_allclose(model["D"], D, rtol=0, atol=1e-15)
    assert len(model["kept"]) > 0

    votes = ref.bim_predict(X, y, model, X_new)["votes"]
    np.testing.assert_allclose(votes.sum(axis=1), np.sum(model["estimator_weights"]), rtol=1e-14)


def test_reference_bim_discards_perfect_learners():
    """Two well-separated clusters: every leave-one-out error is 0, so every learner
    is discarded (eps_t = 0) and every vote is 0 -- the first class wins the tie."""
    X = np.array([[0.0, 0.0], [0.1, 0.2], [0.2, 0.1], [5.0, 5.0], [5.1, 5.2], [5.2, 5.1]])
    y = np.array(["left", "left", "left", "right", "right", "right"])
    model = ref.bim(X, y, 3)
    assert model["errors"] == [0.0, 0.0, 0.0]
    assert model["kept"] == []
    np.testing.assert_array_equal(model["D"], np.full(6, 1.0 / 6.0))
    prediction = ref.bim_predict(X, y, model, [[5.0, 5.0]])["predictions"]
    np.testing.assert_array_equal(prediction, ["left"])


# ---------------------------------------------------------------------------
# The library against the references: Immigrate
# ---------------------------------------------------------------------------


def _assert_history(estimator, expected, k):
    """n_iter_, history_["cost"], history_["change"] against the first k reference steps."""
    assert estimator.n_iter_ == k
    history = estimator.history_
    assert isinstance(history, np.ndarray)
    assert history.shape == (k,)
    cost = np.asarray(expected["cost"][:k])
    np.testing.assert_allclose(
        history["cost"], cost, rtol=0, atol=ATOL * max(1.0, np.max(np.abs(cost)))
    )
    np.testing.assert_allclose(history["change"], expected["change"][:k], rtol=0, atol=ATOL)


@pytest.mark.parametrize("k", STEPS)
@pytest.mark.parametrize("sigma", SIGMAS)
def test_immigrate_matches_reference(dmargin, dataset, sigma, k):
    """k steps (tol = 0, no scaling): W, its diagonal, n_iter_ and history_."""
    X, y, _, _ = _data(dataset)
    estimator = _estimator(dmargin, "Immigrate")(sigma=sigma, max_iter=k, tol=0.0, scale=None)
    _fit(estimator, X, y)
    expected = _reference_immigrate(dataset, sigma)
    W = expected["W_history"][k - 1]
    np.testing.assert_allclose(estimator.weight_matrix_, W, rtol=0, atol=ATOL)
    np.testing.assert_allclose(estimator.feature_importances_, np.diag(W), rtol=0, atol=ATOL)
    _assert_history(estimator, expected, k)
    np.testing.assert_array_equal(estimator.classes_, np.unique(y))


def _assert_scores(estimator, S, sigma, classes, X_new):
    """decision_function, predict_proba and predict against reference scores S."""
    if len(classes) == 2:
        decision = (S[:, 0] - S[:, 1]) / sigma
    else:
        decision = -S / sigma
    np.testing.assert_allclose(estimator.decision_function(X_new), decision, rtol=1e-12, atol=ATOL)
    np.testing.assert_allclose(
        estimator.predict_proba(X_new), ref.proba_from_scores(S, sigma), rtol=0, atol=ATOL
    )
    np.testing.assert_array_equal(estimator.predict(X_new), ref.predict_from_scores(classes, S))


@pytest.mark.parametrize("sigma", SIGMAS)
def test_immigrate_predictions_match_reference(dmargin, dataset, sigma):
    """Eq. 3.18 on held-out points (one a copy of a training row, one far away)."""
    X, y, X_new, _ = _data(dataset)
    estimator = _estimator(dmargin, "Immigrate")(sigma=sigma, max_iter=5, tol=0.0, scale=None)
    _fit(estimator, X, y)
    W = _reference_immigrate(dataset, sigma)["W"]
    S = ref.immigrate_decision(X, y, W, sigma, X_new)
    _assert_scores(estimator, S, sigma, np.unique(y), X_new)


def test_immigrate_standard_scaling(dmargin, dataset):
    """scale="standard": (x - mean) / population std of the training rows; constant
    features become 0; new points use the training statistics."""
    X, y, X_new, _ = _data(dataset)
    estimator = _estimator(dmargin, "Immigrate")(sigma=1.0, max_iter=5, tol=0.0)
    _fit(estimator, X, y)
    expected = _reference_immigrate(dataset, 1.0, scale="standard")
    np.testing.assert_allclose(estimator.weight_matrix_, expected["W"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, 5)
    Xs = ref.standard_scale(X)
    S = ref.immigrate_decision(Xs, y, expected["W"], 1.0, ref.standard_scale(X_new, fitted_on=X))
    _assert_scores(estimator, S, 1.0, np.unique(y), X_new)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_immigrate_sample_weight_matches_reference(dmargin, dataset, sigma):
    """fit(sample_weight=D): eq. 3.19, D weighting margin and entropy terms, as given."""
    X, y, _, sample_weight = _data(dataset)
    estimator = _estimator(dmargin, "Immigrate")(sigma=sigma, max_iter=5, tol=0.0, scale=None)
    _fit(estimator, X, y, sample_weight=np.array(sample_weight))
    expected = _reference_immigrate(dataset, sigma, weighted=True)
    np.testing.assert_allclose(estimator.weight_matrix_, expected["W"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, 5)


def test_immigrate_initial_matrix_is_normalised(dmargin, dataset):
    """init=array: W0 / ||W0||_F (dmargin's choice; the R package uses W0 as given)."""
    X, y, _, _ = _data(dataset)
    A = X.shape[1]
    rng = np.random.default_rng(8)
    W0 = rng.uniform(0.0, 3.0, (A, A))
    W0 = W0 + W0.T
    estimator = _estimator(dmargin, "Immigrate")(
        sigma=1.0, max_iter=3, tol=0.0, init=W0, scale=None
    )
    _fit(estimator, X, y)
    expected = ref.immigrate(X, y, sigma=1.0, max_iter=3, tol=0.0, W0=W0)
    np.testing.assert_allclose(estimator.weight_matrix_, expected["W"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, 3)


@pytest.mark.parametrize("max_iter", [2, 5])
def test_immigrate_pruning_matches_reference(dmargin, dataset, max_iter):
    """prune=1/A from step max_iter // 2 on, renormalised (§3.4.3); the cost in
    history_ is eq. 3.5 at the pruned W_t."""
    X, y, _, _ = _data(dataset)
    prune = 1.0 / X.shape[1]
    estimator = _estimator(dmargin, "Immigrate")(
        sigma=1.0, max_iter=max_iter, tol=0.0, prune=prune, scale=None
    )
    _fit(estimator, X, y)
    expected = ref.immigrate(X, y, sigma=1.0, max_iter=max_iter, tol=0.0, prune=prune)
    np.testing.assert_allclose(estimator.weight_matrix_, expected["W"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, max_iter)


def test_immigrate_defaults_run_the_papers_ten_steps(dmargin, dataset):
    """Defaults tol = 0 and max_iter = 10: exactly 10 steps, the reference's W after 10."""
    X, y, _, _ = _data(dataset)
    estimator = _estimator(dmargin, "Immigrate")(scale=None)
    _fit(estimator, X, y)
    expected = _reference_immigrate(dataset, 1.0, max_iter=10, tol=0.0)
    assert expected["n_iter"] == 10
    np.testing.assert_allclose(estimator.weight_matrix_, expected["W"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, 10)


def test_immigrate_tol_stops_where_reference_stops(dmargin, dataset):
    """The opt-in check, tol = 1e-4 and max_iter = 10: the same number of steps and W."""
    X, y, _, _ = _data(dataset)
    estimator = _estimator(dmargin, "Immigrate")(scale=None, tol=1e-4)
    _fit(estimator, X, y)
    expected = _reference_immigrate(dataset, 1.0, max_iter=10, tol=1e-4)
    np.testing.assert_allclose(estimator.weight_matrix_, expected["W"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, expected["n_iter"])


@pytest.mark.parametrize("k", [1, 3])
def test_immigrate_far_apart_points(dmargin, k):
    """Unscaled points 1e3 apart, sigma = 0.5: a naive exp(-q / sigma) is 0 for every
    candidate (the R package gives NaN); the library must still be exact."""
    X, y, X_new, sample_weight = _data("far_apart")
    Immigrate = _estimator(dmargin, "Immigrate")
    estimator = _fit(Immigrate(sigma=0.5, max_iter=k, tol=0.0, scale=None), X, y)
    expected = _reference_immigrate("far_apart", 0.5)
    assert np.all(np.isfinite(expected["W"]))
    np.testing.assert_allclose(
        estimator.weight_matrix_, expected["W_history"][k - 1], rtol=0, atol=ATOL
    )
    _assert_history(estimator, expected, k)
    S = ref.immigrate_decision(X, y, expected["W_history"][k - 1], 0.5, X_new)
    _assert_scores(estimator, S, 0.5, np.unique(y), X_new)

    weighted = Immigrate(sigma=0.5, max_iter=k, tol=0.0, scale=None)
    _fit(weighted, X, y, sample_weight=np.array(sample_weight))
    expected = _reference_immigrate("far_apart", 0.5, weighted=True)
    np.testing.assert_allclose(
        weighted.weight_matrix_, expected["W_history"][k - 1], rtol=0, atol=ATOL
    )


def test_immigrate_without_negative_eigenvalue_keeps_w_and_warns(dmargin):
    """Sigma >= 0 (every hit farther than the misses): W~ = 0, the previous W is
    kept with a warning and never NaN (dmargin's rule).

    (Whether that step is counted in n_iter_ / history_ is not pinned down by the
    contract, so it is not asserted here.)
    """
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0, 1, 0, 1])
    estimator = _estimator(dmargin, "Immigrate")(scale=None, max_iter=3, tol=0.0)
    with pytest.warns(Warning):
        estimator.fit(X, y)
    expected = ref.immigrate(X, y, max_iter=3, tol=0.0)
    assert expected["warned"]
    np.testing.assert_array_equal(estimator.weight_matrix_, expected["W"])


def test_immigrate_interactions_table(dmargin, dataset):
    """interactions_: every pair i < j once, W[i, j] as weight, ranked by weight."""
    X, y, _, _ = _data(dataset)
    estimator = _estimator(dmargin, "Immigrate")(sigma=1.0, max_iter=5, tol=0.0, scale=None)
    _fit(estimator, X, y)
    table = estimator.interactions_
    W = _reference_immigrate(dataset, 1.0)["W"]
    A = X.shape[1]
    assert {"feature_i", "feature_j", "i", "j", "weight"} <= set(table.columns)
    pairs = list(zip(table["i"].to_numpy(), table["j"].to_numpy(), strict=True))
    assert sorted(pairs) == [(i, j) for i in range(A) for j in range(i + 1, A)]
    expected = np.array([W[i, j] for i, j in pairs])
    np.testing.assert_allclose(table["weight"].to_numpy(), expected, rtol=0, atol=ATOL)
    assert np.all(np.diff(table["weight"].to_numpy()) <= ATOL)


# ---------------------------------------------------------------------------
# The library against the references: IM4E and IM4E-IMMIGRATE
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "weight_update, lam",
    [("reference", 1.0), ("reference", 0.3), ("simplex", 1.0), ("simplex", 5.0)],
)
@pytest.mark.parametrize("sigma", SIGMAS)
def test_im4e_matches_reference(dmargin, dataset, sigma, weight_update, lam):
    """k = 1..5 steps (tol = 0): w, n_iter_, history_ (cost with lam ||w||^2)."""
    X, y, _, _ = _data(dataset)
    IM4E = _estimator(dmargin, "IM4E")
    expected = _reference_im4e(dataset, sigma, lam, weight_update)
    for k in STEPS:
        estimator = IM4E(
            sigma=sigma,
            lam=lam,
            max_iter=k,
            tol=0.0,
            weight_update=weight_update,
            scale=None,
        )
        _fit(estimator, X, y)
        np.testing.assert_allclose(
            estimator.feature_importances_,
            expected["w_history"][k - 1],
            rtol=0,
            atol=ATOL,
        )
        _assert_history(estimator, expected, k)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_im4e_predictions_match_reference(dmargin, dataset, sigma):
    """Eq. 3.18 with the weighted Manhattan distance d = w^T |x - x_k|."""
    X, y, X_new, _ = _data(dataset)
    estimator = _estimator(dmargin, "IM4E")(sigma=sigma, max_iter=5, tol=0.0, scale=None)
    _fit(estimator, X, y)
    w = _reference_im4e(dataset, sigma)["w"]
    S = ref.im4e_decision(X, y, w, sigma, X_new)
    _assert_scores(estimator, S, sigma, np.unique(y), X_new)


def test_im4e_standard_scaling_and_far_apart(dmargin, dataset):
    """scale="standard" on the corner sets; scale=None on the far-apart set."""
    X, y, X_new, _ = _data(dataset)
    IM4E = _estimator(dmargin, "IM4E")
    estimator = _fit(IM4E(sigma=1.0, max_iter=5, tol=0.0), X, y)
    expected = _reference_im4e(dataset, 1.0, scale="standard")
    np.testing.assert_allclose(estimator.feature_importances_, expected["w"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, 5)
    S = ref.im4e_decision(
        ref.standard_scale(X), y, expected["w"], 1.0, ref.standard_scale(X_new, fitted_on=X)
    )
    _assert_scores(estimator, S, 1.0, np.unique(y), X_new)

    X, y, X_new, _ = _data("far_apart")
    estimator = _fit(IM4E(sigma=0.5, max_iter=5, tol=0.0, scale=None), X, y)
    expected = _reference_im4e("far_apart", 0.5)
    np.testing.assert_allclose(estimator.feature_importances_, expected["w"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, 5)
    S = ref.im4e_decision(X, y, expected["w"], 0.5, X_new)
    _assert_scores(estimator, S, 0.5, np.unique(y), X_new)


@pytest.mark.parametrize("weight_update", ["reference", "simplex"])
@pytest.mark.parametrize("sigma", SIGMAS)
def test_im4e_sample_weight_matches_reference(dmargin, dataset, sigma, weight_update):
    """fit(sample_weight=D): m = sum_n D_n (mbar_n - hbar_n), E weighted alike."""
    X, y, _, sample_weight = _data(dataset)
    estimator = _estimator(dmargin, "IM4E")(
        sigma=sigma, max_iter=5, tol=0.0, weight_update=weight_update, scale=None
    )
    _fit(estimator, X, y, sample_weight=np.array(sample_weight))
    expected = _reference_im4e(dataset, sigma, 1.0, weight_update, weighted=True)
    np.testing.assert_allclose(estimator.feature_importances_, expected["w"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, 5)


def test_im4e_without_positive_m_keeps_w_and_warns(dmargin):
    """m^+ = 0 (every hit farther than the misses): the previous w is kept with a
    warning, never NaN (dmargin's rule).  (Whether that step counts in n_iter_ /
    history_ is not pinned down by the contract, so it is not asserted.)"""
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    y = np.array([0, 1, 0, 1])
    step = ref.im4e_step(X, y, np.array([0.5, 0.5]))
    assert np.all(step["m"] < 0) and step["w"] is None
    estimator = _estimator(dmargin, "IM4E")(scale=None, max_iter=3, tol=0.0)
    with pytest.warns(Warning):
        estimator.fit(X, y)
    expected = ref.im4e(X, y, max_iter=3, tol=0.0)
    assert expected["warned"]
    np.testing.assert_array_equal(estimator.feature_importances_, expected["w"])


def test_im4e_defaults_run_ten_steps(dmargin, dataset):
    """Defaults tol = 0, max_iter = 10: exactly 10 steps, as the reference's 10."""
    X, y, _, _ = _data(dataset)
    estimator = _fit(_estimator(dmargin, "IM4E")(scale=None), X, y)
    expected = ref.im4e(X, y, tol=0.0)
    assert expected["n_iter"] == 10
    np.testing.assert_allclose(estimator.feature_importances_, expected["w"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, 10)


def test_im4e_tol_stops_where_reference_stops(dmargin, dataset):
    """The opt-in check, tol = 1e-4, max_iter = 10."""
    X, y, _, _ = _data(dataset)
    estimator = _fit(_estimator(dmargin, "IM4E")(scale=None, tol=1e-4), X, y)
    expected = ref.im4e(X, y, tol=1e-4)
    np.testing.assert_allclose(estimator.feature_importances_, expected["w"], rtol=0, atol=ATOL)
    _assert_history(estimator, expected, expected["n_iter"])


def _check_im4e_immigrate(dmargin, name, sigma, threshold):
    """Fit IM4EImmigrate and compare it with reference.im4e_immigrate."""
    X, y, X_new, _ = _data(name)
    estimator = _estimator(dmargin, "IM4EImmigrate")(
        threshold=threshold, sigma=sigma, max_iter=4, tol=0.0, scale=None
    )
    _fit(estimator, X, y)
    expected = ref.im4e_immigrate(X, y, threshold=threshold, sigma=sigma, max_iter=4, tol=0.0)
    np.testing.assert_array_equal(estimator.features_, expected["features"])
    np.testing.assert_allclose(estimator.weight_matrix_, expected["W"], rtol=0, atol=ATOL)
    np.testing.assert_allclose(
        estimator.feature_importances_, expected["importances"], rtol=0, atol=ATOL
    )
    _assert_history(estimator, expected["immigrate"], 4)
    kept = expected["features"]
    S = ref.immigrate_decision(X[:, kept], y, expected["W"], sigma, X_new[:, kept])
    _assert_scores(estimator, S, sigma, np.unique(y), X_new)
    return expected


@pytest.mark.parametrize(
    "name, threshold",
    [("three_class", None), ("three_class", 0.05), ("binary", 0.1), ("binary", 0.25)],
)
@pytest.mark.parametrize("sigma", SIGMAS)
def test_im4e_immigrate_matches_reference(dmargin, name, sigma, threshold):
    """Kept features (w_j > threshold, default 2/A), W over them from diag(w_kept),
    importances zero outside features_, history_ (IMMIGRATE's), and predictions on
    held-out points.  In these cases at least two features pass the threshold."""
    expected = _check_im4e_immigrate(dmargin, name, sigma, threshold)
    assert len(expected["features"]) >= 2


@pytest.mark.parametrize("sigma", SIGMAS)
def test_im4e_immigrate_single_feature_above_default_threshold(dmargin, sigma):
    """Binary set, default threshold 2/A = 0.4: only feature 1 has w_j > 0.4
    (w ~ (0.30, 0.53-0.72, 0, 0.01-0.17, 0)), so the contract keeps exactly that
    feature and IMMIGRATE runs on a 1 x 1 W."""
    expected = _check_im4e_immigrate(dmargin, "binary", sigma, None)
    np.testing.assert_array_equal(expected["features"], [1])


# ---------------------------------------------------------------------------
# The library against the references: BoostedImmigrate (BIM)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_estimators, max_iter", [(1, 2), (4, 2), (3, 5)])
def test_boosted_immigrate_matches_reference(dmargin, dataset, n_estimators, max_iter):
    """Algorithm 3: kept learners' alpha_t, their W and sigma_t, and the weighted
    vote on held-out and training points (scale=None).  On the three-class set the
    singleton class is never predicted leave-one-out, and round 4 of 4 has
    eps_t > 1/2 and is discarded."""
    X, y, X_new, _ = _data(dataset)
    BoostedImmigrate = _estimator(dmargin, "BoostedImmigrate")
    estimator = BoostedImmigrate(n_estimators=n_estimators, max_iter=max_iter, scale=None)
    _fit(estimator, X, y)
    model = _reference_bim(dataset, n_estimators, max_iter=max_iter)
    np.testing.assert_allclose(
        np.asarray(estimator.estimator_weights_, dtype=float),
        model["estimator_weights"],
        rtol=0,
        atol=ATOL,
    )
    assert len(estimator.estimators_) == len(model["estimators"])
    for learner, (W_t, sigma_t) in zip(estimator.estimators_, model["estimators"], strict=True):
        np.testing.assert_allclose(learner.weight_matrix_, W_t, rtol=0, atol=ATOL)
        np.testing.assert_allclose(learner.sigma, sigma_t, rtol=1e-15, atol=0)
    for points in (X_new, X):
        np.testing.assert_array_equal(
            estimator.predict(points), ref.bim_predict(X, y, model, points)["predictions"]
        )


def test_boosted_immigrate_standard_scaling(dmargin):
    """BoostedImmigrate with its default scale="standard" on the binary set."""
    X, y, X_new, _ = _data("binary")
    BoostedImmigrate = _estimator(dmargin, "BoostedImmigrate")
    estimator = _fit(BoostedImmigrate(n_estimators=3, max_iter=2), X, y)
    model = _reference_bim("binary", 3, scale="standard")
    np.testing.assert_allclose(
        np.asarray(estimator.estimator_weights_, dtype=float),
        model["estimator_weights"],
        rtol=0,
        atol=ATOL,
    )
    Xs = ref.standard_scale(X)
    np.testing.assert_array_equal(
        estimator.predict(X_new),
        ref.bim_predict(Xs, y, model, ref.standard_scale(X_new, fitted_on=X))["predictions"],
    )


def test_boosted_immigrate_discards_perfect_learners(dmargin):
    """Two well-separated clusters: every round has leave-one-out error 0 and is
    discarded (Algorithm 3: "if eps_t >= 1/2 or eps_t = 0 then discard h_t").  The
    reference then keeps no learner; the library documents its fallback: the
    round with the smallest error is kept with weight 1 (a warning says so), so
    it predicts like that single IMMIGRATE learner instead of a constant class."""
    X = np.array([[0.0, 0.0], [0.1, 0.2], [0.2, 0.1], [5.0, 5.0], [5.1, 5.2], [5.2, 5.1]])
    y = np.array(["left", "left", "left", "right", "right", "right"])
    model = ref.bim(X, y, 3)
    assert model["kept"] == []
    BoostedImmigrate = _estimator(dmargin, "BoostedImmigrate")
    with pytest.warns(RuntimeWarning, match="Every boosting round was discarded"):
        estimator = BoostedImmigrate(n_estimators=3, scale=None).fit(X, y)
    assert len(estimator.estimators_) == 1
    np.testing.assert_array_equal(estimator.estimator_weights_, [1.0])
    learner = ref.immigrate(X, y, sigma=4.0, max_iter=5, tol=0.0)
    np.testing.assert_allclose(estimator.estimators_[0].weight_matrix_, learner["W"], atol=1e-10)
    np.testing.assert_array_equal(estimator.predict(X), y)


@pytest.mark.parametrize("sigma", [0.5, 4.0])
def test_prediction_sigma_reproduces_the_reference_package_rule(blobs_binary, sigma):
    """``prediction_sigma=1`` scores with sigma 1 whatever was fitted (the R package)."""
    import dmargin

    X, y = blobs_binary
    est = dmargin.Immigrate(sigma=sigma, max_iter=3, tol=0, scale=None, prediction_sigma=1.0).fit(
        X, y
    )
    S = ref.immigrate_decision(X, y, est.weight_matrix_, 1.0, X[:15])
    np.testing.assert_array_equal(est.predict(X[:15]), ref.predict_from_scores(est.classes_, S))
    np.testing.assert_allclose(
        est.predict_proba(X[:15]), ref.proba_from_scores(S, 1.0), rtol=1e-10, atol=1e-12
    )
    default = dmargin.Immigrate(sigma=sigma, max_iter=3, tol=0, scale=None).fit(X, y)
    np.testing.assert_array_equal(default.weight_matrix_, est.weight_matrix_)


def test_prediction_sigma_set_after_fit_equals_a_fit_with_it(blobs_binary):
    """The prediction sigma only enters eq. 3.18, so it can be tuned on one fitted W."""
    import dmargin

    X, y = blobs_binary
    fitted = dmargin.Immigrate(sigma=2.0, max_iter=3, tol=0, scale=None).fit(X[:60], y[:60])
    for sp in (4.0, 1.0, 0.25):
        fresh = dmargin.Immigrate(
            sigma=2.0, max_iter=3, tol=0, scale=None, prediction_sigma=sp
        ).fit(X[:60], y[:60])
        fitted.set_params(prediction_sigma=sp)
        np.testing.assert_array_equal(fitted.weight_matrix_, fresh.weight_matrix_)
        np.testing.assert_array_equal(
            fitted.decision_function(X[60:]), fresh.decision_function(X[60:])
        )
        S = ref.immigrate_decision(X[:60], y[:60], fitted.weight_matrix_, sp, X[60:])
        np.testing.assert_array_equal(
            fitted.predict(X[60:]), ref.predict_from_scores(fitted.classes_, S)
        )
