"""MuRelief: each anchor's neighbours are the rows whose distance lies farthest from their
class's mean distance.

skrebate 0.8.4's ``MuRelief`` (``murelief.py``, mu-Relief): for an anchor and
each class, the mean of the anchor's distances to that class's other rows;
a row's key is how far its distance lies from its class's mean, and the
anchor scores its ``n_neighbors`` rows of largest key among its hits and
among each other class, with the SURF family's scoring.  Two passes of the
hard-neighbour statistic over the same tiles
(:func:`dmargin.engine.knn_statistic` with ``ranked=True``): the class
means, then each class's ``n_neighbors`` most extreme rows, merged over
candidate blocks as ReliefF's nearest ones are.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._base import N_ANCHORS, N_FEATURES_TO_SELECT, WeightSelector, anchors_for
from .._capabilities import Capabilities
from .._start import start_fit
from .._utils import timer
from .._validation import BOOLEAN, NONE, RANDOM_STATE, Interval, Options
from ..engine import feature_kinds, knn_statistic
from ..surf._terms import surf_terms
from ._cost import murelief_cost
from ._regression import hit_bound, set_target


def murelief_agg(dist, idx, z, ya):
    """An anchor block's share of MuRelief's score (before the division by m).

    ``dist``, ``idx``: ``(anchors, classes, k)``, the chosen rows of each class
    (``inf`` where a class has fewer); ``z``: their differences, NaN where a
    value is missing.  Each class's sum and count per feature (of the rows
    that have it) are scored as the SURF family's near set
    (:func:`dmargin.surf._terms.surf_terms`).
    """
    found = np.isfinite(dist)[..., None] & ~np.isnan(z)
    sums = np.where(found, z, 0.0).sum(axis=2)
    counts = found.sum(axis=2).astype(np.float64)
    return surf_terms(np.concatenate([sums, counts], axis=-1), ya, missing=True).sum(axis=0)


def neighbour_count(n_neighbors, n_samples):
    """skrebate's ``n_neighbors``: an int, or a float ``f`` for ``int(f N / 2)`` rows
    (at least one)."""
    if isinstance(n_neighbors, numbers.Integral):
        return int(n_neighbors)
    return max(1, int(n_neighbors * n_samples * 0.5))


class MuRelief(WeightSelector):
    """MuRelief: the neighbours whose distance lies farthest from their class's mean distance.

    For an anchor ``a`` and each class ``c``, ``mu_ac`` is the mean of ``a``'s
    distances to the other rows of ``c``; a row ``j`` of class ``c`` has the
    key ``|d_aj - mu_ac|``.  The anchor's neighbours are the ``n_neighbors``
    rows of largest key among its own class (hits) and among each other
    class (misses), and it scores them with the SURF family's arithmetic
    (skrebate 0.8.4's ``MuRelief``, Notes).

    Parameters
    ----------
    n_neighbors : int or float, default=100
        Rows per class (skrebate's default); a float ``f`` takes
        ``int(f N / 2)``.
    discrete_threshold : int, default=10
        A feature with at most this many distinct values is discrete
        (skrebate's ``categorical_threshold``), with skrebate's mixed-data
        rules (as ``SURF``).
    scale : {"minmax"} or None, default="minmax"
        ``"minmax"``: a continuous difference is ``|v1 - v2| / (max - min)``;
        ``None`` uses the raw values.
    n_anchors : int, float or None, default=None
        ``None`` scores every row (O(N^2 A), two passes); an int ``m`` (or a
        fraction of N) scores ``m`` anchors drawn stratified by class, and
        the scores are divided by ``m``.
    n_features_to_select : int, float or None, default=None
        For ``transform``: ``None`` keeps features with positive score, an
        int the top ones, a float that fraction.
    rank_absolute : bool, default=False
        For ``transform``: rank the features by the absolute value of their
        scores (skrebate's ``rank_absolute``: a strongly negative score counts
        as informative); ``n_features_to_select=None`` then keeps every
        feature whose score is not 0.
    random_state : int, Generator or None, default=None
        Seeds the sample of anchors.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        The scores, averaged over the anchors.
    discrete_features_ : ndarray of shape (n_features,), dtype=bool
        The features treated as discrete.
    anchor_indices_ : ndarray of shape (m,) or None
        The rows used as anchors, ``None`` when every row was one.
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.  Not set for a continuous target.
    target_type_ : {"binary", "multiclass", "continuous"}
        Class labels, or a continuous target (scikit-learn's
        ``type_of_target``: floats, not all integers).
    hit_bound_ : float
        Continuous target only: ``std(y, ddof=1)``, below which ``|y_a - y_j|``
        makes row ``j`` a hit of anchor ``a``.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` had string column names.

    Notes
    -----
    Scoring: an anchor of class ``y`` with ``h`` chosen hits (difference sum
    ``H``) and ``m_c`` chosen rows of each other class ``c`` (sum ``M_c``,
    ``m = sum m_c``, ``K`` classes) scores ``(sum_c M_c (m_c / m) (K - 1) / m
    - H / h) / N``, each part only when its count is positive, per feature
    over the rows that have it (missing values: skrebate's distance, as
    ``SURF``'s).  Rows of equal key are taken by lower row index.

    Differences from skrebate, each an accident of its code
    (``tests/skrebate_reference.py`` lists them): skrebate walks the anchor
    itself as a candidate hit of key 0, so that with ``n_neighbors`` at or
    above its class's size (the default 100, on small data) it counts itself
    as a hit of difference 0; it takes a row sharing no feature with the
    anchor (distance NaN) first, as the most extreme; and it breaks ties of
    the key by numpy's unstable sort.  Here the anchor is never its own
    neighbour, a row at distance NaN never a neighbour, and ties go to the
    lower row index.  On discrete data the keys are compared exactly
    (``|n_c d - s_c|`` in integers).

    A continuous target is skrebate's continuous endpoint: for each anchor
    the rows fall into its hits (``|y_a - y_j| < std(y, ddof=1)``) and its
    misses, each group with its own mean distance, and the anchor scores
    its ``n_neighbors`` most extreme rows of each group as a binary anchor
    does.

    References
    ----------
    scikit-rebate (skrebate) 0.8.4, EpistasisLab, module ``murelief.py``: the
    definition these scores reproduce.

    Examples
    --------
    >>> from dmargin import MuRelief
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("wdbc")
    >>> MuRelief(n_neighbors=20, n_features_to_select=5).fit(X, y).transform(X).shape
    (569, 5)
    """

    #: Class labels or a continuous target (skrebate's continuous endpoint).
    _capabilities = Capabilities(allow_nan=True, targets=("classes", "continuous"))
    #: Neighbours by distance from their class's mean distance (``False``: the
    #: nearest, skrebate's ``ReliefF`` in :mod:`dmargin.skrebate`).
    _ranked = True
    #: The per-anchor term, ``agg(dist, idx, z, ya) -> (A,)``: an anchor block's share
    #: of the score from its chosen rows of each class (hits and misses of a
    #: continuous target as two classes).
    _agg = staticmethod(murelief_agg)
    _parameter_constraints = {
        "n_neighbors": [
            Interval(numbers.Integral, 1, None),
            Interval(numbers.Real, 0, 1, closed="right"),
        ],
        "discrete_threshold": [Interval(numbers.Integral, 0, None)],
        "scale": [Options(("minmax",)), NONE],
        "n_anchors": N_ANCHORS,
        "n_features_to_select": N_FEATURES_TO_SELECT,
        "rank_absolute": [BOOLEAN],
        "random_state": [RANDOM_STATE],
    }

    def __init__(
        self,
        *,
        n_neighbors=100,
        discrete_threshold=10,
        scale="minmax",
        n_anchors=None,
        n_features_to_select=None,
        rank_absolute=False,
        random_state=None,
    ):
        self.n_neighbors = n_neighbors
        self.discrete_threshold = discrete_threshold
        self.scale = scale
        self.n_anchors = n_anchors
        self.n_features_to_select = n_features_to_select
        self.rank_absolute = rank_absolute
        self.random_state = random_state

    def fit(self, X, y, feature_weights=None):
        """Compute the scores.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels, or a continuous target (floats, not all integers).
        feature_weights : array-like of shape (n_features,), default=None
            Non-negative weights of the features' differences in the distance
            (skrebate's ``fit(X, y, weights)``).

        Returns
        -------
        self : MuRelief
        """
        start = start_fit(self, X, y, feature_weights=feature_weights)
        data, rows, target = start.data, start.rows, start.target
        kinds = feature_kinds(
            rows,
            self.discrete_threshold,
            missing=data.missing,
            discrete=self._declared_discrete(rows.n_features),
        ).weighted(start.feature_weights)
        anchors = anchors_for(self, rows)
        k = neighbour_count(self.n_neighbors, rows.n_samples)
        bound = None if target is None else hit_bound(target)
        with timer(type(self).__name__):
            total = knn_statistic(
                rows,
                k,
                self._agg,
                anchors=anchors,
                kinds=kinds,
                ranked=self._ranked,
                target=target,
                bound=0.0 if bound is None else bound,
            )
        m = rows.n_samples if anchors is None else anchors.n_samples
        set_target(self, None if target is not None else data.classes, bound)
        self.discrete_features_ = kinds.discrete
        self.anchor_indices_ = None if anchors is None else anchors.index
        self.feature_importances_ = np.asarray(total, dtype=np.float64) / m
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: two passes over the pairs (class means, neighbours)."""
        return murelief_cost(self, n_samples, n_features, ranked=self._ranked)
