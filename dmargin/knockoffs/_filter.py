"""The model-X knockoff filter around any dmargin estimator.

Candès, Fan, Janson & Lv, "Panning for gold: model-X knockoffs for high
dimensional controlled variable selection", JRSS-B 2018; the knockoff+
threshold of Barber & Candès, "Controlling the false discovery rate via
knockoffs", Annals of Statistics 2015; derandomised knockoffs by e-values of
Ren & Barber, "Derandomised knockoffs: leveraging e-values for false discovery
rate control", JRSS-B 2024.

The estimator is fitted once on ``[F, F~]``: the features (in the space the
knockoffs are built in) and their knockoffs (:class:`~dmargin.KnockoffSampler`),
so a Relief score's bias from its neighbours -- which inflates a noise feature
when other features separate the classes -- inflates the knockoff alike and
cancels in ``W_j = imp_j - imp_{A+j}``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from .._base import WeightSelector
from .._capabilities import Capabilities
from .._cost import FitCost, repeated_cost
from .._start import start_fit
from .._utils import make_rng
from .._validation import ARRAY, NONE, RANDOM_STATE, Interval, Options
from ..progress import fit_steps
from ..wrappers._turf import ESTIMATOR
from ._groups import GROUP_THRESHOLD, group_sums
from ._sampler import KnockoffSampler

#: Parameters of the wrapped estimator that give each feature its own value: the
#: knockoff statistic needs a feature and its knockoff treated alike.
PER_FEATURE = ("init", "categorical_features")

#: Seconds knockpy's ``mvr`` S solve takes at A features, ~c A^3 (2 s at A = 500,
#: 15 s at A = 1,000 on the project's 2-core machine); ``equicorrelated`` is closed form.
MVR_SECONDS_PER_A3 = 1.5e-8
#: Row-features a second of the knockoffs' own passes (the marginals and correlation, then
#: the draw): 1e6 x 20 in 6.7 s, 2e5 x 100 and 2e4 x 400 at 5e-7 s each on that machine
#: under load (the cost of the ECDF and of ``Phi`` per value outweighs the ``A^2`` product
#: up to a few hundred features).
KNOCKOFF_ROW_RATE = 2.5e6


def knockoff_statistic(importances, n_features):
    """The knockoff statistic ``W_j = imp_j - imp_{A+j}`` of a fit on ``[F, F~]``.

    Parameters
    ----------
    importances : array-like of shape (2 * n_features,)
        The importances of a fit on the features followed by their knockoffs.
    n_features : int
        ``A``, the number of original features.

    Returns
    -------
    W : ndarray of shape (n_features,)
        Antisymmetric: swapping feature ``j`` with its knockoff flips ``W_j``'s
        sign and leaves the others unchanged.
    """
    imp = np.asarray(importances, dtype=np.float64).ravel()
    if imp.size != 2 * n_features:
        raise ValueError(
            f"the fit on the features and their knockoffs gave {imp.size} "
            f"importances; {2 * n_features} expected (2 x {n_features} features)."
        )
    return imp[:n_features] - imp[n_features:]


def knockoff_threshold(W, q, offset=1):
    """The knockoff+ threshold (Barber & Candès, 2015) at level ``q``.

    ``T = min {t in {|W_j| : W_j != 0} : (offset + #{W_j <= -t}) / max(1, #{W_j >= t}) <= q}``,
    ``+inf`` when no ``t`` qualifies (nothing is selected).  The selection is
    ``{j : W_j >= T}``; with ``offset=1`` its false discovery rate is at most
    ``q`` (``offset=0``, the plain knockoff filter, controls a modified rate only).
    The smallest nonempty selection has ``ceil(offset / q)`` features.

    Parameters
    ----------
    W : array-like of shape (n_features,)
    q : float in (0, 1)
    offset : {0, 1}, default=1

    Returns
    -------
    T : float
    """
    W = np.asarray(W, dtype=np.float64).ravel()
    candidates = np.unique(np.abs(W[W != 0]))  # ascending
    if candidates.size == 0:
        return math.inf
    ordered = np.sort(W)
    below = np.searchsorted(ordered, -candidates, side="right")  # #{W <= -t}
    above = W.size - np.searchsorted(ordered, candidates, side="left")  # #{W >= t}
    ok = (offset + below) / np.maximum(1, above) <= q
    return float(candidates[np.argmax(ok)]) if ok.any() else math.inf


def ebh(evalues, q):
    """The e-BH procedure (Wang & Ramdas, 2022) at level ``q``: selected indices.

    With ``A`` e-values sorted decreasingly, ``k = max {k : e_(k) >= A / (q k)}``
    and the ``k`` largest are selected (none when no ``k`` qualifies).

    Parameters
    ----------
    evalues : array-like of shape (n_features,)
    q : float in (0, 1)

    Returns
    -------
    selected : ndarray of int
        Sorted indices.
    """
    e = np.asarray(evalues, dtype=np.float64).ravel()
    a = e.size
    ranked = -np.sort(-e)
    k = np.arange(1, a + 1)
    ok = ranked >= a / (q * k)
    if not ok.any():
        return np.zeros(0, dtype=np.int64)
    last = int(np.flatnonzero(ok)[-1]) + 1
    return np.flatnonzero(e >= a / (q * last)).astype(np.int64)


def knockoff_evalues(W, q, offset=1):
    """Ren & Barber's e-values of one draw: ``A 1{W_j >= T} / (1 + #{W_k <= -T})`` with
    ``T`` the knockoff+ threshold at level ``q`` (zero everywhere when ``T`` is
    infinite)."""
    W = np.asarray(W, dtype=np.float64).ravel()
    t = knockoff_threshold(W, q, offset)
    if not math.isfinite(t):
        return np.zeros(W.size)
    return W.size * (W >= t) / (1.0 + np.count_nonzero(W <= -t))


def _check_symmetric(estimator):
    """Refuse a wrapped estimator whose settings treat features differently."""
    params = estimator.get_params(deep=True)
    for key, value in params.items():
        name, key = key.rsplit("__", 1)[-1], f"estimator__{key}"
        if name in PER_FEATURE and value is not None and not isinstance(value, str):
            raise ValueError(
                f"KnockoffSelector: the wrapped estimator's {key}={value!r} gives each "
                "feature its own value, but the knockoff statistic needs every feature and "
                f"its knockoff treated alike; leave {key} at its default."
            )


class KnockoffSelector(WeightSelector):
    """The model-X knockoff filter around any dmargin estimator: features selected at a
    target false discovery rate, for the null "independent of y given the other features".

    A label permutation (``n_permutations``) or STIR tests the global null:
    no feature is related to the labels.  Neither says whether one feature
    adds anything once the others are known; when other features carry the
    signal, a Relief score inflates pure-noise features and those pass.  The
    knockoff filter builds, for each feature, a knockoff with the same
    marginal and correlations but no tie to ``y``
    (:class:`~dmargin.KnockoffSampler`), fits the estimator once on the
    ``2 A`` columns ``[F, F~]`` and compares each feature with its knockoff:
    ``W_j = imp_j - imp_{A+j}``.  The knockoff+ threshold then selects
    ``{j : W_j >= T}`` with a false discovery rate of at most ``q`` for the
    conditional null, as long as the knockoffs are valid for the data (see
    ``knockoffs``).

    Parameters
    ----------
    estimator : estimator
        Sets ``feature_importances_`` (ReliefF, MultiSURF, the SURF and SWRF
        families, IRelief, ...); cloned and fitted on the ``2 A`` columns.
        It must treat columns alike: settings that give each feature its own
        value (an ``init`` array, skrebate's ``categorical_features``) are
        refused.
    q : float in (0, 1), default=0.1
        The target false discovery rate.  Knockoff+ selects nothing unless it
        can select at least ``ceil(offset / q)`` features (10 at ``q = 0.1``),
        so with few informative features use a larger ``q``.
    knockoffs : {"auto", "copula", "gaussian", "independent"}, default="auto"
        The construction (:class:`~dmargin.KnockoffSampler`): ``"auto"`` is the
        Gaussian copula for continuous features and refuses discrete ones;
        ``"independent"`` draws each knockoff from its feature's marginal,
        valid only for mutually independent features (checked).
    smatrix : str, default="mvr"
        knockpy's method for the S matrix (``"mvr"``, ``"maxent"``, ``"sdp"``,
        ``"equicorrelated"``).
    n_draws : int, default=1
        Independent knockoff draws.  More than one: derandomised knockoffs
        (Ren & Barber, 2024): each draw's e-values at level ``q / 2``,
        averaged, selected by e-BH at level ``q``; two runs then rarely differ.
        A draw at ``q / 2`` selects nothing below ``ceil(2 offset / q)``
        features (20 at ``q = 0.1``): with fewer informative features the
        derandomised filter selects none.
    offset : {0, 1}, default=1
        1 is knockoff+ (the guarantee above); 0 the plain knockoff filter,
        which has no false discovery rate guarantee.
    sample_rows : int, default=10000
        Rows the marginals are learned from (evenly spaced; every row when
        there are fewer).
    random_state : int, Generator, RandomState or None, default=None
        Seeds the knockoffs; draw ``m`` uses the ``m``-th spawned seed.
    groups : None, "auto" or array-like of shape (n_features,), default=None
        Group knockoffs (Dai & Barber, 2016): a group of correlated features
        swaps with its knockoff group as a whole (S block-diagonal by group),
        its statistic is ``W_g = sum_{j in g} W_j``, the threshold runs over
        the groups, and the selected features are the members of the selected
        groups.  The null becomes "the group is independent of y given the
        other groups", and the false discovery rate is that of groups: a
        noise feature correlated with an informative one shares its group and
        is selected with it.  ``"auto"`` clusters the features' correlation
        (average linkage on ``1 - |r|``, cut at ``group_threshold``); an array
        gives one label per feature.  ``None`` (every feature its own
        group) is the default because it keeps the per-feature null, which is
        what "this feature matters" means; use groups where features nearly
        copy each other (wdbc's radius, perimeter and area), where per-feature
        knockoffs are nearly the features themselves and select nothing.
    group_threshold : float in [0, 1], default=0.7
        With ``groups="auto"``: groups merge while their average absolute
        correlation (of the normal scores, for the copula) is at least this.

    Attributes
    ----------
    statistics_ : ndarray of shape (n_features,) or (n_draws, n_features)
        ``W``, one row per draw when ``n_draws > 1``.
    group_statistics_ : ndarray of shape (n_groups,) or (n_draws, n_groups)
        ``W_g``, the sum of ``W`` over each group (``statistics_`` without
        groups).
    threshold_ : float or ndarray of shape (n_draws,)
        The knockoff+ threshold on ``group_statistics_`` (``inf`` when nothing
        is selected); per draw, at level ``q / 2``, when ``n_draws > 1``.
    evalues_ : ndarray of shape (n_groups,)
        With ``n_draws > 1`` only: the averaged e-values of the groups.
    groups_ : ndarray of int, shape (n_features,)
        Each feature's group, 0..G-1 numbered by the group's first feature
        (``arange(n_features)`` without groups).
    selected_groups_ : ndarray of int
        The selected groups, sorted.
    selected_ : ndarray of int
        The selected features' indices (the members of the selected groups),
        sorted (possibly empty).
    feature_importances_ : ndarray of shape (n_features,)
        ``W`` (its mean over the draws when ``n_draws > 1``), for rankings.
    estimator_ : estimator
        The last draw's fit on ``[F, F~]``.
    knockoffs_ : str
        The construction used.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When ``X`` has column names.

    See Also
    --------
    KnockoffSampler : The knockoffs.

    Notes
    -----
    Cost: the marginals from a sample of rows, one pass for the correlation,
    the S matrix on the driver (knockpy's ``mvr`` grows as ``A^3``), then one
    fit of the estimator on ``2 A`` features per draw.  Dask input stays lazy:
    the knockoffs are sampled block by block where the rows are, and the same
    rows give the same knockoffs under any chunking.  knockpy is optional:
    ``pip install "dmargin[knockoffs]"``.

    The null is conditional: a feature nearly copied by others (radius,
    perimeter and area in wdbc) adds almost nothing given them, its knockoff
    is nearly the feature itself, and ``W`` carries little signal; on such
    data the filter selects few features or none, where a marginal ranking
    would list them all.  Group knockoffs (``groups``) ask the question a
    group at a time and can answer it there; knockoff+ still selects nothing
    below ``ceil(offset / q)`` groups.

    References
    ----------
    Barber & Candès (2015); Candès, Fan, Janson & Lv (2018); Ren & Barber (2024).

    Examples
    --------
    >>> import numpy as np
    >>> from dmargin import KnockoffSelector, ReliefF
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(300, 30))           # features 0 to 4 decide the class
    >>> y = (X[:, :5].sum(axis=1) > 2.5).astype(int)
    >>> sel = KnockoffSelector(ReliefF(), q=0.2, random_state=0).fit(X, y)
    >>> sel.selected_, sel.knockoffs_
    (array([0, 1, 2, 3, 4]), 'copula')
    >>> sel.statistics_.shape, int(sel.get_support().sum())
    ((30,), 5)

    Each informative feature with a near-copy beside it (correlation 0.95):
    per-feature knockoffs of such pairs are nearly the features, group
    knockoffs swap each pair at once.

    >>> copies = X[:, :5] + 0.05 * rng.standard_normal((300, 5))
    >>> Xc = np.hstack([X, copies])
    >>> grouped = KnockoffSelector(ReliefF(), q=0.2, random_state=0,
    ...                            groups="auto").fit(Xc, y)
    >>> grouped.groups_[[0, 30]], grouped.n_features_in_, grouped.group_statistics_.shape
    (array([0, 0]), 35, (30,))
    >>> grouped.selected_groups_, grouped.selected_
    (array([0, 1, 2, 3, 4]), array([ 0,  1,  2,  3,  4, 30, 31, 32, 33, 34]))
    >>> KnockoffSelector(ReliefF(), q=0.2, random_state=0).fit(Xc, y).selected_
    array([], dtype=int64)
    """

    #: It checks the data; the wrapped estimator fits [F, F~].
    _capabilities = Capabilities(engine_rows=False)
    _parameter_constraints = {
        "estimator": [ESTIMATOR],
        "q": [Interval(numbers.Real, 0, 1, closed="neither")],
        "knockoffs": [Options(("auto", "copula", "gaussian", "independent"))],
        "smatrix": [Options(("mvr", "maxent", "sdp", "equicorrelated"))],
        "n_draws": [Interval(numbers.Integral, 1, None)],
        "offset": [Interval(numbers.Integral, 0, 1)],
        "sample_rows": [Interval(numbers.Integral, 2, None)],
        "random_state": [RANDOM_STATE],
        "groups": [NONE, Options(("auto",)), ARRAY],
        "group_threshold": [Interval(numbers.Real, 0, 1, closed="both")],
    }

    def __init__(
        self,
        estimator,
        *,
        q=0.1,
        knockoffs="auto",
        smatrix="mvr",
        n_draws=1,
        offset=1,
        sample_rows=10_000,
        random_state=None,
        groups=None,
        group_threshold=GROUP_THRESHOLD,
    ):
        self.estimator = estimator
        self.q = q
        self.knockoffs = knockoffs
        self.smatrix = smatrix
        self.n_draws = n_draws
        self.offset = offset
        self.sample_rows = sample_rows
        self.random_state = random_state
        self.groups = groups
        self.group_threshold = group_threshold

    def _seeds(self):
        """One integer seed per draw, spawned from ``random_state``."""
        entropy = int(make_rng(self.random_state).integers(2**63))
        return [
            int(s.generate_state(1, np.uint64)[0])
            for s in np.random.SeedSequence(entropy).spawn(self.n_draws)
        ]

    def _statistics(self, augmented, y):
        """``(W, fit)``: the wrapped estimator fitted on ``augmented`` (``[F, F~]``, ``2 A``
        columns) and its knockoff statistic -- the one path every fit takes."""
        fit = clone(self.estimator).fit(augmented, y)
        n = augmented.shape[1] // 2
        return knockoff_statistic(fit.feature_importances_, n), fit

    def fit(self, X, y):
        """Draw knockoffs, fit the estimator on ``[F, F~]``, threshold ``W``.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : KnockoffSelector
        """
        start_fit(self, X, y)
        _check_symmetric(self.estimator)
        q, offset, draws = float(self.q), int(self.offset), int(self.n_draws)
        statistics = []
        with fit_steps(self, "step", 1 + draws) as steps:  # the sampler, then each draw
            sampler = KnockoffSampler(
                knockoffs=self.knockoffs,
                smatrix=self.smatrix,
                sample_rows=self.sample_rows,
                groups=self.groups,
                group_threshold=self.group_threshold,
            ).fit(X)
            steps.step()
            for seed in self._seeds():
                W, fit = self._statistics(sampler.augment(X, seed), y)
                statistics.append(W)
                steps.step()
        self.estimator_ = fit
        self.knockoffs_ = sampler.knockoffs_
        self.groups_, n_groups = sampler.groups_, sampler.n_groups_
        # A group's statistic sums its features': antisymmetric under a swap of the
        # whole group with its knockoff group (W itself without groups).
        if draws == 1:
            W = statistics[0]
            self.statistics_ = W
            self.group_statistics_ = Wg = group_sums(W, self.groups_, n_groups)
            self.threshold_ = knockoff_threshold(Wg, q, offset)
            self.selected_groups_ = np.flatnonzero(Wg >= self.threshold_).astype(np.int64)
            self.feature_importances_ = W.copy()
        else:
            W = np.vstack(statistics)
            self.statistics_ = W
            self.group_statistics_ = Wg = group_sums(W, self.groups_, n_groups)
            self.threshold_ = np.array([knockoff_threshold(w, q / 2, offset) for w in Wg])
            self.evalues_ = np.mean([knockoff_evalues(w, q / 2, offset) for w in Wg], axis=0)
            self.selected_groups_ = ebh(self.evalues_, q)
            self.feature_importances_ = W.mean(axis=0)
        self.selected_ = np.flatnonzero(np.isin(self.groups_, self.selected_groups_))
        self.selected_ = self.selected_.astype(np.int64)
        return self

    def _get_support_mask(self):
        check_is_fitted(self, "selected_")
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.selected_] = True
        return mask

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: one fit of the wrapped estimator on ``2 A`` features
        per draw, and the S matrix on the driver; ``None`` when the estimator states
        no cost."""
        draws = int(self.n_draws)
        inner = repeated_cost(
            self.estimator,
            n_samples,
            [2 * n_features] * draws,
            f"{draws} fit{'s' if draws > 1 else ''} on 2 x {n_features} "
            "features (the features and their knockoffs)",
        )
        if inner is None:
            return None
        if self.smatrix == "equicorrelated":
            solve, what = 0.0, "the S matrix in closed form"
        else:
            solve = MVR_SECONDS_PER_A3 * float(n_features) ** 3
            what = f"the S matrix ({self.smatrix}, A^3) on the driver"
        rows = draws * float(n_samples) * n_features
        return FitCost(
            inner.operations + rows,
            inner.seconds + solve + rows / KNOCKOFF_ROW_RATE,
            f"{inner.formula}; {what}; the knockoffs' passes (N A per draw)",
        )
