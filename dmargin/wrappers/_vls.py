"""VLS: very large scale Relief, a Relief estimator fitted on random subsets of the features.

skrebate 0.8.4's ``VLS`` (``vls.py``): the features are shuffled and cut into
subsets of ``size_feature_subset`` (the last one padded with features drawn
again), more subsets are drawn up to ``num_feature_subset``, the wrapped
estimator is fitted on each subset's columns, and a feature's score is its
largest over the subsets that hold it.  Each subset's distances see only its
own features, so a subset fit costs ``N^2 size`` instead of ``N^2 A``.

The subset fits are independent: in-process they run one after the other on
slices of the rows; on dask (dask input, or a client) they are one graph of a
task per subset, each fitting its columns where it runs, and only the scores
come back.
"""

from __future__ import annotations

import numbers
import random

import numpy as np
from sklearn.base import clone

from .._base import N_FEATURES_TO_SELECT, WeightSelector
from .._capabilities import Capabilities
from .._cost import repeated_cost
from .._dask import active_client, is_dask_collection, map_calls
from .._start import start_fit
from .._utils import make_rng
from .._validation import BOOLEAN, RANDOM_STATE, Interval
from ..progress import inner_fits
from ._turf import ESTIMATOR, columns


def feature_subsets(n_features, num_feature_subset, size_feature_subset, random_state):
    """skrebate's ``VLS.make_subsets``: the features shuffled and cut into subsets of
    ``size`` (at most ``n_features``), the last padded with features drawn again
    (not already in it), then random subsets up to ``num_feature_subset``.
    ``random_state`` seeds Python's ``random.Random`` as skrebate's ``random.seed``."""
    rng = random.Random(random_state)
    size = min(size_feature_subset, n_features)
    indices = list(range(n_features))
    rng.shuffle(indices)
    subsets = [indices[k : k + size] for k in range(0, n_features, size)]
    leftover = subsets.pop() if len(subsets[-1]) < size else []
    if leftover:
        while len(leftover) < size:
            candidate = rng.choice(indices)
            if candidate not in leftover:
                leftover.append(candidate)
        subsets.append(leftover)
    for _ in range(num_feature_subset - len(subsets)):
        subsets.append(rng.sample(indices, size))
    return subsets


def _subset_scores(estimator, X, subset, y, weights):
    """The scores of ``estimator`` fitted on ``X``'s columns ``subset`` (``None``: ``X``
    is those columns already)."""
    if subset is not None:
        X = X[:, subset]
    with inner_fits():  # a part of the VLS fit, wherever it runs: no warning, no bar
        est = (
            estimator.fit(X, y) if weights is None else estimator.fit(X, y, feature_weights=weights)
        )
    return np.asarray(est.feature_importances_, dtype=np.float64)


