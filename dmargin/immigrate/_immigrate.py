"""IMMIGRATE and IM4E-IMMIGRATE: feature interactions by max-min entropy margins.

IMMIGRATE (Zhao, Hong & Liu) learns a symmetric nonnegative weight matrix W
whose diagonal weighs features and whose off-diagonal weighs feature
interactions, under the quadratic-Manhattan distance ``q = |x - x'|^T W |x - x'|``.
It alternates an E-step (soft hits and misses, one pass of the pairwise
engine) and a driver-side M-step (Zhao, Hong & Liu 2020, section 3; the steps
are :mod:`dmargin.immigrate._solver`).
IM4E-IMMIGRATE runs it on the features IM4E keeps (:mod:`dmargin.immigrate._im4e`, the
vector form); BIM, which boosts it (section 3.5), is in :mod:`dmargin.immigrate._boosted`.
All predict by expected distance to
each class (:mod:`dmargin.immigrate._softmin`).
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from .._base import N_ANCHORS, N_FEATURES_TO_SELECT, anchors_for
from .._capabilities import Capabilities
from .._cost import format_seconds
from .._start import start_fit
from .._utils import make_rng, warn
from .._validation import ARRAY, NONE, RANDOM_STATE, Interval, Options
from ..engine import prepare_rows
from ..progress import fit_steps
from ._cost import immigrate_seconds
from ._im4e import IM4E
from ._softmin import (
    HISTORY,
    SCALE,
    SoftminClassifier,
    anchor_weights,
    sample_weights,
)
from ._solver import immigrate_kernel, immigrate_loop, symmetric_unit

# ---------------------------------------------------------------------------
# IMMIGRATE
# ---------------------------------------------------------------------------


class Immigrate(SoftminClassifier):
    """IMMIGRATE: feature and interaction weights by max-min entropy margins.

    Learns ``W`` (A x A, symmetric, nonnegative, ``||W||_F = 1``): main effects on
    the diagonal, pairwise interactions off it.  Each step computes, for
    every sample, softmax hit and miss probabilities under ``q = z^T W z``
    (misses pool all other classes), accumulates
    ``Sigma = sum_n D_n (sum_H alpha z z^T - sum_M beta z z^T)`` on the engine, and
    sets ``W`` from the negative eigenvalues of ``Sigma`` with negative entries
    clipped, as the authors' R package (Immigrate 0.2.1).  Predicts by expected distance to
    each class (eq. 3.18).

    Parameters
    ----------
    sigma : float, default=1.0
        Softmax temperature.
    max_iter : int, default=10
        Steps: exactly this many with the default ``tol=0`` (the paper's 10),
        at most this many with ``tol > 0``.
    tol : float, default=0
        The convergence check, off by default: ``0`` runs exactly ``max_iter``
        steps, as the paper does (the reference R package's cost test rarely
        fires, so it too runs 10), and never warns.  ``tol > 0`` opts in:
        stop as soon as ``||W(t) - W(t-1)||_F < tol``, and raise a
        ``ConvergenceWarning`` if that has not happened after ``max_iter``
        steps.  IMMIGRATE's update often keeps moving (W can cycle between a
        few matrices; ``history_["change"]`` shows it), so a check is worth
        asking for only when a converged W is what is wanted.

        .. versionchanged:: 0.2.0
           The default was ``1e-4``, which warned on ordinary data (the
           bundled ``wdbc`` and ``heart`` among them); ``tol=1e-4`` restores it.
    init : {"identity", "random"} or array-like of shape (A, A), default="identity"
        ``I / sqrt(A)``; a random symmetric nonnegative matrix (seeded by
        ``random_state``); or the given matrix, symmetrised and normalised to
        Frobenius norm 1.
    prune : float or None, default=None
        From step ``max_iter // 2`` on, set entries below this threshold to 0
        and renormalise (the paper uses ``1 / A``).
    scale : {"standard"} or None, default="standard"
        Standardise features (mean 0, variance 1; constant features become 0)
        as the paper does; ``None`` uses the numbers as given. The paper
        standardises continuous features only and keeps categorical codes:
        for such data put a ``ColumnTransformer`` in front and use ``None``.
    n_anchors : int, float or None, default=None
        ``None``: every sample's margin enters each step (O(N^2 A^2) per
        step).  An int ``m`` (or a fraction of N): ``m`` anchors, drawn once
        per fit (stratified by class, seeded by ``random_state``), each
        against all N samples -- O(m N A^2) per step, their terms weighted
        ``N / m`` so that ``Sigma`` estimates the full sum.
    n_features_to_select : int, float or None, default=None
        For ``transform``, ranking by the diagonal of ``W``.
    prediction_sigma : float or None, default=None
        The kernel width of the prediction rule (eq. 3.18): ``None`` uses
        ``sigma``, as the paper writes it; the reference R package predicts
        with 1 whatever ``sigma`` was fitted (``prediction_sigma=1.0``
        reproduces it). ``W`` does not depend on it, so a fitted model can be
        scored at several values through ``set_params`` without refitting.
    random_state : int, Generator or None, default=None
        Seeds ``init="random"`` and the sample of anchors.

    Attributes
    ----------
    weight_matrix_ : ndarray of shape (n_features, n_features)
    feature_importances_ : ndarray of shape (n_features,)
        The diagonal of ``weight_matrix_``.
    interactions_ : pandas.DataFrame
        Feature pairs ``i < j`` ranked by ``W[i, j]``: columns ``feature_i``,
        ``feature_j``, ``i``, ``j``, ``weight``.
    classes_ : ndarray of shape (n_classes,)
    n_iter_ : int
    history_ : ndarray of shape (n_iter_,), structured
        ``history_["cost"]``: the paper's cost (eq. 3.5, 3.19 with weights)
        after each step; ``history_["change"]``: ``||W(t) - W(t-1)||_F``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    References
    ----------
    R. Zhao, P. Hong, J. S. Liu, "IMMIGRATE: a margin-based feature selection
    method with interaction terms", Entropy 22(3), 2020.

    Examples
    --------
    >>> from dmargin import Immigrate
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("heart")
    >>> est = Immigrate().fit(X, y)
    >>> est.weight_matrix_.shape
    (13, 13)
    """

    _parameter_constraints = {
        "sigma": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "init": [Options(("identity", "random")), ARRAY],
        "prune": [NONE, Interval(numbers.Real, 0, None)],
        "scale": SCALE,
        "n_anchors": N_ANCHORS,
        "n_features_to_select": N_FEATURES_TO_SELECT,
        "prediction_sigma": [NONE, Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": [RANDOM_STATE],
    }

    def __init__(
        self,
        *,
        sigma=1.0,
        max_iter=10,
        tol=0.0,
        init="identity",
        prune=None,
        scale="standard",
        n_anchors=None,
        n_features_to_select=None,
        prediction_sigma=None,
        random_state=None,
    ):
        self.sigma = sigma
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.prune = prune
        self.scale = scale
        self.n_anchors = n_anchors
        self.n_features_to_select = n_features_to_select
        self.prediction_sigma = prediction_sigma
        self.random_state = random_state

    def _sigma(self):
        return self.sigma if self.prediction_sigma is None else self.prediction_sigma

    def _kernel_params(self):
        return immigrate_kernel(self.weight_matrix_, self._sigma(), len(self.classes_))

    def _partial_expectation(self, u):
        return u

    def _initial_matrix(self, n_features):
        if isinstance(self.init, str):
            if self.init == "identity":
                return np.eye(n_features) / np.sqrt(n_features)
            R = make_rng(self.random_state).random((n_features, n_features))
            return symmetric_unit(R)
        W = np.asarray(self.init, dtype=np.float64)
        if (
            W.shape != (n_features, n_features)
            or not np.all(np.isfinite(W))
            or np.any(W < 0)
            or not np.any(W > 0)
        ):
            raise ValueError(
                f"init must be a finite nonnegative {n_features} x {n_features} matrix, "
                f"not all zero; got shape {W.shape}."
            )
        return symmetric_unit(W)

    def fit(self, X, y, sample_weight=None):
        """Learn the weight matrix.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Weights ``D_n`` of each sample's margin and entropy terms (eq. 3.19).

        Returns
        -------
        self : Immigrate

        Warns
        -----
        UserWarning
            Once, before the first step, when the data are wide enough for
            the fit to be slow (estimated over a minute, or more than 1000
            features): each step costs about ``N^2 A^2``, and
            :class:`IM4EImmigrate` is the estimator made for such data.
        """
        data, rows = start_fit(self, X, y)[:2]
        weight = sample_weights(sample_weight, rows.n_samples)
        W = self._initial_matrix(rows.n_features)
        anchors = anchors_for(self, rows)
        weight = anchor_weights(weight, anchors)
        _wide_data_hint(
            rows.n_samples,
            rows.n_features,
            self.max_iter,
            None if anchors is None else anchors.n_samples,
        )
        with fit_steps(self, "step", self.max_iter) as steps:
            W, history = immigrate_loop(
                rows,
                W,
                weight,
                self.sigma,
                self.max_iter,
                self.tol,
                self.prune,
                on_step=steps.step,
                anchors=anchors,
            )
        self.anchor_indices_ = None if anchors is None else anchors.index
        return self._set_fitted(W, history, data, rows)

    def _set_fitted(self, W, history, data, rows, like=None):
        if like is not None:  # the fit was another estimator's: its input checks hold here
            self.n_features_in_ = like.n_features_in_
            if hasattr(like, "feature_names_in_"):
                self.feature_names_in_ = like.feature_names_in_
        self.classes_ = data.classes
        self.weight_matrix_ = W
        self.feature_importances_ = np.diag(W).copy()
        self.history_ = np.array(history, dtype=HISTORY)
        self.n_iter_ = len(history)
        self.interactions_ = _interaction_table(W, _names(self, rows.n_features))
        self._store_training(data, rows)
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: ``N^2 A^2`` outer-product terms a step."""
        from ._cost import immigrate_cost

        return immigrate_cost(self, n_samples, n_features)


