"""What IMMIGRATE and IM4E share: sample weights, the steps' history, and the classifier.

Both learn a distance by max-min entropy margins, in steps that each end in
a driver-side update; both weigh each sample's margin and entropy terms by
``D_n`` (eq. 3.19), record the cost and the change of each step, and predict
by expected distance to each class (eq. 3.18): ``S[i, c] = sum_{k in c} a_k
dist(x_i, x_k)``, with ``a`` the softmax of ``-dist / sigma`` within class
``c`` (Zhao, Hong & Liu 2020, section 3).

The rule compares every new row with every training row, on the engine's
tiles as the fit does; for dask rows, block by block where they live
(:func:`softmin_on_blocks`).
"""

from __future__ import annotations

import functools

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._base import WeightSelector
from .._dask import is_dask_collection
from .._predict import check_new_rows, new_dask_rows
from .._utils import warn
from .._validation import NONE, Options
from ..engine import anchor_partials, new_rows_softmin, row_partials

#: ``scale``: standardised features (as the papers) or the numbers as given.
SCALE = [Options(("standard",)), NONE]
#: ``history_``: the cost and the change of the weights after each step.
HISTORY = np.dtype([("cost", "f8"), ("change", "f8")])


# ---------------------------------------------------------------------------
# The fits: weights of the samples, convergence
# ---------------------------------------------------------------------------


def sample_weights(sample_weight, n):
    """``D_n`` of each sample (eq. 3.19), checked: ones for ``None``."""
    if sample_weight is None:
        return np.ones(n)
    d = np.asarray(sample_weight, dtype=np.float64)
    if d.shape != (n,) or not np.all(np.isfinite(d)) or np.any(d < 0) or not np.any(d > 0):
        raise ValueError(f"sample_weight must be {n} finite nonnegative numbers, not all zero.")
    return d


def anchor_weights(weight, anchors):
    """The sampled anchors' weights, times ``N / m``: their sums estimate the full ones."""
    if anchors is None:
        return weight
    return weight[anchors.index] * (weight.shape[0] / anchors.n_samples)


def warn_not_converged(name, max_iter, history, tol):
    """ConvergenceWarning after max_iter steps; ``tol=0`` asks for exactly max_iter."""
    if tol > 0 and history:
        warn(
            f"{name} did not converge in max_iter={max_iter} steps (last change "
            f"{history[-1][1]:.3g} >= tol={tol}); the update may be cycling -- see "
            "history_['change'] -- or need more steps.",
            ConvergenceWarning,
        )


# ---------------------------------------------------------------------------
# Prediction by expected distance to each class (eq. 3.18)
# ---------------------------------------------------------------------------


def softmin_distances(rows, kernel, params, X, index, expectation=None):
    """Expected distance of each row of ``X`` to each class (eq. 3.18).

    ``S[i, c] = sum_{k in c} a_k dist(x_i, x_k)`` over the training ``rows``,
    with ``a`` the softmax of ``-dist / sigma`` within class ``c``; ``inf``
    for a class with no candidate.  ``kernel, params``: the engine kernel
    and its parameters; ``index``: global indices of ``X``'s rows (a training
    row is left out of its own class; negative: a new row);
    ``expectation(v)``: the partial's sum as a distance (default: itself).
    """
    m, s, v = anchor_partials(rows, kernel, X, index, params)
    num = v if expectation is None else expectation(v)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, num / np.where(s > 0, s, 1.0), np.inf)


def _nearest_class(m, s, v):
    """The class of smallest expected distance (``v`` holds IMMIGRATE's scalar ``u``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.argmin(np.where(s > 0, v / np.where(s > 0, s, 1.0), np.inf), axis=1)


def loo_codes(rows, kernel, params):
    """Class codes predicted for the training rows, each left out of its own class:
    computed where the rows are; only the codes come back."""
    return row_partials(rows, kernel, params, _nearest_class)


def scaled_rows(est, X, scaling):
    """New rows (numpy, pandas) checked against ``est``'s fit and scaled as its training rows."""
    return check_new_rows(est, X, scaling=scaling)


def _prepare_block(X, scaling, features):
    """A block of new dask rows scaled as the training rows (a task of the predictions)."""
    X = X if scaling is None else scaling.apply(X)
    return np.ascontiguousarray(X if features is None else X[:, features], dtype=np.float64)


def softmin_on_blocks(est, rows, scaling, kernel, params, X, weights=None, features=None):
    """:func:`softmin_distances` of dask rows ``X``, computed where the rows live.

    Each block of ``X`` is scaled where it is and scored against the
    training row blocks by the engine's tiles (as the fit's); only the
    ``(n_samples, n_classes)`` expected distances come back.
    """
    X = new_dask_rows(est, X)
    prepare = functools.partial(_prepare_block, scaling=scaling, features=features)
    return new_rows_softmin(rows, kernel, params, X, prepare, weights)


class SoftminClassifier(ClassifierMixin, WeightSelector):
    """Prediction by expected distance to each class (eq. 3.18, :func:`softmin_distances`).

    Subclasses name the engine kernel and its parameters (``_kernel_params``)
    and how a partial becomes an expected distance (``_partial_expectation``,
    ``_expectation_weights``).

    The rule compares every new row with every training row.  For dask
    input the new rows are scored block by block against the training row
    blocks where they live, by the engine's tiles as in the fit
    (:func:`softmin_on_blocks`): neither the new rows nor the training rows
    reach the client, only the per-row results, which ``predict``,
    ``predict_proba`` and ``decision_function`` return as numpy arrays.  (Not
    lazy, unlike the other estimators' predictions: the computation reads
    the training rows persisted for the fit, which belong to the client of
    the fit.)
    """

    def _store_training(self, data, rows):
        self._rows = rows
        self._scaling = data.scaling

    def _scaled(self, X):
        return scaled_rows(self, X, self._scaling)

    def _expected_distances(self, X):
        check_is_fitted(self, "classes_")
        if is_dask_collection(X):
            kernel, params = self._kernel_params()
            return softmin_on_blocks(
                self,
                self._rows,
                self._scaling,
                kernel,
                params,
                X,
                self._expectation_weights(),
                self._prediction_features(),
            )
        X = self._scaled(X)
        kernel, params = self._kernel_params()
        return softmin_distances(
            self._rows, kernel, params, X, -1 - np.arange(X.shape[0]), self._partial_expectation
        )

    def _partial_expectation(self, v):
        return v

    def _expectation_weights(self):
        """``w`` when the partial's ``v`` is a vector per class (``v @ w``), else None."""
        return None

    def _prediction_features(self):
        """The training columns the rule reads (None: all)."""
        return None

    def decision_function(self, X):
        """``-S / sigma`` per class; for two classes ``(S_0 - S_1) / sigma``.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        S = self._expected_distances(X) / self._sigma()
        return S[:, 0] - S[:, 1] if S.shape[1] == 2 else -S

    def predict_proba(self, X):
        """Softmax of ``-S / sigma`` over the classes.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        z = -self._expected_distances(X) / self._sigma()
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X):
        """The class with the smallest expected distance (eq. 3.18).

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        codes = np.argmin(self._expected_distances(X), axis=1)
        return self.classes_[codes]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        return tags
