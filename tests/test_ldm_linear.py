"""Linear LDM, LDM-RFE and SVM-RFE in the primal, solved over row blocks.

The distributed primal Newton solver (``solver="newton"``) must find the
solution of the dual solvers: LDM's dual coordinate descent in ``w``
(Zhang & Zhou 2014) and the kernel dual with ``G = X X^T``, to 1e-6 on
the weights and the objective; the squared-hinge SVM that of scikit-learn's
``LinearSVC``; the rankings those of the in-memory solvers and of
scikit-learn's ``RFE``.  Dask input above the gather limit is refused by
the in-memory solvers with a message naming the fix.
"""

import dask.array as da
import numpy as np
import pytest
from sklearn.feature_selection import RFE
from sklearn.svm import LinearSVC

import dmargin
from dmargin.engine import linear_gram, prepare_rows
from dmargin.ldm import _machine, _rfe
from dmargin.ldm import _solvers as _ldm_solvers
from dmargin.ldm._machine import LDM
from dmargin.ldm._rfe import LDMRFE, SVMRFE
from dmargin.ldm._solvers import fit_machines, ldm_primal_objective, ldm_quadratic

TIGHT = dict(tol=1e-10, max_iter=100_000)


def _data(n=300, d=6, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    X = rng.normal(size=(n, d))
    X[:, 0] += 0.9 * y
    X[:, 2] -= 0.6 * y
    X[:, 4] += 0.3 * (y == 1)
    return X, y


def _objective(X, y, w, C, lambda1, lambda2):
    """The LDM primal at ``w``; a bias (``w`` one longer than the rows) is the
    weight of a column of ones."""
    if w.size == X.shape[1] + 1:
        X = np.column_stack([X, np.ones(len(X))])
    rows = prepare_rows(X, y, 2)
    Q, c = ldm_quadratic(
        tuple(g[0] for g in linear_gram(rows, np.arange(X.shape[1]), [(0, 1)])), lambda1, lambda2
    )
    margins = np.where(y == 1, 1.0, -1.0) * (X @ w)
    return ldm_primal_objective(w, Q, c, C, np.maximum(0.0, 1.0 - margins).sum())


@pytest.mark.parametrize(
    "C, lambda1, lambda2", [(1.0, 0.125, 0.125), (0.1, 1.0, 1.0), (10.0, 0.0, 0.5)]
)
def test_newton_equals_the_dual_solvers(C, lambda1, lambda2):
    X, y = _data()
    kw = dict(C=C, lambda1=lambda1, lambda2=lambda2, kernel="linear")
    newton = LDM(solver="newton", **kw).fit(X, y)
    cd = LDM(solver="cd", random_state=0, **kw, **TIGHT).fit(X, y)  # DCD in w (9.4)
    assert (newton.solver_, cd.solver_) == ("newton", "primal")
    # The kernel dual with G = X X^T (9.2), its w read off the expansion.
    dual = fit_machines(
        X,
        y,
        np.array([0, 1]),
        gamma=1.0,
        rng=np.random.default_rng(0),
        primal=False,
        fit_intercept=True,
        **kw,
        **TIGHT,
    )
    for coef, b in ((cd.coef_, cd.intercept_), (dual.coef, dual.intercept)):
        np.testing.assert_allclose(newton.coef_, coef, rtol=0, atol=1e-6)
        np.testing.assert_allclose(newton.intercept_, b, rtol=0, atol=1e-6)
    f_newton = _objective(
        X, y, np.append(newton.coef_[0], newton.intercept_[0]), C, lambda1, lambda2
    )
    f_dual = _objective(X, y, np.append(dual.coef[0], dual.intercept[0]), C, lambda1, lambda2)
    assert abs(f_newton - f_dual) <= 1e-6 * abs(f_dual)
    assert f_newton <= f_dual + 1e-9 * abs(f_dual)  # the exact hinge solution, not a smoothed one
    np.testing.assert_array_equal(newton.predict(X), cd.predict(X))


def test_newton_one_vs_one_on_three_classes():
    X, y = _data(n=240, classes=3, seed=1)
    newton = LDM(kernel="linear", solver="newton").fit(X, y)
    cd = LDM(kernel="linear", solver="cd", random_state=0, **TIGHT).fit(X, y)
    assert newton.coef_.shape == (3, X.shape[1])
    np.testing.assert_allclose(newton.coef_, cd.coef_, rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        newton.decision_function(X), cd.decision_function(X), rtol=0, atol=1e-5
    )


@pytest.mark.parametrize("C", [0.05, 1.0])
def test_svm_primal_is_linearsvc(C):
    """``svm_newton`` solves scikit-learn's LinearSVC problem (squared hinge, L2,
    regularised intercept of scaling 1): weights and intercept to 1e-6."""
    X, y = _data(seed=2)
    rows = prepare_rows(X, y, 2)
    w, b, _, ok = _ldm_solvers.svm_newton(rows, np.arange(X.shape[1]), (0, 1), C=C)
    ref = LinearSVC(C=C, loss="squared_hinge", dual=False, tol=1e-12, max_iter=10_000).fit(X, y)
    assert ok
    np.testing.assert_allclose(w, ref.coef_[0], rtol=0, atol=1e-6)
    assert abs(b - ref.intercept_[0]) <= 1e-6


def test_linear_svmrfe_ranks_as_sklearn_rfe_with_linearsvc():
    X, y = _data(n=200, d=7, seed=3)
    ours = SVMRFE(2, step=1, kernel="linear", solver="newton", scale=None, C=0.5).fit(X, y)
    ref = RFE(
        LinearSVC(C=0.5, dual=False, tol=1e-12, max_iter=10_000), n_features_to_select=2, step=1
    ).fit(X, y)
    np.testing.assert_array_equal(ours.ranking_, ref.ranking_)


def test_linear_ldmrfe_newton_ranks_as_coordinate_descent():
    X, y = _data(n=200, d=7, seed=4)
    newton = LDMRFE(1, kernel="linear", solver="newton").fit(X, y)
    cd = LDMRFE(1, kernel="linear", solver="cd", random_state=0, **TIGHT).fit(X, y)
    np.testing.assert_array_equal(newton.ranking_, cd.ranking_)
    for (f1, s1), (f2, s2) in zip(newton.scores_, cd.scores_):
        np.testing.assert_array_equal(f1, f2)
        np.testing.assert_allclose(s1, s2, rtol=1e-6, atol=1e-8)
    assert newton.gamma_ is None and cd.gamma_ is not None


@pytest.mark.parametrize("solver", ["newton", "primal", "dual"])
def test_intercept_is_the_weight_of_a_column_of_ones(solver):
    """``fit_intercept=True`` is the machine without one on the rows with a
    column of ones appended (the bias regularised with ``w``), on every path."""
    X, y = _data(n=240, classes=3, seed=5)
    X = X + 2.0  # the origin away from the classes: a bias matters
    ones = np.column_stack([X, np.ones(len(X))])
    if solver == "newton":
        fits = [
            LDM(kernel="linear", solver="newton", fit_intercept=fi).fit(Z, y)
            for fi, Z in ((True, X), (False, ones))
        ]
        with_b, plain = ((f.coef_, f.intercept_) for f in fits)
    else:
        kw = dict(
            C=1.0,
            lambda1=0.125,
            lambda2=0.125,
            kernel="linear",
            gamma=1.0,
            primal=solver == "primal",
            **TIGHT,
        )
        fits = [
            fit_machines(Z, y, np.arange(3), rng=np.random.default_rng(0), fit_intercept=fi, **kw)
            for fi, Z in ((True, X), (False, ones))
        ]
        assert {f.solver for f in fits} == {solver}
        with_b, plain = ((f.coef, f.intercept) for f in fits)
    np.testing.assert_allclose(with_b[0], plain[0][:, :-1], rtol=0, atol=1e-7)
    np.testing.assert_allclose(with_b[1], plain[0][:, -1], rtol=0, atol=1e-7)
    assert np.all(plain[1] == 0) and np.all(np.abs(with_b[1]) > 0.01)


def test_rbf_intercept_is_the_kernel_plus_one():
    """With the RBF kernel the bias is ``sum_i alpha_i``:
    ``f(x) = sum_i alpha_i (k(x_i, x) + 1)``."""
    X, y = _data(n=120, seed=6)
    ldm = LDM(kernel="rbf", fit_intercept=True, random_state=0).fit(X, y)
    K = np.exp(-ldm.gamma_ * ((X[:, None, :] - ldm.support_vectors_[None]) ** 2).sum(-1))
    np.testing.assert_allclose(
        ldm.decision_function(X), (K + 1.0) @ ldm.dual_coef_[0], rtol=0, atol=1e-10
    )
    np.testing.assert_allclose(ldm.intercept_, ldm.dual_coef_.sum(axis=1), rtol=0, atol=1e-12)
    assert np.all(LDM(random_state=0).fit(X, y).intercept_ == 0)  # "auto": none with RBF


def _offset_clusters(seed, n=2000, d=30, k=6):
    """Two Gaussian clusters per class; each of the first ``k`` features separates
    the classes on its own; [0, 1]-scaled, the boundary misses the origin."""
    rng = np.random.default_rng(seed)
    magnitude = 0.5 + rng.random((2, k))
    centroids = np.vstack([-magnitude, magnitude])
    cluster = rng.integers(0, 4, n)
    X = rng.normal(size=(n, d))
    X[:, :k] += centroids[cluster]
    return X, cluster // 2


@pytest.mark.parametrize("seed", [0, 1])
def test_linear_ldmrfe_keeps_the_informative_features_with_its_bias(seed):
    """Without a bias a linear machine on [0, 1]-scaled features passes through the
    origin and leans on noise features for the offset: RFE keeps 2-4 of the 6
    informative ones; with it ("auto" for the linear kernel), all 6."""
    X, y = _offset_clusters(seed)
    for solver in ("newton", "cd"):
        kw = dict(step=4, kernel="linear", solver=solver, random_state=0)
        assert LDMRFE(6, **kw).fit(X, y).support_[:6].all()
        assert LDMRFE(6, fit_intercept=False, **kw).fit(X, y).support_[:6].sum() <= 4


def test_ldmrfe_rounds_start_from_the_last_machines(monkeypatch):
    """Each Newton round of linear LDM-RFE starts from the previous round's
    machines on the survivors: the same scores as a cold start (the problem is
    strictly convex), in fewer passes over the rows."""
    X, y = _offset_clusters(2, n=1500, d=12, k=4)
    passes = []
    for name in ("linear_loss", "hinge_band", "hinge_violations"):
        monkeypatch.setattr(
            _ldm_solvers,
            name,
            (lambda f: lambda *a, **k: passes.append(1) or f(*a, **k))(getattr(_ldm_solvers, name)),
        )
    warm = LDMRFE(4, kernel="linear", solver="newton").fit(X, y)
    n_warm = len(passes)
    machines = _rfe.newton_machines
    monkeypatch.setattr(_rfe, "newton_machines", lambda *a, start=None: machines(*a, start=None))
    passes.clear()
    cold = LDMRFE(4, kernel="linear", solver="newton").fit(X, y)
    np.testing.assert_array_equal(warm.ranking_, cold.ranking_)
    for (f1, s1), (f2, s2) in zip(warm.scores_, cold.scores_):
        np.testing.assert_array_equal(f1, f2)
        np.testing.assert_allclose(s1, s2, rtol=1e-7, atol=1e-10)
    assert n_warm < 0.8 * len(passes), (n_warm, len(passes))


def test_auto_picks_newton_for_dask_input_and_many_rows(monkeypatch, threaded):
    X, y = _data(n=200)
    assert LDM(kernel="linear").fit(X, y).solver_ == "primal"  # numpy, few rows: as before
    Xd, yd = da.from_array(X, chunks=(50, X.shape[1])), da.from_array(y, chunks=50)
    on_dask = LDM(kernel="linear").fit(Xd, yd)
    assert on_dask.solver_ == "newton"
    local = LDM(kernel="linear", solver="newton").fit(X, y)
    np.testing.assert_allclose(on_dask.coef_, local.coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(on_dask.intercept_, local.intercept_, rtol=0, atol=1e-10)
    monkeypatch.setattr(_machine, "NEWTON_MIN_ROWS", 150)
    assert LDM(kernel="linear").fit(X, y).solver_ == "newton"
    assert LDM(kernel="rbf").fit(X, y).solver_ == "dual"


@pytest.mark.parametrize(
    "make",
    [lambda: LDM(), lambda: LDM(kernel="linear", solver="cd"), lambda: LDMRFE(), lambda: SVMRFE()],
    ids=["LDM-rbf", "LDM-linear-cd", "LDMRFE-rbf", "SVMRFE-rbf"],
)
def test_in_memory_solvers_refuse_large_dask_input(make, monkeypatch, threaded):
    monkeypatch.setattr(_machine, "GATHER_MAX_ROWS", 120)
    X, y = _data(n=200)
    Xd, yd = da.from_array(X, chunks=(50, X.shape[1])), da.from_array(y, chunks=50)
    with pytest.raises(
        ValueError,
        match=r"has 200 rows, above its limit of 120 rows.*"
        r"kernel='linear'.*sample",
    ):
        make().fit(Xd, yd)
    make().fit(Xd[:120], yd[:120])  # at the limit: gathered, as the docstrings say
    make().fit(X, y)  # numpy input is in memory already: no limit


def test_newton_needs_the_linear_kernel():
    X, y = _data(n=60)
    with pytest.raises(ValueError, match="solver='newton' solves linear machines"):
        LDM(kernel="rbf", solver="newton").fit(X, y)
    with pytest.raises(ValueError, match="solver"):
        LDM(solver="lbfgs").fit(X, y)


def test_public_names():
    assert dmargin.LDM is LDM and dmargin.SVMRFE is SVMRFE


def test_each_newton_step_is_one_small_graph_over_the_persisted_blocks(threaded):
    """No graph growth: every loss evaluation is a new graph of the same size over the
    persisted row blocks (the blocks, one task each, and the tree of sums)."""
    from dask.callbacks import Callback

    X, y = _data(n=400)
    sizes = []

    class Sizes(Callback):
        def _start(self, dsk):
            sizes.append(len(dsk))

    Xd, yd = da.from_array(X, chunks=(100, X.shape[1])), da.from_array(y, chunks=100)
    with Sizes():
        est = LDM(kernel="linear").fit(Xd, yd)
    # sizes[0]: the scaling pass; then the Gram pass; then one graph per loss
    # evaluation, band and check: 4 block tasks, the tree of sums, the rows' keys.
    passes = sizes[2:]
    assert est.solver_ == "newton" and len(passes) >= est.n_iter_[0], sizes
    assert len(set(passes)) == 1 and passes[0] <= 4 * 3 + 1, sizes
