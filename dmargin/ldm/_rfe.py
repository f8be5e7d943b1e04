"""LDM-RFE and kernel SVM-RFE: recursive feature elimination by ``S(j)``.

LDM-RFE (Ou, Wang, Pang & Coghill, ICSAI 2017) retrains LDM on the surviving
features and removes every feature tied at the minimum of
``S(j) = -alpha^T K(-j) alpha`` (eq. (4)); SVM-RFE (Guyon et al. 2002) is the
same loop around scikit-learn's ``SVC``.  The scores of all features are one
pass of the pairwise engine (:func:`dmargin.engine.rbf_left_out_sums`).
"""

from __future__ import annotations

import numbers
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._base import DaskSelectorMixin
from .._capabilities import sklearn_tags
from .._elimination import N_FEATURES_TO_KEEP, STEP, eliminate
from .._start import start_fit
from .._utils import make_rng
from .._validation import RANDOM_STATE, Interval, Options
from ..engine import rbf_left_out_sums
from ._machine import (
    FIT_INTERCEPT_OPTIONS,
    GAMMA_OPTIONS,
    KERNEL_OPTIONS,
    SCALE_OPTIONS,
    SOLVER_OPTIONS,
    gather_rows,
    known_rows,
    newton_machines,
    pick_solver,
    uses_intercept,
)
from ._solvers import (
    fit_machines,
    machine_labels,
    ovo_pairs,
    resolve_gamma,
)

# ---------------------------------------------------------------------------
# Recursive feature elimination by S(j) = -alpha^T K(-j) alpha
# ---------------------------------------------------------------------------


