"""LDM, the Large margin Distribution Machine (Zhang & Zhou, KDD 2014), as a classifier.

LDM maximises the margin mean and minimises the margin variance; it is solved
here by dual coordinate descent in the well-conditioned ``A^-1`` form, or in
the primal ``w`` for a linear kernel with fewer features than rows (both
derived from the official package's dual).  The solvers themselves take
arrays, not estimators, and live apart (:mod:`dmargin.ldm._solvers`); this
module chooses among them.  The eliminations it drives are in
:mod:`dmargin.ldm._rfe`.
"""

from __future__ import annotations

import numbers
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._capabilities import Capabilities, sklearn_tags
from .._dask import gather, is_dask_collection
from .._interrupt import UnfittedOnInterrupt
from .._predict import check_new_rows, predict_blocks
from .._start import start_fit
from .._utils import make_rng
from .._validation import BOOLEAN, NONE, RANDOM_STATE, Interval, Options
from ..engine import prepare_rows
from ._solvers import (
    KernelModel,
    LinearModel,
    fit_machines,
    ovo_labels,
    primal_machines,
    resolve_gamma,
)

KERNEL_OPTIONS = [Options(("rbf", "linear"))]
GAMMA_OPTIONS = [Options(("scale", "auto")), Interval(numbers.Real, 0, None, closed="neither")]
SCALE_OPTIONS = [Options(("minmax",)), NONE]
SOLVER_OPTIONS = [Options(("auto", "cd", "newton"))]
FIT_INTERCEPT_OPTIONS = [Options(("auto",)), BOOLEAN]
#: Rows of dask input the in-memory solvers gather at most.  They hold
#: m x m matrices on the driver (the kernel dual: three of them, 2.4 GB at
#: 10,000 rows); above it a fit on dask input is refused, naming the fix.
GATHER_MAX_ROWS = 10_000
#: ``solver="auto"`` solves linear machines by the distributed primal
#: Newton method on dask input, or above this many rows.
NEWTON_MIN_ROWS = 10_000


def gather_rows(x):
    return gather(x, what="the LDM training rows")


def check_gather(estimator, X, n_samples):
    """Refuse to gather more than :data:`GATHER_MAX_ROWS` dask rows to the driver."""
    if is_dask_collection(X) and n_samples > GATHER_MAX_ROWS:
        name = type(estimator).__name__
        raise ValueError(
            f"{name}(kernel={estimator.kernel!r}) trains on the driver with m x m kernel "
            f"matrices, and the dask input has {int(n_samples)} rows, above its limit of "
            f"{GATHER_MAX_ROWS} rows (dmargin.ldm._machine.GATHER_MAX_ROWS). Use "
            f"{name}(kernel='linear'), whose primal solver runs on the row blocks at any "
            f"size, or fit on a sample of at most {GATHER_MAX_ROWS} rows (e.g. "
            "ddf.sample(frac=...) or X[:n])."
        )


def known_rows(X):
    """The row count of a dask array with known chunks, else None (DataFrames: lazy)."""
    n = getattr(X, "shape", (None,))[0] if is_dask_collection(X) else None
    return int(n) if isinstance(n, numbers.Integral) and not isinstance(n, bool) else None


def pick_solver(estimator, X, n_samples) -> str:
    """``"newton"`` or ``"cd"`` for ``estimator.solver`` on these data (see :class:`LDM`)."""
    solver = getattr(estimator, "solver", "auto")
    if solver == "newton" and estimator.kernel != "linear":
        raise ValueError(
            f"solver='newton' solves linear machines; kernel={estimator.kernel!r} "
            "needs solver='cd' (or 'auto')."
        )
    if solver == "auto":
        solver = (
            "newton"
            if estimator.kernel == "linear"
            and (is_dask_collection(X) or n_samples > NEWTON_MIN_ROWS)
            else "cd"
        )
    if solver == "cd":
        check_gather(estimator, X, n_samples)
    return solver