class VLS(WeightSelector):
    """VLS around a dmargin Relief estimator: fits on random feature subsets, best score kept.

    Parameters
    ----------
    estimator : estimator
        A dmargin weight estimator (``MultiSURF`` for GWAS data); cloned for
        each subset.
    num_feature_subset : int, default=40
        At least this many subsets (more when ``size_feature_subset`` is too
        small to cover the features in as many).
    size_feature_subset : int, default=5
        Features per subset (at most the number of features).
    random_state : int, Generator or None, default=None
        Seeds the shuffle and the draws (an int gives skrebate's subsets for
        the same seed).
    rank_absolute : bool, default=False
        A feature's score is the largest in absolute value over its subsets,
        with its sign (skrebate's estimators' ``rank_absolute``).
    n_features_to_select : int, float or None, default=None
        For ``transform``, as the wrapped estimators.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        Each feature's largest score over the subsets that hold it.
    subsets_ : list of ndarray
        The feature subsets, in the order they were fitted.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` had string column names.

    Notes
    -----
    Subsets are drawn as skrebate 0.8.4's ``VLS`` draws them (Python's
    ``random`` seeded with ``random_state``), so the same seed gives the
    same subsets and, around the same estimator, the same scores.  Every
    feature is in at least one subset: ``num_feature_subset *
    size_feature_subset`` must reach the number of features.

    Examples
    --------
    >>> from dmargin import VLS, MultiSURF
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("wdbc")
    >>> vls = VLS(MultiSURF(), num_feature_subset=6, size_feature_subset=10,
    ...           random_state=0).fit(X, y)
    >>> len(vls.subsets_)
    6
    """

    #: It checks the data; the subset fits read it (and keep genotypes as bytes).
    _capabilities = Capabilities(
        allow_nan=True,
        targets=("classes", "continuous"),
        engine_rows=False,
        keep_float32=True,
        compact_rows=True,
    )
    _parameter_constraints = {
        "estimator": [ESTIMATOR],
        "num_feature_subset": [Interval(numbers.Integral, 1, None)],
        "size_feature_subset": [Interval(numbers.Integral, 1, None)],
        "random_state": [RANDOM_STATE],
        "rank_absolute": [BOOLEAN],
        "n_features_to_select": N_FEATURES_TO_SELECT,
    }

    def __init__(
        self,
        estimator,
        *,
        num_feature_subset=40,
        size_feature_subset=5,
        random_state=None,
        rank_absolute=False,
        n_features_to_select=None,
    ):
        self.estimator = estimator
        self.num_feature_subset = num_feature_subset
        self.size_feature_subset = size_feature_subset
        self.random_state = random_state
        self.rank_absolute = rank_absolute
        self.n_features_to_select = n_features_to_select

    @property
    def discrete_threshold(self):
        """The wrapped estimator's ``discrete_threshold`` (0 without one): whether the
        door may keep genotype rows as bytes for the subset fits."""
        return getattr(self.estimator, "discrete_threshold", 0)

    def fit(self, X, y, feature_weights=None):
        """Fit the wrapped estimator on every subset.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        feature_weights : array-like of shape (n_features,), default=None
            Distance weights; each subset fit takes its features' weights.

        Returns
        -------
        self : VLS
        """
        start = start_fit(self, X, y, feature_weights=feature_weights)
        p = self.n_features_in_
        size = min(self.size_feature_subset, p)
        if self.num_feature_subset * size < p:
            raise ValueError(
                f"num_feature_subset * size_feature_subset = {self.num_feature_subset} x "
                f"{size} does not cover the {p} features; raise either (e.g. "
                f"num_feature_subset={-(-p // size)})."
            )
        seed = self.random_state
        if seed is not None and not isinstance(seed, numbers.Integral):
            seed = int(make_rng(seed).integers(2**63))
        subsets = feature_subsets(p, self.num_feature_subset, size, seed)
        w = start.feature_weights
        in_memory = not is_dask_collection(X) and active_client() is None
        if in_memory and not hasattr(X, "iloc"):
            X = np.asarray(X)  # each fit slices its columns: never all subsets' copies at once
        calls = [
            (clone(self.estimator), X, np.asarray(s), y, None if w is None else w[s])
            if in_memory and isinstance(X, np.ndarray)
            else (clone(self.estimator), columns(X, s), None, y, None if w is None else w[s])
            for s in subsets
        ]
        found = map_calls(_subset_scores, calls, what=f"VLS's {len(subsets)} subset fits")
        # A running best per feature (never a subsets x features table: 460 subsets
        # of 230,000 SNPs would hold 0.8 GB); rank_absolute: the largest |score| with
        # its sign, + on a tie, and 0 for no subset's score above 0 in size (skrebate's)
        best = np.full(p, 0.0 if self.rank_absolute else -np.inf)
        for subset, scores in zip(subsets, found):
            current = best[subset]
            if self.rank_absolute:
                size, held = np.abs(scores), np.abs(current)
                better = (size > held) | ((size == held) & (scores > current))
                best[subset] = np.where(better, scores, current)
            else:
                best[subset] = np.maximum(current, scores)
        self.feature_importances_ = best
        self.subsets_ = [np.asarray(s) for s in subsets]
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: a fit of the wrapped estimator per subset, on
        ``size_feature_subset`` features each; ``None`` when it states no cost."""
        size = min(self.size_feature_subset, n_features)
        count = max(self.num_feature_subset, -(-n_features // size))
        return repeated_cost(
            self.estimator, n_samples, [size] * count, f"{count} fits on {size} features each"
        )