class _KernelRFE(DaskSelectorMixin, BaseEstimator):
    """The RFE loop shared by LDM-RFE and SVM-RFE.

    Each subclass trains its machines in ``_machines(X, codes, gamma, rng)``,
    the coefficients of the binary machines on ``X`` (surviving features):
    ``(alpha, w)`` with ``alpha`` of shape (n_samples, n_machines) for the RBF
    kernel (``w`` None), or ``w`` of shape (n_machines, A) for the linear
    kernel (``alpha`` None).
    """

    def fit(self, X, y):
        """Rank the features by recursive elimination.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            numpy, pandas or dask.  Dask with ``solver="cd"``: the machines
            train on the driver (at most :data:`GATHER_MAX_ROWS` rows are
            gathered) and the RBF scoring pass runs on the persisted row
            blocks; with ``solver="newton"`` nothing is gathered.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        # Initialization
        if known_rows(X) is not None:  # fail before any pass over dask rows
            pick_solver(self, X, known_rows(X))
        data, rows = start_fit(self, X, y)[:2]
        solver = pick_solver(self, X, rows.n_samples)
        if solver == "newton":  # the rows stay where they are
            gamma, k = None, len(data.classes)
            last = []

            def machines(cols):
                # Each round starts from the last one's machines on the survivors.
                coef, intercept, _ = newton_machines(
                    self, rows, cols, k, start=last[-1] if last else None
                )
                last[:] = [(np.asarray(cols), coef, intercept)]
                return None, coef
        else:
            Xd, codes = gather_rows(rows.X), gather_rows(rows.codes)
            gamma = resolve_gamma(self.gamma, Xd)  # fixed for all rounds (dmargin's choice)
            rng = make_rng(self.random_state)
            machines = lambda cols: self._machines(Xd[:, cols], codes, gamma, rng)  # noqa: E731

        # Elimination: Algorithm 1 of Ou et al. (2017), every feature tied at the minimum
        result = eliminate(
            self,
            lambda cols: self._scores(rows, machines(cols), cols, gamma),
            rows.n_features,
            n_features_to_select=self.n_features_to_select,
            step=self.step,
            ties="together",
        )

        # Final attributes
        self.classes_ = data.classes
        self.gamma_ = gamma
        self.support_ = result.support
        self.ranking_ = result.ranking
        self.n_features_ = int(result.support.sum())
        self.scores_ = result.history
        self.elimination_scores_ = result.scores
        self.n_iter_ = result.n_iter
        return self

    def _scores(self, rows, machines, cols, gamma):
        """``S(j) = -alpha^T K(-j) alpha`` (or |DJ|) for the surviving features."""
        alpha, w = machines
        if w is not None:
            # Linear kernel: alpha^T K(-j) alpha = ||w||^2 - w_j^2, SVM-RFE's w_j^2 (Guyon 2002).
            full = np.sum(w * w)
            left_out = full - np.sum(w * w, axis=0)
        else:
            sums = rbf_left_out_sums(rows, alpha, cols, gamma)
            left_out, full = sums[:-1], sums[-1]
        if self.criterion == "abs":
            return np.abs(0.5 * (full - left_out))
        return -left_out

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        return self.support_

    def __sklearn_tags__(self):
        return sklearn_tags(self, super().__sklearn_tags__())


_RFE_CONSTRAINTS = {
    "n_features_to_select": N_FEATURES_TO_KEEP,
    "step": STEP,
    "C": [Interval(numbers.Real, 0, None, closed="neither")],
    "kernel": KERNEL_OPTIONS,
    "gamma": GAMMA_OPTIONS,
    "criterion": [Options(("signed", "abs"))],
    "scale": SCALE_OPTIONS,
    "solver": SOLVER_OPTIONS,
    "random_state": [RANDOM_STATE],
}

_RFE_DOC = """
    n_features_to_select : int or float, default=1
        Features kept: a count, or a fraction in (0, 1] (at least one).
    step : int or float, default=1
        Features removed per round (a fraction in (0, 1) of the initial
        count, at least one); every feature tied at the minimum score is
        removed with them (Ou et al. 2017, Algorithm 1), unless that
        would leave fewer than ``n_features_to_select``.
    C : float, default={C}
        The machines' penalty on margin violations (the box ``0 <= b <= C``).
    kernel : {{"rbf", "linear"}}, default="rbf"
        ``"linear"`` ranks by ``w_j^2`` (Guyon's linear SVM-RFE criterion).
    gamma : {{"scale", "auto"}} or float, default="scale"
        RBF width, resolved once on all features and kept for every round.
    criterion : {{"signed", "abs"}}, default="signed"
        ``"signed"`` removes the smallest ``S(j) = -alpha^T K(-j) alpha``
        (the paper's eq. (4); equivalently the smallest
        ``DJ(j) = (alpha^T K alpha - alpha^T K(-j) alpha) / 2``); ``"abs"``
        the smallest ``|DJ(j)|``.
    scale : {{"minmax"}} or None, default="minmax"
        Scale features to [0, 1] first (the paper's protocol).
    solver : {{"auto", "cd", "newton"}}, default="auto"
        How the machines train.  ``"cd"``: in memory on the driver ({cd});
        dask input above :data:`GATHER_MAX_ROWS` (10,000) rows is refused
        with a ``ValueError`` rather than gathered.  ``"newton"`` (linear
        kernel): {newton}, by trust-region Newton over the row blocks where
        they live, nothing gathered -- for 10^6 rows and more.
        ``"auto"``: ``"newton"`` for the linear kernel on dask input or above
        :data:`NEWTON_MIN_ROWS` (10,000) rows, else ``"cd"``.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the machines' training (the coordinate order of a descent).
"""

_RFE_ATTRS = """
    Attributes
    ----------
    support_ : ndarray of shape (n_features_in_,)
        Mask of the kept features.
    ranking_ : ndarray of shape (n_features_in_,)
        1 for kept features; features removed in the last round get 2, and
        so on (as scikit-learn's ``RFE``).
    n_features_ : int
        Number of kept features.
    scores_ : list of (ndarray, ndarray)
        Per round: the surviving feature indices and their scores.
    elimination_scores_ : ndarray of shape (n_features_in_,)
        The criterion (``S(j)``, or ``|DJ(j)|`` with ``criterion="abs"``)
        each feature had in the round it was eliminated; kept features:
        their criterion in the last round.  NaN when there was no round
        (``n_features_to_select`` keeps every feature).
    gamma_ : float or None
        ``None`` with ``solver="newton"`` (the linear kernel has no width).
    n_iter_ : int
        Rounds of elimination.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only for input with string column names.
"""


class LDMRFE(_KernelRFE):
    __doc__ = (
        """Recursive feature elimination with LDM (Ou, Wang, Pang & Coghill, 2017).

    Each round trains LDM (one machine per pair of classes) on the surviving
    features and scores every feature by ``S(j) = -alpha^T K(-j) alpha``
    summed over the machines (Ou et al. 2017, equation 4); the lowest go.
    The scores are one blocked pass over pairs of rows on the engine
    (``K(-j)`` from the identity ``K(-j)_ab = K_ab exp(gamma (x_aj - x_bj)^2)``,
    never a kernel matrix per feature); for dask input or under a
    ``distributed.Client`` that pass runs as tasks on the persisted row blocks.

    Parameters
    ----------"""
        + _RFE_DOC.format(
            C="1.0",
            cd="LDM's dual coordinate descent",
            newton="the LDM primal (Zhang & Zhou 2014) solved exactly, as :class:`LDM` does",
        )
        + """    lambda1 : float, default=0.125
        LDM's weight of the margin variance (see :class:`LDM`).
    lambda2 : float, default=0.125
        LDM's weight of the margin mean (see :class:`LDM`).
    fit_intercept : bool or "auto", default="auto"
        LDM's bias (see :class:`LDM`; ``"auto"``: with the linear kernel
        only).  The scores use ``w`` (or ``alpha``) alone: with the RBF
        kernel the bias shifts every ``S(j)`` by the same ``(sum alpha)^2``.
    max_iter : int, default=1000
        LDM's passes of the descent, at most.
    tol : float, default=0.01
        LDM's stopping gap of the descent.
"""
        + _RFE_ATTRS
        + """
    See Also
    --------
    LDM : The classifier.
    SVMRFE : The same elimination with scikit-learn's SVC.

    Examples
    --------
    >>> import numpy as np
    >>> from dmargin import LDMRFE
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 40)
    >>> X = rng.random((80, 5))
    >>> X[:, 2] += y
    >>> LDMRFE(n_features_to_select=1, random_state=0).fit(X, y).get_support()
    array([False, False,  True, False, False])
    """
    )

    _parameter_constraints: ClassVar[dict] = {
        **_RFE_CONSTRAINTS,
        "lambda1": [Interval(numbers.Real, 0, None)],
        "lambda2": [Interval(numbers.Real, 0, None)],
        "fit_intercept": FIT_INTERCEPT_OPTIONS,
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        n_features_to_select=1,
        *,
        step=1,
        C=1.0,
        lambda1=0.125,
        lambda2=0.125,
        kernel="rbf",
        gamma="scale",
        criterion="signed",
        fit_intercept="auto",
        max_iter=1000,
        tol=0.01,
        scale="minmax",
        solver="auto",
        random_state=None,
    ):
        self.n_features_to_select = n_features_to_select
        self.step = step
        self.C = C
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.kernel = kernel
        self.gamma = gamma
        self.criterion = criterion
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.scale = scale
        self.solver = solver
        self.random_state = random_state

    def _machines(self, X, codes, gamma, rng):
        machines = fit_machines(
            X,
            codes,
            np.arange(codes.max() + 1),
            C=self.C,
            lambda1=self.lambda1,
            lambda2=self.lambda2,
            kernel=self.kernel,
            gamma=gamma,
            tol=self.tol,
            max_iter=self.max_iter,
            rng=rng,
            fit_intercept=uses_intercept(self),
        )
        if self.kernel == "linear":
            return None, machines.coef
        return machines.alpha.T, None

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: LDM's linear primal passes in each elimination
        round; ``None`` for the in-memory solvers."""
        from ._cost import linear_primal_cost

        return linear_primal_cost(self, n_samples, n_features, eliminates=True)


class SVMRFE(_KernelRFE):
    __doc__ = (
        """SVM-RFE (Guyon, Weston, Barnhill & Vapnik, 2002) with scikit-learn's SVC.

    The baseline of LDM-RFE: each round trains ``SVC`` (one binary machine
    per pair of classes) and scores ``S(j) = -a^T K(-j) a`` with ``a`` the
    signed dual coefficients (``DJ(j)`` of Guyon et al. up to a constant;
    ``w_j^2`` for the linear kernel), on the same engine pass as
    :class:`LDMRFE`.

    Parameters
    ----------"""
        + _RFE_DOC.format(
            C="1.0",
            cd="scikit-learn's ``SVC``, hinge loss with an unregularised intercept",
            newton="scikit-learn's ``LinearSVC`` problem (squared hinge, L2, intercept as a "
            'regularised constant feature), so the ranking can differ from ``"cd"``\'s',
        )
        + _RFE_ATTRS
        + """
    See Also
    --------
    LDMRFE : The same elimination with LDM.
    sklearn.feature_selection.RFE : Linear SVM-RFE by ``coef_``.
    """
    )

    _parameter_constraints: ClassVar[dict] = dict(_RFE_CONSTRAINTS)

    def __init__(
        self,
        n_features_to_select=1,
        *,
        step=1,
        C=1.0,
        kernel="rbf",
        gamma="scale",
        criterion="signed",
        scale="minmax",
        solver="auto",
        random_state=None,
    ):
        self.n_features_to_select = n_features_to_select
        self.step = step
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.criterion = criterion
        self.scale = scale
        self.solver = solver
        self.random_state = random_state

    def _machines(self, X, codes, gamma, rng):
        from sklearn.svm import SVC

        pairs = ovo_pairs(codes.max() + 1)
        alpha = np.zeros((X.shape[0], len(pairs)))
        w = np.zeros((len(pairs), X.shape[1]))
        for p, pair in enumerate(pairs):
            idx, yp = machine_labels(codes, pair)
            svc = SVC(
                C=self.C, kernel=self.kernel, gamma=gamma, random_state=int(rng.integers(2**31 - 1))
            ).fit(X[idx], yp)
            alpha[idx[svc.support_], p] = svc.dual_coef_[0]
            w[p] = svc.dual_coef_[0] @ X[idx[svc.support_]]
        return (None, w) if self.kernel == "linear" else (alpha, None)

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: the squared-hinge SVM's primal passes in each
        elimination round; ``None`` for the in-memory solvers."""
        from ._cost import linear_primal_cost

        return linear_primal_cost(self, n_samples, n_features, svm=True, eliminates=True)
