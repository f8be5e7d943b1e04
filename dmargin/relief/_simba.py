"""Simba: margin-based feature weighting by stochastic gradient ascent.

Gilad-Bachrach, Navot & Tishby, ICML 2004, with the authors' multi-start.  The
update is sequential over samples (each step's nearest hit and miss depend
on the weights the previous step left), so Simba runs in-process: a numba
kernel walks the visiting order and finds each nearest hit and miss by an
exact O(N d) scan.  Dask input is gathered once to the driver.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._base import N_FEATURES_TO_SELECT, WeightSelector
from .._capabilities import Capabilities
from .._dask import gather
from .._start import start_fit
from .._utils import logger, make_rng, timer, warn
from .._validation import NONE, RANDOM_STATE, Interval, Options
from ..engine import simba_margins, simba_run
from ..progress import fit_steps


def simba_score(X, y, v, sigmoid, beta):
    """The authors' score of the weights ``v``: larger is better.

    Linear utility: ``|sum_x (d_m(x) - d_h(x))|``; sigmoid: ``sum_x 1 / (1 +
    exp(-beta (d_m - d_h)))``, with distances under ``v`` (no 1/2 factor).
    """
    m = simba_margins(X, y, np.ascontiguousarray(v * v))
    m = m[np.isfinite(m)]
    if sigmoid:
        return float(np.sum(1.0 / (1.0 + np.exp(-beta * m))))
    return float(abs(np.sum(m)))


class Simba(WeightSelector):
    """Simba: feature weights maximising the hypothesis margin (Gilad-Bachrach et al.).

    From ``w = 1``, walk the samples in random order; for each sample ``x``
    find its nearest hit and nearest miss under ``||z||_w = sqrt(sum_j w_j^2
    z_j^2)`` and step along the gradient of the utility of its margin
    ``theta(x) = (||x - nm||_w - ||x - nh||_w) / 2``.  ``n_starts`` runs
    differ only in the visiting order; the one with the best score is kept
    and ``w^2 / max(w^2)`` returned, as the authors' MATLAB code does.

    Parameters
    ----------
    n_starts : int, default=5
        Runs from ``w = 1`` with different random orders.
    n_passes : int, default=1
        Passes over the data per run, each a fresh permutation.
    utility : {"linear", "sigmoid"}, default="linear"
        ``u(theta) = theta`` or ``1 / (1 + exp(-beta theta))``.
    beta : float, default=1.0
        Slope of the sigmoid utility.
    scale : {"minmax"} or None, default="minmax"
        Scale features to [0, 1] first (constant features become 0).
    n_features_to_select : int, float or None, default=None
        For ``transform``; ``None`` keeps the features with positive weight.
    random_state : int, Generator or None, default=None
        Seeds the visiting orders: start ``s``, pass ``p`` uses the
        ``(s * n_passes + p)``-th permutation drawn from one generator.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        ``w^2 / max(w^2)`` of the best run (all zero if every weight is 0).
    weights_ : ndarray of shape (n_features,)
        The best run's raw ``w``.
    scores_ : ndarray of shape (n_starts,)
        Each run's score (see ``simba_score``).
    best_start_ : int
    classes_, n_features_in_, feature_names_in_

    Notes
    -----
    The steps are sequential, so Simba runs in-process: each step is an
    exact O(N d) nearest hit/miss scan, O(n_passes n_starts N^2 d) in all.
    Dask input is gathered to the driver once (the rows must fit in its
    memory).  A sample whose class has no other member, or that sits at
    distance 0 from its nearest hit or miss (a duplicated row), is skipped
    as in the authors' code.  A constant feature never changes a distance,
    so its gradient is 0 and its ``w`` stays 1; it is reported with
    importance 0 (it carries no information), not with that untouched 1.

    References
    ----------
    R. Gilad-Bachrach, A. Navot, N. Tishby, "Margin based feature selection:
    theory and algorithms", ICML 2004.
    """

    _capabilities = Capabilities(engine_rows=False)  # it reads the rows in its own passes
    _parameter_constraints = {
        "n_starts": [Interval(numbers.Integral, 1, None)],
        "n_passes": [Interval(numbers.Integral, 1, None)],
        "utility": [Options(("linear", "sigmoid"))],
        "beta": [Interval(numbers.Real, 0, None, closed="neither")],
        "scale": [Options(("minmax",)), NONE],
        "n_features_to_select": N_FEATURES_TO_SELECT,
        "random_state": [RANDOM_STATE],
    }

    def __init__(
        self,
        n_starts=5,
        n_passes=1,
        *,
        utility="linear",
        beta=1.0,
        scale="minmax",
        n_features_to_select=None,
        random_state=None,
    ):
        self.n_starts = n_starts
        self.n_passes = n_passes
        self.utility = utility
        self.beta = beta
        self.scale = scale
        self.n_features_to_select = n_features_to_select
        self.random_state = random_state

    def fit(self, X, y):
        """Learn the feature weights.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : Simba
        """
        data = start_fit(self, X, y).data
        X = gather(data.X, what="Simba's rows")  # sequential: gather
        codes = gather(data.codes, what="Simba's labels")
        X = np.ascontiguousarray(X, dtype=np.float64)
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        rng = make_rng(self.random_state)
        sigmoid = self.utility == "sigmoid"
        constant = np.ptp(X, axis=0) == 0
        runs, scores = [], []
        with fit_steps(self, "start", self.n_starts) as steps:
            for s in range(self.n_starts):
                order = np.concatenate(
                    [rng.permutation(X.shape[0]) for _ in range(self.n_passes)]
                ).astype(np.int64)
                with timer("Simba start %d", s + 1):
                    w = simba_run(X, codes, order, sigmoid, float(self.beta))
                w2 = np.where(constant, 0.0, w * w)
                v = w2 / w2.max() if w2.max() > 0 else w2
                runs.append((w, v))
                scores.append(simba_score(X, codes, v, sigmoid, float(self.beta)))
                logger.debug("Simba start %d: score %.6g", s + 1, scores[-1])
                steps.step()
        best = int(np.argmax(scores))
        w, v = runs[best]
        if not np.any(v > 0):
            warn("Every Simba weight is zero.", RuntimeWarning)
        self.classes_ = data.classes
        self.weights_ = w
        self.scores_ = np.asarray(scores)
        self.best_start_ = best
        self.feature_importances_ = v
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: ``None``, no rate measured for its walks over the
        rows (each row's neighbours under the current weights)."""
        return None