#: Above either, Immigrate.fit points to IM4EImmigrate (one UserWarning): a fit estimated
#: at over a minute (:func:`dmargin.fit_cost`), or more features than plain IMMIGRATE is
#: meant for (the paper runs it on UCI sets and turns to IM4E-IMMIGRATE for its microarray
#: sets, A >= 2000; with A^2 / 2 interactions to learn from N rows it also overfits: on
#: 50 x 5000 it missed the one informative feature that IM4EImmigrate ranked first, in 2 s).
_WIDE_SECONDS = 60.0
_WIDE_FEATURES = 1000


def _wide_data_hint(n_samples, n_features, max_iter, n_anchors=None):
    """One UserWarning naming IM4EImmigrate when plain IMMIGRATE is slow on these data."""
    seconds = immigrate_seconds(n_samples, n_features, max_iter, n_anchors)
    if seconds <= _WIDE_SECONDS and n_features <= _WIDE_FEATURES:
        return
    warn(
        f"Immigrate on {n_samples} x {n_features} costs about N^2 A^2 per step (every pair of "
        f"rows adds an A x A matrix) plus an A x A eigendecomposition: ~{format_seconds(seconds)} "
        f"for max_iter={max_iter} on one core. IM4EImmigrate prescreens features with IM4E "
        "first and is made for wide data (thousands of features, few rows).",
        UserWarning,
    )


