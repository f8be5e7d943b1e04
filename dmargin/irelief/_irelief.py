"""Batch I-RELIEF (Sun 2007): soft hit and miss probabilities from the current
weights, one engine statistic per iteration, and the update on the driver.

Online I-RELIEF, which streams rows instead, is in :mod:`dmargin.irelief._online`.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._base import N_ANCHORS, N_FEATURES_TO_SELECT, WeightSelector, anchors_for, miss_priors
from .._capabilities import Capabilities
from .._start import start_fit
from .._utils import logger, make_rng, timer, warn
from .._validation import ARRAY, BOOLEAN, RANDOM_STATE, Interval, Options
from ..engine import (
    MISSING,
    feature_kinds,
    irelief_agg,
    irelief_agg_missing,
    lse_statistic,
)
from ..progress import fit_steps
from ..relief._relief import SCALE, positive_unit
from ._cost import irelief_cost


class IRelief(WeightSelector):
    """Iterative RELIEF: feature weights by expected margins (Sun, 2007).

    Alternates the E-step -- soft nearest hits and misses under the current
    weighted Manhattan distance, with the probability that each sample is
    not an outlier -- and the closed-form M-step ``w = nu+ / ||nu+||``
    (Sun 2007, equations 8 to 12).
    Each E-step is one pass of the pairwise engine: in-process for numpy and
    pandas input, as dask tasks for dask input or under an active
    ``distributed.Client``.

    Parameters
    ----------
    sigma : float, default=2.0
        Kernel width of ``exp(-d / sigma)``.  Larger values converge faster
        (Theorem 2); 2 suits features scaled to [0, 1].
    max_iter : int, default=100
        Cap on the iterations; a ``ConvergenceWarning`` is raised when it is
        reached before ``tol`` (not with ``tol=0``, which asks for exactly
        ``max_iter`` iterations).
    tol : float, default=1e-3
        Stop when ``||w(t) - w(t-1)||_2 < tol``.
    multiclass : {"margin", "relieff"}, default="margin"
        ``"margin"`` is I-RELIEF-2 (one softmax over all other-class
        samples); ``"relieff"`` is I-RELIEF-1 (a softmax per miss class,
        weighted by ``P(c) / (1 - P(y))``).  Identical for two classes.
    outliers : bool, default=True
        Weight each sample by the probability that it is not an outlier
        (eq. 10).  A sample with no other member of its class then gets
        weight 0.
    discrete_threshold : int, default=0
        A feature with at most this many distinct values (missing values not
        counted) is discrete: its difference is 0 (equal) or 1 (different),
        in the distance and in the margins (skrebate's rule, as ReliefF's; a
        discrete mismatch weighs 1 and continuous differences are not
        ramped: the learned weights scale every feature).  ``0``: every
        feature continuous.
    scale : {"minmax"} or None, default="minmax"
        Scale each feature to [0, 1] over the training data first (constant
        features become 0).  ``None`` uses the numbers as given.
    init : {"uniform", "random"} or array-like of shape (n_features,), default="uniform"
        Starting weights: ``1 / n_features`` each, a random point of the unit
        sphere's nonnegative part (seeded by ``random_state``), or the given
        nonnegative weights as they are.
    n_anchors : int, float or None, default=None
        Anchors per iteration: ``None`` scores every sample against all
        samples (the paper's I-RELIEF, O(N^2 A) per iteration); an int ``m``
        (or a fraction of N) scores a sample of ``m`` anchors, drawn once per
        fit and stratified by class, against all N samples: O(m N A) per
        iteration, the Relief literature's ``m`` (Kononenko's, Weka's
        ``-M``).  The weights then estimate the exact ones (``benchmarks/``
        measures how closely).
    n_features_to_select : int, float or None, default=None
        For ``transform``: ``None`` keeps features with positive weight, an
        int the top ones, a float that fraction.
    random_state : int, Generator or None, default=None
        Seeds ``init="random"`` and the sample of anchors.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        The learned weights ``w`` (nonnegative, unit L2 norm).
    discrete_features_ : ndarray of shape (n_features,), dtype=bool
        The features treated as discrete (``discrete_threshold``).
    n_iter_ : int
        Iterations run.
    history_ : ndarray of shape (n_iter_,)
        ``||w(t) - w(t-1)||_2`` per iteration.
    anchor_indices_ : ndarray of shape (m,) or None
        The rows used as anchors (sorted), ``None`` when every row was one.
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` had string column names.

    See Also
    --------
    OnlineIRelief : the stochastic version for very large N.
    ReliefF : hard k-nearest neighbours, one pass.

    Notes
    -----
    Each iteration costs O(N^2 A) and memory O(N A): hit and miss
    probabilities are never stored, each anchor's softmax is merged over
    candidate blocks by log-sum-exp.

    Missing values (NaN) follow ReliefF's rule (skrebate 0.8.4's), with
    probabilities for counts: a pair's distance sums ``w_f z_f`` over the
    features present in both rows, scaled by ``A / n_present`` (the mean over
    the features present, times ``A``: a complete pair keeps its distance);
    a pair with no feature in common is no neighbour; the expected hit and
    miss differences of feature ``f`` are taken over the neighbours that
    have it (their probabilities renormalised), 0 when none has it.  The
    outlier probability ``gamma`` comes from the distances as always.
    Infinite values are refused.

    References
    ----------
    Y. Sun, "Iterative RELIEF for feature weighting: algorithms, theories,
    and applications", IEEE TPAMI 29(6), 2007.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dmargin import IRelief
    >>> X, y = make_classification(n_samples=200, n_features=8, n_informative=2,
    ...                            n_redundant=0, random_state=0)
    >>> est = IRelief().fit(X, y)
    >>> est.feature_importances_.shape
    (8,)
    """

    _parameter_constraints = {
        "sigma": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "multiclass": [Options(("margin", "relieff"))],
        "outliers": [BOOLEAN],
        "discrete_threshold": [Interval(numbers.Integral, 0, None)],
        "scale": SCALE,
        "init": [Options(("uniform", "random")), ARRAY],
        "n_anchors": N_ANCHORS,
        "n_features_to_select": N_FEATURES_TO_SELECT,
        "random_state": [RANDOM_STATE],
    }

    _capabilities = Capabilities(allow_nan=True)

    def __init__(
        self,
        *,
        sigma=2.0,
        max_iter=100,
        tol=1e-3,
        multiclass="margin",
        outliers=True,
        discrete_threshold=0,
        scale="minmax",
        init="uniform",
        n_anchors=None,
        n_features_to_select=None,
        random_state=None,
    ):
        self.sigma = sigma
        self.max_iter = max_iter
        self.tol = tol
        self.multiclass = multiclass
        self.outliers = outliers
        self.discrete_threshold = discrete_threshold
        self.scale = scale
        self.init = init
        self.n_anchors = n_anchors
        self.n_features_to_select = n_features_to_select
        self.random_state = random_state

    def _initial_weights(self, n_features):
        if isinstance(self.init, str):
            if self.init == "uniform":
                return np.full(n_features, 1.0 / n_features)
            w = make_rng(self.random_state).random(n_features)
            return w / np.linalg.norm(w)
        w = np.asarray(self.init, dtype=np.float64)
        if (
            w.shape != (n_features,)
            or not np.all(np.isfinite(w))
            or np.any(w < 0)
            or not np.any(w > 0)
        ):
            raise ValueError(
                f"init must be {n_features} finite nonnegative weights, not all zero; "
                f"got an array of shape {w.shape}."
            )
        return w.copy()

    def fit(self, X, y):
        """Learn the feature weights.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels of any type.

        Returns
        -------
        self : IRelief
        """
        # Initialisation
        data, rows = start_fit(self, X, y)[:2]
        kinds = feature_kinds(
            rows, self.discrete_threshold, ramps=False, mixed_weight=False, missing=data.missing
        )
        agg = irelief_agg_missing if kinds.kind == MISSING else irelief_agg
        agg_args = (self.multiclass == "margin", miss_priors(data.counts), bool(self.outliers))
        w = self._initial_weights(rows.n_features)
        anchors = anchors_for(self, rows)

        # Iteration: E-step on the engine, M-step here (Fig. 2 of the paper)
        history = []
        with fit_steps(self, "iteration", self.max_iter) as steps:
            for it in range(1, self.max_iter + 1):
                with timer("I-RELIEF iteration %d", it):
                    # eq. (12)
                    nu = lse_statistic(
                        rows, w, self.sigma, agg, agg_args, anchors=anchors, kinds=kinds
                    )
                w_new = positive_unit(nu)
                if w_new is None:
                    warn(
                        "nu+ is zero: no feature separates the classes under these "
                        "weights; returning all-zero weights.",
                        RuntimeWarning,
                    )
                    w_new = np.zeros_like(w)
                    history.append(np.linalg.norm(w_new - w))
                    w = w_new
                    break
                history.append(np.linalg.norm(w_new - w))
                w = w_new
                steps.step(change=history[-1], tol=self.tol)  # time left from convergence
                logger.debug("I-RELIEF iteration %d: change %.3g", it, history[-1])
                if history[-1] < self.tol:
                    break
            else:
                if self.tol > 0:
                    warn(
                        f"I-RELIEF did not converge in max_iter={self.max_iter} iterations (last "
                        f"change {history[-1]:.3g} >= tol={self.tol}); increase max_iter or sigma.",
                        ConvergenceWarning,
                    )

        # Final attributes
        self.classes_ = data.classes
        self.discrete_features_ = kinds.discrete
        self.anchor_indices_ = None if anchors is None else anchors.index
        self.feature_importances_ = w
        self.history_ = np.asarray(history)
        self.n_iter_ = len(history)
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: a pass over the pairs of rows per iteration."""
        return irelief_cost(self, n_samples, n_features)


# ---------------------------------------------------------------------------
# ReliefF and Relief (hard neighbours)
# ---------------------------------------------------------------------------