def uses_intercept(estimator) -> bool:
    """Whether the LDM machines of ``estimator`` have a bias (``fit_intercept``;
    ``"auto"``: with the linear kernel only)."""
    fit_intercept = getattr(estimator, "fit_intercept", False)
    if fit_intercept == "auto":
        return estimator.kernel == "linear"
    return bool(fit_intercept)


def newton_machines(estimator, rows, cols, n_classes, start=None):
    """:func:`~dmargin.ldm._solvers.primal_machines` with the parameters of
    ``estimator``: LDM's primal, or LinearSVC's problem for SVM-RFE (which has no
    ``lambda1`` and ``lambda2``)."""
    if hasattr(estimator, "lambda1"):
        lambdas = (estimator.lambda1, estimator.lambda2)
    else:
        lambdas = None
    return primal_machines(
        rows,
        cols,
        n_classes,
        C=estimator.C,
        lambdas=lambdas,
        intercept=1.0 if uses_intercept(estimator) else 0.0,
        start=start,
    )


def _ldm_block(X, model, what, classes):
    """One row block's decision values or labels (a task of the lazy predictions)."""
    scores = model.scores(X)
    return ovo_labels(scores, classes) if what == "predict" else scores


# ---------------------------------------------------------------------------
# LDM classifier
# ---------------------------------------------------------------------------