def _names(est, n_features):
    names = getattr(est, "feature_names_in_", None)
    return (
        np.asarray(names, dtype=object)
        if names is not None
        else np.array([f"x{i}" for i in range(n_features)], dtype=object)
    )


def _interaction_table(W, names, index=None):
    i, j = np.triu_indices(W.shape[0], k=1)
    order = np.argsort(-W[i, j], kind="stable")
    i, j = i[order], j[order]
    if index is not None:
        gi, gj = index[i], index[j]
    else:
        gi, gj = i, j
    return pd.DataFrame(
        {"feature_i": names[gi], "feature_j": names[gj], "i": gi, "j": gj, "weight": W[i, j]}
    )


# ---------------------------------------------------------------------------
# IM4E-IMMIGRATE
# ---------------------------------------------------------------------------


class IM4EImmigrate(SoftminClassifier):
    """IM4E-IMMIGRATE for high-dimensional data (Zhao, Hong & Liu 2020, section 3.6).

    IM4E weighs all features; those with weight above ``threshold`` (default
    ``2 / A``) are kept, and IMMIGRATE runs on them starting from
    ``W0 = diag(w_kept)`` (normalised).  Interactions are modelled only among
    the kept features; results carry the original feature indices and names.

    Parameters
    ----------
    threshold : float or None, default=None
        Keep features with IM4E weight above it; ``None`` is ``2 / A``.  When
        no weight exceeds it (e.g. ``A = 2``), the largest-weight feature(s)
        are kept, with a warning.
    sigma : float, default=1.0
        Used by both stages.
    lam : float, default=1.0
        IM4E's ``lam`` (the first stage).
    max_iter : int, default=10
        Steps of each stage.
    tol : float, default=0
        The convergence check of both stages, as :class:`Immigrate`'s: ``0``
        runs exactly ``max_iter`` steps of each and never warns; ``tol > 0``
        stops each stage early once its weights change by less than ``tol``,
        and warns if one has not after ``max_iter`` steps.

        .. versionchanged:: 0.2.0
           The default was ``1e-4``.
    prune : float or None, default=None
        :class:`Immigrate`'s ``prune`` (the second stage).
    scale : {"standard"} or None, default="standard"
        Standardise features (mean 0, variance 1) before both stages;
        ``None`` uses the numbers as given.
    n_features_to_select : int, float or None, default=None
        For ``transform``, ranking by ``feature_importances_`` (0 for the
        features the prescreen dropped).

    Attributes
    ----------
    features_ : ndarray of shape (n_kept,)
        Original indices of the kept features.
    im4e_weights_ : ndarray of shape (n_features,)
        IM4E's weights of all features.
    weight_matrix_ : ndarray of shape (n_kept, n_kept)
        IMMIGRATE's ``W`` over ``features_``.
    feature_importances_ : ndarray of shape (n_features,)
        ``W``'s diagonal on ``features_``, 0 elsewhere.
    interactions_ : pandas.DataFrame
        As :class:`Immigrate`, with original indices and names.
    classes_, n_iter_, history_, n_features_in_, feature_names_in_
        ``n_iter_`` and ``history_`` are IMMIGRATE's.
    """

    _capabilities = Capabilities(engine_rows=False)  # IM4E and IMMIGRATE lay out their own rows
    _parameter_constraints = {
        "threshold": [NONE, Interval(numbers.Real, 0, None)],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither")],
        "lam": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
        "prune": [NONE, Interval(numbers.Real, 0, None)],
        "scale": SCALE,
        "n_features_to_select": N_FEATURES_TO_SELECT,
    }

    def __init__(
        self,
        *,
        threshold=None,
        sigma=1.0,
        lam=1.0,
        max_iter=10,
        tol=0.0,
        prune=None,
        scale="standard",
        n_features_to_select=None,
    ):
        self.threshold = threshold
        self.sigma = sigma
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.prune = prune
        self.scale = scale
        self.n_features_to_select = n_features_to_select

    def _sigma(self):
        return self.sigma

    def _kernel_params(self):
        return immigrate_kernel(self.weight_matrix_, self.sigma, len(self.classes_))

    def _partial_expectation(self, u):
        return u

    def _scaled(self, X):
        return super()._scaled(X)[:, self.features_]

    def _prediction_features(self):
        return self.features_

    def fit(self, X, y):
        """Prescreen with IM4E, then learn interactions among the kept features.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : IM4EImmigrate
        """
        data = start_fit(self, X, y).data
        n_features = data.X.shape[1]
        # Two stages for progress: the prescreen, then IMMIGRATE (their steps are theirs).
        with fit_steps(self, "stage", 2) as stages:
            im4e = IM4E(
                sigma=self.sigma, lam=self.lam, max_iter=self.max_iter, tol=self.tol, scale=None
            ).fit(data.X, data.codes)
            stages.step()
            w = im4e.feature_importances_
            keep = self._kept(w)
            rows, W, history = self._interactions(data, keep, w)
            stages.step()

        self.classes_ = data.classes
        self.features_ = keep
        self.im4e_weights_ = w
        self.weight_matrix_ = W
        importances = np.zeros(n_features)
        importances[keep] = np.diag(W)
        self.feature_importances_ = importances
        self.history_ = np.array(history, dtype=HISTORY)
        self.n_iter_ = len(history)
        self.interactions_ = _interaction_table(W, _names(self, n_features), index=keep)
        self._store_training(data, rows)
        return self

    def _kept(self, w):
        """Features whose IM4E weight is above the threshold (the largest if none is)."""
        threshold = 2.0 / w.size if self.threshold is None else self.threshold
        keep = np.flatnonzero(w > threshold)
        if keep.size == 0:
            warn(
                f"No feature has an IM4E weight above threshold={threshold:.3g} "
                f"(largest {w.max():.3g}); keeping the largest.",
                RuntimeWarning,
            )
            keep = np.flatnonzero(w == w.max())
        return keep

    def _interactions(self, data, keep, w):
        """``(rows, W, history)``: IMMIGRATE on the kept features, from ``diag(w)``."""
        rows = prepare_rows(data.X[:, keep], data.codes, len(data.classes))
        W, history = immigrate_loop(
            rows,
            symmetric_unit(np.diag(w[keep])),
            np.ones(rows.n_samples),
            self.sigma,
            self.max_iter,
            self.tol,
            self.prune,
        )
        return rows, W, history

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: ``None``, IMMIGRATE's share depends on how many
        features the IM4E prescreen keeps, known only after it."""
        return None


def fitted_immigrate(W, history, *, sigma, max_iter, scale, data, rows, like):
    """A fitted :class:`Immigrate` from a loop run by another fit on its ``rows`` (BIM's
    learners), which it shares; ``like``: the estimator fitted on the same data."""
    est = Immigrate(sigma=sigma, max_iter=max_iter, tol=0.0, scale=scale)
    return est._set_fitted(W, history, data, rows, like=like)
