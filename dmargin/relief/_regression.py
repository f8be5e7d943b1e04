"""Regression targets for the Relief family: ReliefF with a continuous endpoint
(skrebate 0.8.4's semantics) and RReliefF (Robnik-Sikonja & Kononenko 2003).

Both read the hard-neighbour tiles of the pairwise engine with every
candidate in one class, so that each anchor's ``K`` nearest rows come back
whatever their target; what a neighbour counts for is decided from the
target in the merge (:func:`relieff_continuous_agg`,
:func:`rrelieff_agg`), anchors x ``K`` at a time.  The target itself
is held once in each graph (8 bytes a row): a neighbour's target is looked
up by its row index.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._base import N_ANCHORS, N_FEATURES_TO_SELECT, WeightSelector, anchors_for
from .._capabilities import Capabilities
from .._pvalues import not_asked, set_pvalues
from .._start import start_fit
from .._utils import make_rng, timer
from .._validation import NONE, RANDOM_STATE, Interval, Options
from ..engine import Anchors, feature_kinds, knn_target_statistic, merge, rows_at
from ..progress import fit_steps
from ._cost import relief_cost
from ._terms import relieff_agg, relieff_continuous_agg, rrelieff_agg, rrelieff_sums

#: Nearest rows asked for per anchor in the first pass of continuous-endpoint ReliefF,
#: in multiples of ``n_neighbors``: enough for k hits and k misses for most anchors.
FIRST_REACH = 4


# ---------------------------------------------------------------------------
# The target: detection and checks
# ---------------------------------------------------------------------------


def hit_bound(y) -> float:
    """skrebate's ``_labels_std``: ``std(y, ddof=1)``.  A neighbour ``j`` of anchor
    ``a`` is a hit when ``|y_a - y_j|`` is below it, a miss otherwise."""
    return float(np.std(y, ddof=1))


def set_target(est, classes=None, bound=None):
    """The target's fitted attributes: ``classes_`` and ``target_type_``
    ("binary" or "multiclass") for class labels, or (``bound`` given)
    ``target_type_ = "continuous"`` and ``hit_bound_``; the other kind's
    attributes are removed, so a refit leaves none behind."""
    if bound is None:
        est.__dict__.pop("hit_bound_", None)
        est.classes_ = classes
        est.target_type_ = "binary" if len(classes) == 2 else "multiclass"
    else:
        est.__dict__.pop("classes_", None)
        est.target_type_ = "continuous"
        est.hit_bound_ = bound


# ---------------------------------------------------------------------------
# Hits and misses of a continuous target, counted over all rows
# ---------------------------------------------------------------------------


def _count_prefix(holds, n, m):
    """For ``m`` monotone predicates on positions ``0..n-1`` (true, then false),
    how many positions each holds for: a vectorised bisection."""
    lo, hi = np.zeros(m, dtype=np.int64), np.full(m, n, dtype=np.int64)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        yes = holds(np.minimum(mid, n - 1)) & (lo < hi)
        lo = np.where(yes, mid + 1, lo)
        hi = np.where(~yes & (lo < hi), mid, hi)
    return lo


def hit_counts(y, index, bound):
    """``(hits, misses)`` of each anchor row ``index`` over all other rows:
    ``|y_a - y_j| < bound`` or not, with the same floating-point test as the merge.

    ``fl(y_a - y_j)`` is monotone in ``y_j``, so the hits are a run of the
    sorted targets, found by bisection (no N x m comparisons).
    """
    ys = np.sort(y)
    v = y[index]
    below = _count_prefix(lambda p: (v - ys[p]) >= bound, ys.size, v.size)
    not_above = _count_prefix(lambda p: ~((ys[p] - v) >= bound), ys.size, v.size)
    misses = below + (ys.size - not_above)
    return ys.size - 1 - misses, misses


# ---------------------------------------------------------------------------
# ReliefF with a continuous endpoint (skrebate 0.8.4)
# ---------------------------------------------------------------------------


def continuous_relieff_sum(
    rows, y, n_neighbors, bound, anchors=None, kinds=None, agg=relieff_continuous_agg
):
    """``(sum of the anchors' terms, passes)`` of skrebate's continuous-endpoint ReliefF
    (``agg``: the per-anchor term, :func:`relieff_continuous_agg` or a variant's).

    A first pass asks for each anchor's ``FIRST_REACH * k`` nearest rows; an
    anchor among whose nearest rows fewer than ``k`` hits (or misses) turn up
    -- and the data hold more -- is scored again with twice as many, up to
    every row, taking only those anchors' rows: the result is exact, the
    same as one scan of each anchor's sorted distances.
    """
    n = rows.n_samples
    index = np.arange(n) if anchors is None else anchors.index
    n_hits, n_misses = hit_counts(y, index, bound)
    reach = min(FIRST_REACH * n_neighbors, n - 1)
    total, passes = np.zeros(rows.n_features), 0
    while True:
        share, rest = knn_target_statistic(
            rows,
            y,
            reach,
            agg,
            (n_neighbors, bound),
            (n_hits, n_misses),
            anchors=anchors,
            combine=merge.add_and_concat,
            kinds=kinds,
        )
        total += share
        passes += 1
        if rest.size == 0:
            return total, passes
        if reach >= n - 1:  # every row seen: the merge resolves every anchor
            raise RuntimeError(f"{rest.size} anchors unresolved with every row as a neighbour.")
        reach = min(2 * reach, n - 1)
        keep = np.isin(index, rest)
        index, n_hits, n_misses = index[keep], n_hits[keep], n_misses[keep]
        anchors = (
            rows_at(rows, index)
            if anchors is None
            else Anchors(anchors.X[keep], anchors.codes[keep], index)
        )


def fit_continuous_relieff(est, start):
    """``ReliefF.fit`` on a continuous target (``start.target``, from the door):
    skrebate 0.8.4's continuous endpoint.

    Sets the fitted attributes of ``est`` (``target_type_ = "continuous"``,
    ``hit_bound_``, ``discrete_features_``, no ``classes_``) and returns it.
    Discrete features (``est.discrete_threshold``) and missing values take
    skrebate's rules, as for class labels (:func:`~dmargin.engine.feature_kinds`).
    ``n_permutations=B`` gives permutation p-values from B more fits with the
    target permuted (the same anchors); STIR's p-values are for two classes
    only.

    The per-anchor term is the estimator's ``_continuous_agg``; a variant whose
    class-label term ``_agg`` is its own while ``_continuous_agg`` is ReliefF's is
    refused (``ValueError``): its scores on a continuous target would be
    ReliefF's, not the variant's.
    """
    agg = type(est)._continuous_agg
    if type(est)._agg is not relieff_agg and agg is relieff_continuous_agg:
        name = type(est).__name__
        raise ValueError(
            f"{name} scores class labels with its own per-anchor term (_agg), but has no "
            "term for a continuous target: y is continuous, and ReliefF's "
            "relieff_continuous_agg would score it, not the variant. Fit class labels, or "
            f"give {name} a _continuous_agg (the signature of relieff_continuous_agg)."
        )
    rows, y = start.rows, start.target
    # Feature kinds (a pass over the rows only for discrete_threshold > 0 or NaN)
    kinds = feature_kinds(rows, est.discrete_threshold, missing=start.data.missing).weighted(
        start.feature_weights
    )
    anchors = anchors_for(est, rows)
    bound = hit_bound(y)
    m = rows.n_samples if anchors is None else anchors.n_samples
    k = est.n_neighbors
    with fit_steps(est, "pass", 1 + est.n_permutations) as steps, timer("ReliefF (continuous)"):
        total, _ = continuous_relieff_sum(rows, y, k, bound, anchors, kinds, agg)
        steps.step()
        weights = total / m
        reached = np.zeros(weights.size)
        rng = make_rng(est.random_state).spawn(1)[0]  # not the anchors' stream
        for _ in range(est.n_permutations):
            permuted = y[rng.permutation(y.size)]
            reached += (
                continuous_relieff_sum(rows, permuted, k, bound, anchors, kinds, agg)[0] / m
                >= weights
            )
            steps.step()
    set_target(est, bound=bound)
    est.discrete_features_ = kinds.discrete
    est.feature_importances_ = weights
    est.__dict__.pop("_stir_raw", None)
    t_reason = "STIR's t-statistics are for two classes; y is a continuous target"
    if est.n_permutations:
        set_pvalues(est, (1.0 + reached) / (1.0 + est.n_permutations), t_reason=t_reason)
    else:
        set_pvalues(est, reason=not_asked(est), t_reason=t_reason)
    est.anchor_indices_ = None if anchors is None else anchors.index
    return est


# ---------------------------------------------------------------------------
# RReliefF
# ---------------------------------------------------------------------------


class RReliefF(WeightSelector):
    """RReliefF: Relief for a continuous target (Robnik-Sikonja & Kononenko 2003).

    For each anchor ``R`` and its ``n_neighbors`` nearest rows ``I_j`` (the
    range-normalised Manhattan distance of ReliefF, ties to the lower row
    index), with the rank-based influence ``d(R, I_j) = d1(j) / sum_l d1(l)``,
    ``d1(j) = exp(-(j / sigma)^2)`` (``j = 1`` for the nearest), it
    accumulates the probability that the target differs, ``N_dC += diff(y) d``,
    that feature A differs, ``N_dA[A] += diff(A) d``, and both,
    ``N_dC&dA[A] += diff(y) diff(A) d``, with ``diff(y) = |y_R - y_j| / (max y -
    min y)`` and ``diff(A)`` ReliefF's range-normalised difference; then

    ``W[A] = N_dC&dA[A] / N_dC - (N_dA[A] - N_dC&dA[A]) / (m - N_dC)``

    over the ``m`` anchors (the paper's Fig. 3).  One pass of the pairwise
    engine: exact, or with a sample of anchors, in-process or on dask.

    Parameters
    ----------
    n_neighbors : int, default=70
        ``k``, the nearest rows of each anchor.
    sigma : float or None, default=20.0
        Width of the rank influence.  ``None`` gives every neighbour the same
        influence ``1 / k`` (the paper's other choice).  The defaults ``k = 70``
        and ``sigma = 20`` are CORElearn's documented ``kNearestExpRank`` and
        ``quotientExpRank`` defaults as we read them: the 70th neighbour then
        counts ``exp(-(70/20)^2) ~ 5e-6`` of the nearest.
    scale : {"minmax"} or None, default="minmax"
        ``"minmax"``: features scaled to [0, 1] (``diff = |v1 - v2| / (max -
        min)``); ``None`` uses raw differences.
    n_anchors : int, float or None, default=None
        ``None``: every row is an anchor (``m = N``, O(N^2 A)); an int ``m`` (or
        a fraction of N): a uniform sample of ``m`` anchors against all rows,
        O(m N A) -- the paper's ``m``.
    n_features_to_select : int, float or None, default=None
        For ``transform``: ``None`` keeps features with positive weight, an
        int the top ones, a float that fraction.
    random_state : int, Generator or None, default=None
        Seeds the sample of anchors.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        The weights ``W``.
    n_dc_ : float
        ``N_dC``.
    anchor_indices_ : ndarray of shape (m,) or None
        The rows used as anchors (sorted), ``None`` when every row was one.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    See Also
    --------
    ReliefF : with a continuous target, skrebate's hit/miss semantics.

    Notes
    -----
    Choices the paper leaves open: ties in distance rank by row index; an
    anchor with fewer than ``k`` other rows normalises ``d`` over those it
    has; the target's range is over all rows.  The target travels to the
    driver and into each graph once (8 bytes a row).

    References
    ----------
    M. Robnik-Sikonja, I. Kononenko, "Theoretical and empirical analysis of
    ReliefF and RReliefF", Machine Learning 53, 23-69, 2003.

    Examples
    --------
    >>> import numpy as np
    >>> from dmargin import RReliefF
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((300, 6))
    >>> y = np.sin(4 * X[:, 0]) + X[:, 1]
    >>> est = RReliefF(n_features_to_select=2).fit(X, y)
    >>> sorted(est.get_support(indices=True).tolist())
    [0, 1]
    """

    #: Any numeric ``y`` is a target; with a sample of anchors the rows are read once.
    _capabilities = Capabilities(targets=("continuous",), one_pass=True)

    _parameter_constraints = {
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither"), NONE],
        "scale": [Options(("minmax",)), NONE],
        "n_anchors": N_ANCHORS,
        "n_features_to_select": N_FEATURES_TO_SELECT,
        "random_state": [RANDOM_STATE],
    }

    def __init__(
        self,
        *,
        n_neighbors=70,
        sigma=20.0,
        scale="minmax",
        n_anchors=None,
        n_features_to_select=None,
        random_state=None,
    ):
        self.n_neighbors = n_neighbors
        self.sigma = sigma
        self.scale = scale
        self.n_anchors = n_anchors
        self.n_features_to_select = n_features_to_select
        self.random_state = random_state

    def fit(self, X, y):
        """Compute the RReliefF weights.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            The numeric target (a dask array or Series is computed: N floats).

        Returns
        -------
        self : RReliefF
        """
        start = start_fit(self, X, y)
        rows, y = start.rows, start.target
        anchors = anchors_for(self, rows)
        k = min(self.n_neighbors, rows.n_samples - 1)
        rank = np.arange(1, k + 1, dtype=np.float64)
        influence = np.ones(k) if self.sigma is None else np.exp(-((rank / self.sigma) ** 2))
        span = float(y.max() - y.min())
        with fit_steps(self, "pass", 1) as steps, timer("RReliefF"):
            sums = rrelieff_sums(
                knn_target_statistic(rows, y, k, rrelieff_agg, (span, influence), anchors=anchors)
            )
            steps.step()
        m = rows.n_samples if anchors is None else anchors.n_samples
        n_dc, n_da, n_dcda = sums
        with np.errstate(invalid="ignore", divide="ignore"):
            hit = np.where(n_dc > 0, n_dcda / n_dc, 0.0)
            miss = np.where(m - n_dc > 0, (n_da - n_dcda) / (m - n_dc), 0.0)
        self.n_dc_ = float(n_dc)
        self.feature_importances_ = hit - miss
        self.anchor_indices_ = None if anchors is None else anchors.index
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: ReliefF's, one pass over the pairs of rows."""
        return relief_cost(self, n_samples, n_features)