class LDM(UnfittedOnInterrupt, ClassifierMixin, BaseEstimator):
    """Large margin Distribution Machine (Zhang & Zhou, KDD 2014).

    Solves ``min 1/2 ||w||^2 + lambda1 var(margin) - lambda2 mean(margin) +
    C sum xi`` (with the RBF kernel no bias term, as the official package;
    see ``fit_intercept``) by dual coordinate
    descent on ``f(b) = 1/2 b^T H b + ((lambda2/m) H e - e)^T b``, ``0 <= b <= C``,
    with ``H = Y G A^-1 Y``, the official package's dual written with
    ``A = I + (4 lambda1 / m) P G`` in place of the ill-conditioned ``Q^-1 G``
    (the two are equal).  With ``kernel="linear"`` and fewer features than
    rows the same descent runs on the primal ``w``.  More than two classes:
    one binary machine per pair of classes and a majority vote, as the
    official package.

    Training by coordinate descent (``solver="cd"``) is on the driver and
    needs the three m x m matrices of the official solver (O(m^2) memory,
    O(m^3) time per machine) -- except the linear primal path, O(m d + d^3).
    Dask input is gathered for it, up to :data:`GATHER_MAX_ROWS` (10,000)
    rows; above that such a fit is refused with a ``ValueError`` naming the
    fix.  ``solver="newton"`` (linear kernel) solves the primal
    ``1/2 w^T Q_d w - c^T w + C sum_i max(0, 1 - y_i w . x_i)`` (Zhang & Zhou 2014) by
    trust-region Newton on the driver, each loss, gradient and generalised
    Hessian a sum over the row blocks where they live, with the hinge
    smoothed in stages and the exact hinge solution recovered at the end
    (:func:`~dmargin.ldm._solvers.ldm_newton`): the rows are never gathered, and the solution is the
    dual's (to 1e-6 and better).  ``decision_function`` and ``predict`` of a
    dask array or DataFrame return a lazy dask array, computed block by block
    where the rows are.

    Parameters
    ----------
    C : float, default=1.0
        Box bound of the dual variables (the slack penalty).
    lambda1 : float, default=0.125
        Weight of the margin variance.
    lambda2 : float, default=0.125
        Weight of the margin mean.
    kernel : {"rbf", "linear"}, default="rbf"
        ``exp(-gamma ||u - v||^2)`` or ``u . v``.
    gamma : {"scale", "auto"} or float, default="scale"
        RBF width: ``1 / (A var(X))``, ``1 / A``, or the value.
    max_iter : int, default=1000
        Passes of coordinate descent at most (per machine).
    tol : float, default=0.01
        Stop when max - min of the projected gradient is at most ``tol``
        (the official solver's ``eps``).
    scale : {"minmax"} or None, default=None
        ``"minmax"`` scales each feature to [0, 1] with the training ranges
        (as the LDM authors do); the same map is applied in ``predict``.
    fit_intercept : bool or "auto", default="auto"
        Add a bias ``b`` (``f(x) = w . x + b``) as the weight of a constant
        feature 1, regularised with ``w`` as LIBLINEAR's bias (the kernel
        becomes ``k + 1``).  ``"auto"``: with the linear kernel only.  The
        official package has none; a linear machine without one is a
        hyperplane through the origin, which on [0, 1]-scaled features leans
        on whichever features stand in for the missing offset (linear
        LDM-RFE then ranks those high).
    solver : {"auto", "cd", "newton"}, default="auto"
        ``"cd"``: dual coordinate descent in memory (the official solver's);
        ``"newton"``: the distributed primal solver (linear kernel only);
        ``"auto"``: ``"newton"`` for the linear kernel on dask input or above
        :data:`NEWTON_MIN_ROWS` (10,000) rows, else ``"cd"``.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the coordinate order of the descent.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    dual_coef_ : ndarray of shape (n_machines, n_support)
        ``alpha`` of each machine on the support rows (labels absorbed, zero
        on rows of other classes).  Not set on the linear primal path.
    support_ : ndarray of shape (n_support,)
        Training rows with a nonzero ``alpha`` in some machine.
    support_vectors_ : ndarray of shape (n_support, n_features)
        Those rows (scaled).
    coef_ : ndarray of shape (n_machines, n_features)
        ``w`` of each machine; only with ``kernel="linear"``.
    intercept_ : ndarray of shape (n_machines,)
        ``b`` of each machine (zeros without ``fit_intercept``).
    beta_ : list of ndarray
        The dual solution of each machine (not set by ``solver="newton"``,
        where it would be one number per row).
    gamma_ : float or None
        The RBF width used (``None`` after ``solver="newton"``).
    solver_ : {"dual", "primal", "newton"}
        Coordinate descent on the dual or on ``w``, or the distributed
        primal Newton solver.
    n_iter_ : ndarray of shape (n_machines,)
        Descent passes (Newton iterations) of each machine.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only for input with string column names.

    See Also
    --------
    LDMRFE : Recursive feature elimination with this classifier.

    References
    ----------
    T. Zhang and Z.-H. Zhou, "Large margin distribution machine", KDD 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from dmargin import LDM
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 30)
    >>> X = rng.normal(size=(60, 3)) + 2 * y[:, None]
    >>> LDM(random_state=0).fit(X, y).score(X, y) > 0.9
    True
    """

    #: The solver picks its rows (the Newton solver on the engine).
    _capabilities = Capabilities(engine_rows=False)
    _parameter_constraints: ClassVar[dict] = {
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "lambda1": [Interval(numbers.Real, 0, None)],
        "lambda2": [Interval(numbers.Real, 0, None)],
        "kernel": KERNEL_OPTIONS,
        "gamma": GAMMA_OPTIONS,
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "scale": SCALE_OPTIONS,
        "fit_intercept": FIT_INTERCEPT_OPTIONS,
        "solver": SOLVER_OPTIONS,
        "random_state": [RANDOM_STATE],
    }

    def __init__(
        self,
        C=1.0,
        *,
        lambda1=0.125,
        lambda2=0.125,
        kernel="rbf",
        gamma="scale",
        max_iter=1000,
        tol=0.01,
        scale=None,
        fit_intercept="auto",
        solver="auto",
        random_state=None,
    ):
        self.C = C
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.kernel = kernel
        self.gamma = gamma
        self.max_iter = max_iter
        self.tol = tol
        self.scale = scale
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.random_state = random_state

    def fit(self, X, y):
        """Train one binary LDM per pair of classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            numpy, pandas or dask.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : LDM
        """
        if known_rows(X) is not None:  # fail before any pass over dask rows
            pick_solver(self, X, known_rows(X))
        data = start_fit(self, X, y).data
        solver = pick_solver(self, X, data.X.shape[0])
        self._scaling = data.scaling
        self.classes_ = data.classes
        for name in ("dual_coef_", "support_", "support_vectors_", "coef_", "beta_"):
            if hasattr(self, name):  # a refit may change the solver
                delattr(self, name)
        if solver == "newton":
            rows = prepare_rows(data.X, data.codes, len(data.classes))
            coef, intercept, n_iter = newton_machines(
                self, rows, np.arange(rows.n_features), len(data.classes)
            )
            self.gamma_ = None  # the linear kernel has no width
            self.solver_ = "newton"
            self.n_iter_ = n_iter
            self.coef_ = coef
            self.intercept_ = intercept
            return self
        X, codes = gather_rows(data.X), gather_rows(data.codes)
        self.gamma_ = resolve_gamma(self.gamma, X)
        machines = fit_machines(
            X,
            codes,
            self.classes_,
            C=self.C,
            lambda1=self.lambda1,
            lambda2=self.lambda2,
            kernel=self.kernel,
            gamma=self.gamma_,
            tol=self.tol,
            max_iter=self.max_iter,
            rng=make_rng(self.random_state),
            fit_intercept=uses_intercept(self),
        )
        self.solver_ = machines.solver
        self.intercept_ = machines.intercept
        self.beta_ = machines.beta
        self.n_iter_ = machines.n_iter
        if machines.solver == "dual":
            self.support_ = machines.support
            self.support_vectors_ = X[machines.support]
            self.dual_coef_ = machines.alpha[:, machines.support]
        if self.kernel == "linear":
            self.coef_ = machines.coef
        return self

    def _scaled(self, X):
        check_is_fitted(self, "classes_")  # before the scaling is read
        return check_new_rows(self, X, scaling=self._scaling)

    def _machine_values(self, X):
        """``f_p(x)`` of every machine, shape (n_samples, n_machines)."""
        X = self._scaled(X)
        return self._model().values(X)

    def _model(self):
        """What a row block needs to be scored: small, sent with each task."""
        if self.kernel == "linear":
            return LinearModel(self._scaling, self.coef_, len(self.classes_), self.intercept_)
        return KernelModel(
            self._scaling,
            self.dual_coef_,
            self.support_vectors_,
            self.gamma_,
            len(self.classes_),
            self.intercept_,
        )

    def _on_blocks(self, X, what, dtype=np.float64):
        """``what`` of every row block of a dask ``X``: a lazy dask array."""
        check_is_fitted(self, "classes_")  # before the machines are read
        k = len(self.classes_)
        n_cols = None if what == "predict" or k == 2 else k
        return predict_blocks(
            self, _ldm_block, X, self._model(), what, self.classes_, n_cols=n_cols, dtype=dtype
        )

    def decision_function(self, X):
        """``f(x)`` for two classes (> 0: ``classes_[1]``); one-vs-one votes otherwise.

        With more than two classes, each column is the class's number of
        pairwise wins plus a confidence in (-1/3, 1/3) from the summed
        machine values (scikit-learn's ``decision_function_shape="ovr"``), so
        its argmax is ``predict``.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray or dask array of shape (n_samples,) or (n_samples, n_classes)
            Lazy (a dask array) for dask input.
        """
        if is_dask_collection(X):
            return self._on_blocks(X, "decision")
        X = self._scaled(X)
        return self._model().scores(X, scaled=True)

    def predict(self, X):
        """The sign of ``f`` (two classes) or the one-vs-one vote winner.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray or dask array of shape (n_samples,)
            Lazy (a dask array) for dask input.
        """
        if is_dask_collection(X):
            return self._on_blocks(X, "predict", dtype=self.classes_.dtype)
        return ovo_labels(self.decision_function(X), self.classes_)

    def __sklearn_tags__(self):
        return sklearn_tags(self, super().__sklearn_tags__())

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: passes of the linear primal solver over the rows;
        ``None`` for the in-memory solvers."""
        from ._cost import linear_primal_cost

        return linear_primal_cost(self, n_samples, n_features)
