"""LDM, LDM-RFE and SVM-RFE: references, the paper's identities, modes, odd input."""

import dask.array as da
import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from dmargin.engine import _numba, quadratic
from dmargin.engine.execution import prepare_rows
from dmargin.engine.kernels import rbf
from dmargin.ldm._machine import LDM
from dmargin.ldm._rfe import LDMRFE, SVMRFE
from dmargin.ldm._solvers import dual_matrices, fit_machines

try:  # tests/ as a package (tests/__init__.py present)
    from . import reference_ldm as ref
except ImportError:  # tests/ as a plain directory on sys.path (pytest's default)
    import reference_ldm as ref


def _data(n=40, d=5, seed=0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    X = rng.random((n, d))
    X[:, 0] += 0.8 * y
    return X, y


def _rows(X, use_dask=False, chunk=None):
    if chunk is not None:
        X = da.from_array(X, chunks=(chunk, X.shape[1]))
    return prepare_rows(X, np.zeros(X.shape[0], dtype=np.int64), 2, use_dask=use_dask)


# ---------------------------------------------------------------------------
# LDM: the dual and its solver (Zhang & Zhou 2014)
# ---------------------------------------------------------------------------


def test_inverse_a_form_equals_pinv_form():
    """9.2: ``A^-1 Y`` and ``pinv(Q) G Y`` give the same M and H (RBF: G invertible)."""
    X, y = _data()
    G = ref.rbf_kernel(X, X, 0.7)
    H, coef = dual_matrices(G, y, 0.5)
    M = coef(np.eye(len(y)))
    M_ref, H_ref = ref.ldm_dual_pinv(G, y, 0.5)
    np.testing.assert_allclose(M, M_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(H, H_ref, rtol=0, atol=1e-10)


def test_inverse_a_form_with_singular_gram():
    """9.2: with a singular G (linear kernel, m > d) ``G alpha`` still matches pinv."""
    X, y = _data(n=30, d=3)
    G = X @ X.T
    beta = np.random.default_rng(1).random(30)
    H, coef = dual_matrices(G, y, 0.25)
    M = coef(np.eye(30))
    np.testing.assert_allclose(coef(beta), M @ beta, rtol=0, atol=1e-12)  # vector = columns
    M_ref, H_ref = ref.ldm_dual_pinv(G, y, 0.25)
    np.testing.assert_allclose(G @ M @ beta, G @ M_ref @ beta, rtol=0, atol=1e-8)
    np.testing.assert_allclose(H, H_ref, rtol=0, atol=1e-8)


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_coordinate_descent_reaches_generic_qp_optimum(C):
    """The DCD dual objective equals a generic bounded solver's (L-BFGS-B)."""
    X, y = _data()
    G = ref.rbf_kernel(X, X, 1.0)
    _, H = ref.ldm_dual_pinv(G, y, 0.125)
    beta_ref = ref.solve_box_qp(H, 0.125, C)
    ldm = LDM(C, gamma=1.0, tol=1e-10, max_iter=100000, random_state=0).fit(X, y)
    f = ref.dual_objective(H, ldm.beta_[0], 0.125)
    f_ref = ref.dual_objective(H, beta_ref, 0.125)
    assert f <= f_ref + 1e-9 * abs(f_ref)
    assert f == pytest.approx(f_ref, rel=1e-8)
    assert np.all((ldm.beta_[0] >= 0) & (ldm.beta_[0] <= C))


def test_gradient_identity_and_kkt():
    """9.2: ``grad f(beta)_i = y_i (G alpha)_i - 1``; at the optimum the KKT conditions hold."""
    X, y = _data()
    C = 0.5
    ldm = LDM(C, gamma=1.0, tol=1e-10, max_iter=100000, random_state=0).fit(X, y)
    beta = ldm.beta_[0]
    G = ref.rbf_kernel(X, X, 1.0)
    _, H = ref.ldm_dual_pinv(G, y, 0.125)
    alpha = np.zeros(len(y))
    alpha[ldm.support_] = ldm.dual_coef_[0]
    grad = H @ beta + (0.125 / len(y)) * H.sum(axis=1) - 1.0
    np.testing.assert_allclose(grad, y * (G @ alpha) - 1.0, rtol=0, atol=1e-10)
    assert np.all(grad[beta < 1e-12] >= -1e-8)
    assert np.all(grad[beta > C - 1e-12] <= 1e-8)
    free = (beta > 1e-12) & (beta < C - 1e-12)
    np.testing.assert_allclose(grad[free], 0.0, atol=1e-8)


def test_linear_primal_equals_linear_dual():
    """9.4: the d x d primal and the kernel dual with G = X X^T give the same machine."""
    X, y = _data(n=50, d=4)
    kw = {
        "kernel": "linear",
        "C": 1.0,
        "tol": 1e-12,
        "max_iter": 100000,
        "random_state": 0,
        "fit_intercept": False,
    }  # the official package's machine
    primal = LDM(**kw).fit(X, y)
    assert primal.solver_ == "primal"
    # The dual path is taken when features >= rows; force it on the same data.
    dual = fit_machines(
        X,
        (y > 0).astype(int),
        np.array([-1.0, 1.0]),
        C=1.0,
        lambda1=0.125,
        lambda2=0.125,
        kernel="linear",
        gamma=1.0,
        tol=1e-12,
        max_iter=100000,
        rng=np.random.default_rng(0),
        primal=False,
    )
    assert dual.solver == "dual"
    np.testing.assert_allclose(primal.coef_, dual.coef, rtol=0, atol=1e-7)
    # Identity (no solver tolerance): one beta, both recoveries, the same w.
    beta = dual.beta[0]
    _, coef = dual_matrices(X @ X.T, y, 0.125)
    np.testing.assert_allclose(
        X.T @ coef(0.125 / len(y) + beta),
        ref.linear_ldm_w(X, y, beta, 0.125, 0.125),
        rtol=0,
        atol=1e-12,
    )


def test_dual_path_when_features_exceed_rows():
    X, y = _data(n=12, d=20)
    ldm = LDM(kernel="linear", random_state=0).fit(X, y)
    assert ldm.solver_ == "dual" and ldm.coef_.shape == (1, 20)
    np.testing.assert_allclose(
        ldm.decision_function(X), X @ ldm.coef_[0] + ldm.intercept_[0], atol=1e-12
    )


def test_decision_function_is_kernel_expansion():
    """f(x) = sum_i alpha_i k(x_i, x); predict is sign(f) (f > 0: classes_[1])."""
    X, y = _data()
    ldm = LDM(random_state=0).fit(X, np.where(y > 0, "b", "a"))
    K = ref.rbf_kernel(X, ldm.support_vectors_, ldm.gamma_)
    f = K @ ldm.dual_coef_[0]
    np.testing.assert_allclose(ldm.decision_function(X), f, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(ldm.predict(X), np.where(f > 0, "b", "a"))
    assert ldm.gamma_ == pytest.approx(1.0 / (X.shape[1] * X.var()))


def test_one_vs_one_on_three_classes():
    """9.5: one machine per pair of classes, majority vote; each machine equals a binary LDM."""
    rng = np.random.default_rng(2)
    y = np.repeat(["x", "y", "z"], 25)
    centres = {"x": [0, 0], "y": [3, 0], "z": [0, 3]}
    X = np.array([centres[c] for c in y]) + rng.normal(scale=0.6, size=(75, 2))
    kw = {"tol": 1e-10, "max_iter": 100000, "gamma": 0.5}
    ldm = LDM(random_state=0, **kw).fit(X, y)
    assert ldm.dual_coef_.shape[0] == 3
    assert ldm.score(X, y) > 0.95
    scores = ldm.decision_function(X)
    assert scores.shape == (75, 3)
    np.testing.assert_array_equal(ldm.predict(X), ldm.classes_[np.argmax(scores, axis=1)])
    # Machine (x, z) is the binary LDM on those rows, z positive.
    keep = y != "y"
    pair = LDM(random_state=5, **kw).fit(X[keep], y[keep])
    F = ldm._machine_values(X)  # per-machine values: decision_function gives the votes
    np.testing.assert_allclose(F[:, 1], pair.decision_function(X), rtol=0, atol=1e-7)
    pos, neg = (F > 0).astype(int), (F <= 0).astype(int)
    votes = np.stack([neg[:, 0] + neg[:, 1], pos[:, 0] + neg[:, 2], pos[:, 1] + pos[:, 2]], axis=1)
    np.testing.assert_array_equal(np.floor(scores + 1 / 3), votes)


def test_one_sample_class_and_duplicates(blobs_multiclass):
    """A one-sample class gets its machines (two rows suffice); duplicate rows are fine."""
    X, y = blobs_multiclass
    ldm = LDM(random_state=0).fit(X, y)
    assert ldm.dual_coef_.shape[0] == 6
    assert ldm.score(X, y) > 0.8
    assert np.all(np.isfinite(ldm.decision_function(X)))


def test_dask_and_pandas_input_equal_numpy(blobs_binary):
    X, y = blobs_binary
    ref_ = LDM(random_state=0, scale="minmax").fit(X, y)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    for Xin, yin in [
        (da.from_array(X, chunks=(17, X.shape[1])), da.from_array(y, chunks=17)),
        (frame, pd.Series(y)),
    ]:
        other = LDM(random_state=0, scale="minmax").fit(Xin, yin)
        np.testing.assert_allclose(other.dual_coef_, ref_.dual_coef_, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(other.predict(Xin), ref_.predict(X))


def test_convergence_warning():
    X, y = _data()
    with pytest.warns(ConvergenceWarning, match="increase max_iter"):
        LDM(max_iter=1, tol=1e-12, random_state=0).fit(X, y)


# ---------------------------------------------------------------------------
# S(j) on the engine (Ou, Wang, Pang & Coghill 2017, eq. (4))
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("parallel", [False, True])
def test_left_out_sums_match_per_feature_kernel_matrices(parallel, monkeypatch):
    """One pass over pairs == recomputing K(-j) for every j (two machines), to 1e-12."""
    if parallel:
        monkeypatch.setattr(_numba, "PARALLEL_MIN_WORK", 0)
    rng = np.random.default_rng(3)
    X = rng.random((37, 6))
    X[5] = X[9]  # a duplicate row
    X[:, 3] = 0.25  # a constant feature
    coefs = [rng.normal(size=37), np.where(rng.random(37) < 0.5, 0.0, rng.normal(size=37))]
    cols = np.array([0, 1, 3, 4, 5])
    sums = quadratic.rbf_left_out_sums(_rows(X), np.column_stack(coefs), cols, 0.9)
    forms, full = ref.left_out_quadratic_forms(X[:, cols], coefs, 0.9)
    np.testing.assert_allclose(sums[:-1], forms, rtol=1e-12, atol=0)
    assert sums[-1] == pytest.approx(full, rel=1e-12)
    # Constant feature: removing it changes nothing, K(-j) = K.
    assert sums[2] == pytest.approx(full, rel=1e-14)


def test_product_identity_of_left_out_kernel():
    """RBF: K(-j)_ab = K_ab exp(gamma (x_aj - x_bj)^2), checked on the brute forms (1e-12)."""
    rng = np.random.default_rng(4)
    X, coefs = rng.random((25, 5)), [rng.normal(size=25)]
    forms, _ = ref.left_out_quadratic_forms(X, coefs, 1.3)
    np.testing.assert_allclose(ref.left_out_product_form(X, coefs, 1.3), forms, rtol=1e-12)


def test_left_out_sums_do_not_overflow_for_wide_kernels():
    """A far-apart pair: K_ab underflows, but K(-j)_ab need not; the clipped form is exact."""
    X = np.array([[0.0, 0.0], [40.0, 0.1], [0.2, 0.3]])
    coefs = [np.array([1.0, -2.0, 0.5])]
    sums = quadratic.rbf_left_out_sums(_rows(X), np.column_stack(coefs), np.arange(2), 1.0)
    forms, _ = ref.left_out_quadratic_forms(X, coefs, 1.0)
    np.testing.assert_allclose(sums[:-1], forms, rtol=1e-12)
    assert np.all(np.isfinite(sums))


def test_exp_polynomial_of_the_product_form():
    """The product form's exp(u) on [0, span]: relative error < 2e-15 (x86 long double
    reference, 64-bit mantissa)."""
    if np.finfo(np.longdouble).nmant < 63:
        pytest.skip("no extended precision long double on this platform")
    u = np.linspace(0.0, rbf._POLY_SPAN, 20001)  # the kernel's own constants
    p = np.zeros_like(u)
    for c in rbf._EXP_POLY[::-1]:
        p = p * u + c
    exact = np.exp(u.astype(np.longdouble))
    assert np.max(np.abs(p / exact - 1.0)) < 2e-15


@pytest.mark.parametrize(
    "gamma,squarings,far_row",
    [
        (0.1, 0, False),
        (0.2, 1, False),
        (0.4, 2, False),
        (0.9, 3, False),
        (1.9, 4, False),
        (3.9, 5, False),
        (7.9, 6, False),
        (0.3, 6, True),
        (40.0, 6, True),
    ],
)
def test_left_out_sums_every_exp_path(gamma, squarings, far_row):
    """Product form with 0 to 6 squarings, and (a far-out row, or a wide kernel) the
    clipped form in the sub-tiles it spreads, over several sub-tiles: = brute force to 1e-12."""
    rng = np.random.default_rng(11)
    X = rng.random((300, 5))
    if far_row:
        X[17] = [3.0, -2.0, 0.5, 0.5, 4.0]
    assert rbf.squarings(X * np.sqrt(gamma)) == squarings
    coefs = [rng.normal(size=300), rng.normal(size=300)]
    sums = quadratic.rbf_left_out_sums(_rows(X), np.column_stack(coefs), np.arange(5), gamma)
    forms, full = ref.left_out_quadratic_forms(X, coefs, gamma)
    np.testing.assert_allclose(sums[:-1], forms, rtol=1e-12, atol=0)
    assert sums[-1] == pytest.approx(full, rel=1e-12)


@pytest.mark.parametrize("chunk", [7, 16, 100])
def test_left_out_sums_dask_equals_in_process(chunk, threaded):
    rng = np.random.default_rng(5)
    X, C = rng.random((45, 4)), rng.normal(size=(45, 3))
    local = quadratic.rbf_left_out_sums(_rows(X), C, np.arange(4), 0.5)
    rows = _rows(X, use_dask=True, chunk=chunk)
    on_dask = quadratic.rbf_left_out_sums(rows, C, np.arange(4), 0.5)
    np.testing.assert_allclose(on_dask, local, rtol=1e-13)
    again = quadratic.rbf_left_out_sums(rows, C, np.arange(4), 0.5)
    np.testing.assert_array_equal(again, on_dask)  # deterministic graph


# ---------------------------------------------------------------------------
# The elimination loop
# ---------------------------------------------------------------------------


def _informative(n=90, seed=0):
    """Features 1 and 4 carry the class (4 less strongly); 6 are noise."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.random((n, 8))
    X[:, 1] += 0.9 * y
    X[:, 4] += 0.6 * y
    return X, y


@pytest.mark.parametrize(
    "make",
    [
        lambda: LDMRFE(random_state=0),
        lambda: SVMRFE(random_state=0),
        lambda: LDMRFE(criterion="abs", random_state=0),
    ],
    ids=["LDMRFE", "SVMRFE", "LDMRFE-abs"],
)
def test_informative_features_are_eliminated_last(make):
    # (Not the linear kernel: LDM has no bias term, so on [0, 1]-scaled data a
    # linear machine leans on some all-positive feature as its intercept.)
    X, y = _informative()
    est = make().fit(X, y)
    assert set(np.flatnonzero(est.ranking_ <= 2)) == {1, 4}
    assert est.n_features_ == 1 and est.support_.sum() == 1
    assert sorted(est.ranking_) == list(range(1, 9))  # no ties: one feature per round
    np.testing.assert_array_equal(est.transform(X), X[:, est.support_])


def test_rbf_scores_equal_brute_force_with_ldm_alpha():
    """First round: S(j) = -alpha^T K(-j) alpha with alpha of LDM on the scaled data."""
    X, y = _informative(n=40)
    est = LDMRFE(n_features_to_select=7, random_state=3).fit(X, y)
    ldm = LDM(scale="minmax", random_state=3).fit(X, y)
    assert est.gamma_ == ldm.gamma_
    alpha = np.zeros(len(y))
    alpha[ldm.support_] = ldm.dual_coef_[0]
    forms, _ = ref.left_out_quadratic_forms(ref.minmax_scale(X), [alpha], ldm.gamma_)
    cols, scores = est.scores_[0]
    np.testing.assert_array_equal(cols, np.arange(8))
    np.testing.assert_allclose(scores, -forms, rtol=1e-10)
    assert est.ranking_[np.argmin(scores)] == 2


def test_linear_kernel_ranks_by_squared_weights():
    """With a linear kernel S(j) = w_j^2 - ||w||^2 (SVM-RFE's criterion, Guyon et al. 2002),
    so the smallest w_j^2 goes first."""
    X, y = _informative(n=60)
    est = LDMRFE(kernel="linear", n_features_to_select=7, random_state=1).fit(X, y)
    w = LDM(kernel="linear", scale="minmax", random_state=1).fit(X, y).coef_[0]
    _, scores = est.scores_[0]
    np.testing.assert_allclose(scores, w**2 - w @ w, rtol=0, atol=1e-12)
    assert not est.support_[np.argmin(w**2)]


def test_svm_rfe_scores_use_svc_duals():
    from sklearn.svm import SVC

    X, y = _informative(n=40)
    est = SVMRFE(n_features_to_select=7, random_state=0).fit(X, y)
    Xs = ref.minmax_scale(X)
    svc = SVC(gamma=est.gamma_, random_state=0).fit(Xs, np.where(y == 1, 1.0, -1.0))
    a = np.zeros(len(y))
    a[svc.support_] = svc.dual_coef_[0]
    forms, _ = ref.left_out_quadratic_forms(Xs, [a], est.gamma_)
    np.testing.assert_allclose(est.scores_[0][1], -forms, rtol=1e-10)


def test_svm_rfe_elimination_scores_equal_a_per_round_recomputation():
    """Round by round, SVC on the survivors: S(j) of the removed feature is its
    elimination score; the kept feature has its S(j) of the last round."""
    from sklearn.svm import SVC

    X, y = _informative(n=40)
    est = SVMRFE(random_state=0).fit(X, y)
    Xs, ys = ref.minmax_scale(X), np.where(y == 1, 1.0, -1.0)
    survivors, expected = list(range(8)), np.full(8, np.nan)
    while len(survivors) > 1:
        svc = SVC(gamma=est.gamma_).fit(Xs[:, survivors], ys)
        a = np.zeros(len(y))
        a[svc.support_] = svc.dual_coef_[0]
        forms, _ = ref.left_out_quadratic_forms(Xs[:, survivors], [a], est.gamma_)
        expected[survivors] = -forms
        del survivors[int(np.argmin(-forms))]
    np.testing.assert_array_equal(np.flatnonzero(est.support_), survivors)
    np.testing.assert_allclose(est.elimination_scores_, expected, rtol=1e-8)


def test_ldm_rfe_elimination_scores_are_the_scores_at_elimination():
    X, y = _informative(n=40)
    est = LDMRFE(random_state=3).fit(X, y)
    # First round against the brute force with LDM's alpha on all features.
    ldm = LDM(scale="minmax", random_state=3).fit(X, y)
    alpha = np.zeros(len(y))
    alpha[ldm.support_] = ldm.dual_coef_[0]
    forms, _ = ref.left_out_quadratic_forms(ref.minmax_scale(X), [alpha], ldm.gamma_)
    first = np.argmax(est.ranking_)
    assert first == np.argmin(-forms)
    assert est.elimination_scores_[first] == pytest.approx(np.min(-forms), rel=1e-10)
    # Every round: the removed features' scores of that round; the kept one, the last.
    for r, (cols, scores) in enumerate(est.scores_):
        removed = est.ranking_[cols] == est.n_iter_ + 1 - r
        np.testing.assert_array_equal(est.elimination_scores_[cols[removed]], scores[removed])
    cols, scores = est.scores_[-1]
    np.testing.assert_array_equal(est.elimination_scores_[est.support_], scores[est.support_[cols]])
    assert not np.isnan(est.elimination_scores_).any()


def test_ties_at_the_minimum_are_eliminated_together():
    """Algorithm 1, d <- set(arg min S): constant and duplicated features share a score."""
    X, y = _informative(n=40)
    X = np.column_stack([X, np.full(40, 3.0), np.full(40, -1.0), X[:, 0]])
    est = LDMRFE(random_state=0).fit(X, y)
    assert est.ranking_[8] == est.ranking_[9]  # the two constant features go together
    assert est.ranking_[0] == est.ranking_[10]  # a duplicated column ties with its copy
    assert est.ranking_.max() < 11
    # ... unless that would leave fewer features than asked for.
    est = LDMRFE(n_features_to_select=10, random_state=0).fit(X, y)
    assert est.n_features_ == 10


def test_step_and_fraction():
    X, y = _informative()
    est = LDMRFE(n_features_to_select=0.25, step=3, random_state=0).fit(X, y)
    assert est.n_features_ == 2 and est.n_iter_ == 2
    np.testing.assert_array_equal(np.bincount(est.ranking_), [0, 2, 3, 3])


def test_multiclass_rfe(blobs_multiclass):
    """Scores sum over the one-vs-one machines; a one-sample class is one more machine.

    A constant feature has DJ = 0 exactly (K(-j) = K): first to go under
    ``criterion="abs"``; under the paper's signed score, noise features with
    negative DJ go before it.
    """
    X, y = blobs_multiclass
    est = LDMRFE(random_state=0).fit(X, y)
    assert set(np.flatnonzero(est.ranking_ <= 2)) <= {0, 1, 2}
    est_abs = LDMRFE(criterion="abs", random_state=0).fit(X, y)
    assert est_abs.ranking_[6] == est_abs.ranking_.max()
    first = est_abs.scores_[0][1]
    assert first[6] <= 1e-12 * np.max(np.abs(est.scores_[0][1]))


# ---------------------------------------------------------------------------
# Execution modes: in-process = threaded dask = 2-process LocalCluster
# ---------------------------------------------------------------------------


def _assert_same_rfe(a, b):
    np.testing.assert_array_equal(a.ranking_, b.ranking_)
    for (ca, sa), (cb, sb) in zip(a.scores_, b.scores_):
        np.testing.assert_array_equal(ca, cb)
        np.testing.assert_allclose(sa, sb, rtol=1e-10)


def test_rfe_threaded_dask_equals_in_process(blobs_binary, threaded):
    X, y = blobs_binary
    local = LDMRFE(random_state=0).fit(X, y)
    on_dask = LDMRFE(random_state=0).fit(
        da.from_array(X, chunks=(13, X.shape[1])), da.from_array(y, chunks=13)
    )
    _assert_same_rfe(local, on_dask)


@pytest.mark.cluster
def test_rfe_cluster_equals_in_process(blobs_multiclass, client):
    from distributed import get_task_stream

    X, y = blobs_multiclass
    workers = set(client.scheduler_info()["workers"])
    with get_task_stream(client) as stream:
        remote = LDMRFE(n_features_to_select=4, random_state=0).fit(
            da.from_array(X, chunks=(11, X.shape[1])), da.from_array(y, chunks=11)
        )
    tile_workers = {t["worker"] for t in stream.data if "dmargin-kernel-sums" in str(t["key"])}
    assert tile_workers == workers, "score tasks did not run on both workers"
    with pytest.MonkeyPatch.context() as mp:
        # The same fit in-process (under a client, numpy input would go to the cluster).
        mp.setattr("dmargin.engine.execution.active_client", lambda: None)
        local = LDMRFE(n_features_to_select=4, random_state=0).fit(X, y)
    _assert_same_rfe(local, remote)


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params,match",
    [
        ({"C": 0}, "C=0 is not valid"),
        ({"kernel": "poly"}, "kernel='poly'"),
        ({"gamma": -1.0}, "gamma=-1.0"),
        ({"lambda1": -0.1}, "lambda1"),
        ({"tol": 0}, "tol=0"),
    ],
)
def test_bad_ldm_parameters(params, match):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        LDM(**params).fit(X, y)


@pytest.mark.parametrize(
    "params,match",
    [
        ({"n_features_to_select": 0}, "n_features_to_select=0"),
        ({"step": 0}, "step=0"),
        ({"criterion": "l1"}, "criterion='l1'"),
        ({"scale": "standard"}, "scale='standard'"),
    ],
)
def test_bad_rfe_parameters(params, match):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        LDMRFE(**params).fit(X, y)


def test_bad_data():
    X, y = _data()
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LDM().fit(Xn, y)
    with pytest.raises(ValueError, match="single class"):
        LDMRFE().fit(X, np.ones(len(y)))
    with pytest.raises(ValueError, match="continuous"):
        LDM().fit(X, np.linspace(0, 1, len(y)))
    ldm = LDM(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        ldm.predict(X[:, :3])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        LDM().predict(X)
    with pytest.raises(NotFittedError):
        LDMRFE().get_support()
