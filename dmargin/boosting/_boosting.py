"""AdaBoost with decision stumps, the margin fraction, SBS-MF and its baselines.

Alshawabkeh, Aslam, Dy & Kaeli, "Feature weighting and selection using
hypothesis margin of boosting", ICDM 2012.
The boosting loop runs on the driver (:mod:`dmargin.boosting._stumps`); the best
stump of a round comes from weighted class histograms of binned features, a
reduction over row blocks (:class:`dmargin.engine.WeightedHistograms`).
Features are binned once per fit, so the backward selections (SBS-MF,
AdaBoost-CR) retrain on column subsets of the same bin codes.  Binary
problems only: the paper's margins, contribution ratios and margin
fractions are defined for ``y`` in {-1, +1}.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._base import N_FEATURES_TO_SELECT, DaskSelectorMixin, WeightSelector
from .._capabilities import Capabilities, sklearn_tags
from .._dask import is_dask_collection
from .._elimination import N_FEATURES_TO_KEEP, STEP, eliminate, n_to_select
from .._predict import check_new_rows, predict_blocks
from .._start import start_fit
from .._utils import logger, make_rng, timer, warn
from .._validation import NONE, RANDOM_STATE, Interval, Options
from ..engine import WeightedHistograms, bin_rows, counts
from ._stumps import boost, information_gain, initial_class_weight

#: Why the estimators here refuse other than two classes (the fit's error says it).
_BINARY = (
    "the margins, contribution ratios and margin fractions of the SBS-MF paper are "
    "defined for two classes"
)
#: Stumps compare values, never distances: any finite values, unscaled, two classes.
_STUMPS = Capabilities(binary=_BINARY, distances=False, engine_rows=False)


def _prepare(est, X, y):
    data = start_fit(est, X, y).data
    rng = make_rng(est.random_state)
    with timer("binning"):
        binned = bin_rows(data.X, data.codes, est.max_bins, rng)
    C = counts(binned)
    g = C[:, :, 1] - C[:, :, 0]
    left = np.cumsum(g, axis=1)
    return data, binned, (left, left[:, -1]), initial_class_weight(est.class_weight, data.counts)


_BOOST_CONSTRAINTS = {
    "n_estimators": [Interval(numbers.Integral, 1, None)],
    "max_bins": [Interval(numbers.Integral, 2, 65536)],
    "class_weight": [Options(("balanced",)), NONE],
    "random_state": [RANDOM_STATE],
}


# ---------------------------------------------------------------------------
# AdaBoost with stumps
# ---------------------------------------------------------------------------


class AdaBoostStumps(ClassifierMixin, WeightSelector):
    """Discrete AdaBoost with decision stumps, with its margin decomposition.

    Round ``t`` picks the stump ``h_t(x) = s sign(x_f - theta)`` (``-s`` at
    ``x_f == theta``) with the largest weighted edge ``gamma_t = sum_i D_t(i)
    y_i h_t(x_i)``, weighs it by ``alpha_t = 0.5 ln((1 + gamma_t) / (1 -
    gamma_t))`` and reweights ``D_{t+1} ~ D_t exp(-alpha_t y h_t(x))``
    (equation 2 of Alshawabkeh et al. 2012).  The stump search is a
    reduction of weighted class histograms over row blocks: exact for
    features with at most ``max_bins`` distinct values (thresholds at the
    midpoints), quantile-binned beyond, as scikit-learn's
    ``HistGradientBoostingClassifier`` bins.  It runs in-process for numpy
    input and on the row blocks for dask input or under a
    ``distributed.Client``; the rounds run on the driver.

    Parameters
    ----------
    n_estimators : int, default=100
        Boosting rounds ``T`` (fewer when no stump has a positive edge, or a
        stump classifies the weighted data perfectly).
    max_bins : int, default=256
        Bins per feature; features with more distinct values are binned at
        quantiles of (a subsample of at most 200,000 of) the rows.
    class_weight : {"balanced"} or None, default=None
        ``None`` starts from ``D_1 = 1/N``; ``"balanced"`` gives each class
        half of the initial weight (the paper's adjustment for class skew).
    n_features_to_select : int, float or None, default=None
        For ``transform``, by ``feature_importances_``: ``None`` keeps the
        features with a positive margin fraction.
    random_state : int, Generator or None, default=None
        Picks the subsample that places quantile bin edges (only used when a
        feature has more than ``max_bins`` values and there are more than
        200,000 rows).

    Attributes
    ----------
    stump_features_, stump_thresholds_, stump_polarities_ : ndarray of shape (n_stumps,)
        Stump ``t`` votes ``stump_polarities_[t]`` (+1 for ``classes_[1]``)
        when ``x[stump_features_[t]] > stump_thresholds_[t]``, the opposite
        otherwise.
    estimator_weights_ : ndarray of shape (n_stumps,)
        ``alpha_t`` (positive: the polarity is chosen so that the edge is).
    estimator_edges_ : ndarray of shape (n_stumps,)
        Weighted edges ``gamma_t``; the weighted error is ``(1 - gamma_t) / 2``.
    contribution_ratios_ : ndarray of shape (n_features,)
        ``Gamma_f`` (eq. 7), the contribution ratio of AdaBoost-CR.
    margin_fractions_ : ndarray of shape (n_features,)
        ``MF_f`` (eq. 10); sums to 1 when any stump was chosen.
    feature_importances_ : ndarray of shape (n_features,)
        The margin fractions.
    n_estimators_ : int
        Stumps kept.
    classes_, n_features_in_, feature_names_in_

    See Also
    --------
    SBSMF : backward selection by margin fraction.

    Notes
    -----
    A constant feature has no split and is never chosen (``MF = 0``).  A
    feature with few distinct values (duplicated rows included) has only
    the thresholds between them.  If no stump has a positive edge, there are
    no stumps, ``decision_function`` is 0 and a warning is raised.

    References
    ----------
    M. Alshawabkeh, J. A. Aslam, J. G. Dy, D. Kaeli, "Feature weighting and
    selection using hypothesis margin of boosting", ICDM 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from dmargin.boosting._boosting import AdaBoostStumps
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 50)
    >>> X = rng.normal(size=(100, 4)); X[:, 2] += 2 * y
    >>> est = AdaBoostStumps(n_estimators=20).fit(X, y)
    >>> int(np.argmax(est.margin_fractions_))
    2
    """

    # Stumps compare values, never distances: any finite values, unscaled, two classes.
    _capabilities = _STUMPS
    _parameter_constraints = {**_BOOST_CONSTRAINTS, "n_features_to_select": N_FEATURES_TO_SELECT}

    def __init__(
        self,
        n_estimators=100,
        *,
        max_bins=256,
        class_weight=None,
        n_features_to_select=None,
        random_state=None,
    ):
        self.n_estimators = n_estimators
        self.max_bins = max_bins
        self.class_weight = class_weight
        self.n_features_to_select = n_features_to_select
        self.random_state = random_state

    def fit(self, X, y):
        """Boost stumps on ``X, y`` (two classes).

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : AdaBoostStumps
        """
        data, binned, count_cum, class_weight = _prepare(self, X, y)
        a = binned.n_features
        stumps = boost(binned, np.arange(a), self.n_estimators, class_weight, count_cum)
        if stumps.alpha.size == 0:
            warn(
                "No stump has a positive weighted edge (constant features or "
                "inseparable labels); the committee is empty.",
                RuntimeWarning,
            )
        self._stumps = stumps
        self.classes_ = data.classes
        self.stump_features_ = stumps.feature
        self.stump_thresholds_ = stumps.threshold
        self.stump_polarities_ = stumps.polarity
        self.estimator_weights_ = stumps.alpha
        self.estimator_edges_ = stumps.edge
        self.n_estimators_ = int(stumps.alpha.size)
        self.contribution_ratios_ = stumps.contribution_ratios(a)
        self.margin_fractions_ = stumps.margin_fractions(a)
        self.feature_importances_ = self.margin_fractions_.copy()
        return self

    def _check_X(self, X):
        return check_new_rows(self, X, fitted="estimator_weights_")

    def _on_blocks(self, fn, X, *args, **kwargs):
        """``fn(block[, y_block], stumps, *args)`` over the row blocks of ``X`` (and ``y``)."""
        check_is_fitted(self, "estimator_weights_")  # before the committee is read
        return predict_blocks(
            self, fn, X, self._stumps, *args, fitted="estimator_weights_", **kwargs
        )

    def decision_function(self, X):
        """``F(x) = sum_t alpha_t h_t(x)``; positive votes for ``classes_[1]``.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        F : ndarray or dask array of shape (n_samples,)
            Lazy (a dask array over X's row blocks) for dask input.
        """
        if is_dask_collection(X):
            return self._on_blocks(_decision_block, X)
        X = self._check_X(X)
        return self._stumps.decision(X)

    def predict(self, X):
        """Class labels: ``classes_[1]`` where ``F(x) > 0``.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray or dask array of shape (n_samples,)
            Lazy (a dask array over X's row blocks) for dask input.
        """
        if is_dask_collection(X):
            return self._on_blocks(_predict_block, X, self.classes_, dtype=self.classes_.dtype)
        F = self.decision_function(X)
        return self.classes_[(F > 0).astype(int)]

    def margins(self, X, y):
        """Normalised margins ``rho(x) = y F(x) / sum_t |alpha_t|`` in [-1, 1] (equation 3).

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)
        y : array-like, dask array or dask Series of shape (n_samples,)
            Labels among ``classes_``.

        Returns
        -------
        rho : ndarray of shape (n_samples,)
            For dask input computed block by block on the workers; only the
            margins come back.
        """
        if is_dask_collection(X) or is_dask_collection(y):
            check_is_fitted(self, "estimator_weights_")
            total = float(np.abs(self.estimator_weights_).sum())
            return self._on_blocks(
                _margin_block, X, self.classes_, total, y=y, gather_as="the boosting margins"
            )
        F = self.decision_function(X)
        y = np.asarray(y)
        _check_labels(y, self.classes_)
        sign = np.where(y == self.classes_[1], 1.0, -1.0)
        total = np.abs(self.estimator_weights_).sum()
        return sign * F / total if total > 0 else np.zeros_like(F)

    def feature_margins(self, X, y):
        """Conditional margins ``rho_f(x)`` (equation 6), 0 for unused features.

        Theorem 3.1: ``feature_margins(X, y) @ contribution_ratios_ == margins(X, y)``.

        Parameters
        ----------
        X : array-like, dask array or dask DataFrame of shape (n_samples, n_features)
        y : array-like, dask array or dask Series of shape (n_samples,)

        Returns
        -------
        rho_f : ndarray or dask array of shape (n_samples, n_features)
            Lazy (a dask array over X's row blocks) for dask input: it is as
            large as X.
        """
        if is_dask_collection(X) or is_dask_collection(y):
            check_is_fitted(self, "estimator_weights_")
            return self._on_blocks(
                _feature_margin_block,
                X,
                self.classes_,
                self.n_features_in_,
                y=y,
                n_cols=self.n_features_in_,
            )
        X = self._check_X(X)
        y = np.asarray(y)
        _check_labels(y, self.classes_)
        sign = np.where(y == self.classes_[1], 1.0, -1.0)
        return sign[:, None] * self._stumps.feature_votes(X, self.n_features_in_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        return sklearn_tags(self, tags)  # after ClassifierMixin's: two classes only

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: ``n_estimators`` rounds of passes over the rows."""
        from ._cost import boosting_cost

        return boosting_cost(self, n_samples, n_features, eliminates=False)


def _check_labels(y, classes):
    if not np.isin(y, classes).all():
        raise ValueError(
            f"y has labels outside classes_ {list(classes)}; the margins are "
            "defined for the two classes the committee was fitted on."
        )


def _sign(y, classes):
    _check_labels(y, classes)
    return np.where(y == classes[1], 1.0, -1.0)


# Tasks on one row block of new rows (the lazy predictions and margins).


def _decision_block(X, stumps):
    return stumps.decision(X)


def _predict_block(X, stumps, classes):
    return classes[(stumps.decision(X) > 0).astype(int)]


def _margin_block(X, y, stumps, classes, total):
    F = stumps.decision(X)
    return _sign(np.asarray(y), classes) * F / total if total > 0 else np.zeros_like(F)


def _feature_margin_block(X, y, stumps, classes, n_features):
    return _sign(np.asarray(y), classes)[:, None] * stumps.feature_votes(X, n_features)


# ---------------------------------------------------------------------------
# Sequential backward selection: SBS-MF and AdaBoost-CR
# ---------------------------------------------------------------------------


class _RankingSelector(DaskSelectorMixin, BaseEstimator):
    _capabilities = _STUMPS

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        return self.support_

    def __sklearn_tags__(self):
        return sklearn_tags(self, super().__sklearn_tags__())


class _BackwardSelector(_RankingSelector):
    """Algorithm 1 of the SBS-MF paper with a pluggable criterion."""

    _criterion = "margin_fractions"

    _parameter_constraints = {
        **_BOOST_CONSTRAINTS,
        "n_features_to_select": N_FEATURES_TO_KEEP,
        "step": [*STEP, Options(("halving",))],
    }

    def __init__(
        self,
        n_features_to_select=1,
        *,
        step=1,
        n_estimators=100,
        max_bins=256,
        class_weight=None,
        random_state=None,
    ):
        self.n_features_to_select = n_features_to_select
        self.step = step
        self.n_estimators = n_estimators
        self.max_bins = max_bins
        self.class_weight = class_weight
        self.random_state = random_state

    def fit(self, X, y):
        """Rank the features by backward elimination.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two classes.

        Returns
        -------
        self
        """
        # Initialization: bin once, the rounds reuse the codes of any subset
        data, binned, count_cum, class_weight = _prepare(self, X, y)
        a = binned.n_features
        last = []  # the latest committee boosted

        def criterion(features):
            """Algorithm 1, steps 2-3: AdaBoost on the survivors, their criterion."""
            # The histograms of a feature do not depend on which others are searched, so
            # the previous committee's stumps before the first on a removed feature are
            # this round's first stumps: boosting resumes there (all of them: the
            # committee stands, no pass over the rows).
            kept = np.isin(last[0].feature, features) if last else np.zeros(0, dtype=bool)
            t = int(np.argmin(kept)) if not kept.all() else kept.size
            if last and t == kept.size:
                stumps = last[0]
                logger.debug(
                    "%s: the removed features had no stump; the committee of "
                    "the previous round stands",
                    type(self).__name__,
                )
            else:
                if t:
                    logger.debug(
                        "%s: the previous committee resumes after %d stumps", type(self).__name__, t
                    )
                stumps = boost(
                    binned,
                    features,
                    self.n_estimators,
                    class_weight,
                    count_cum,
                    resume=(last[0], t) if t else None,
                )
                last[:] = [stumps]
            return getattr(stumps, self._criterion)(a)[features]

        # Elimination: the smallest criterion goes, ties to the lower index
        result = eliminate(
            self,
            criterion,
            a,
            n_features_to_select=self.n_features_to_select,
            step=self.step,
            ties="lower_index",
        )

        # Set final attributes
        self.classes_ = data.classes
        self.support_ = result.support
        self.ranking_ = result.ranking
        self.n_features_ = int(result.support.sum())
        self.n_iter_ = result.n_iter
        self.elimination_scores_ = result.scores
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost` of SBS-MF and AdaBoost-CR: the boosting rounds of
        every elimination round (at most)."""
        from ._cost import boosting_cost

        return boosting_cost(self, n_samples, n_features, eliminates=True)


class SBSMF(_BackwardSelector):
    """SBS-MF: sequential backward selection by the boosting margin fraction.

    Repeatedly trains AdaBoost with decision stumps (:class:`AdaBoostStumps`)
    on the surviving features and removes the ones with the smallest margin
    fraction ``MF_f`` (eq. 10), the feature's share of the summed training
    margin, until ``n_features_to_select`` remain (Algorithm 1 of the
    paper).  Ranking follows scikit-learn's ``RFE``: selected features have
    rank 1, the last ones removed rank 2, and so on.

    Parameters
    ----------
    n_features_to_select : int or float, default=1
        Features to keep (a float: that fraction).  The default ranks all
        features, as Algorithm 1 does.
    step : int, float or "halving", default=1
        Features removed per round: an int, a fraction of ``n_features_in_``,
        or ``"halving"`` -- the paper's schedule for microarrays: remove half
        of the survivors while more than 100 remain (never going below 100),
        then one at a time.  Features removed in the same round share a rank.
    n_estimators : int, default=100
        Boosting rounds per AdaBoost.
    max_bins : int, default=256
        See :class:`AdaBoostStumps`.  The rows are binned once per ``fit``.
    class_weight : {"balanced"} or None, default=None
        Initial weights adjusted for class skew (the paper's setting for its
        unbalanced microarray sets).
    random_state : int, Generator or None, default=None
        See :class:`AdaBoostStumps`.

    Attributes
    ----------
    n_features_ : int
        Selected features.
    support_ : ndarray of shape (n_features,)
        The selected features' mask.
    ranking_ : ndarray of shape (n_features,)
        1 for the selected features; larger is removed earlier.
    elimination_scores_ : ndarray of shape (n_features,)
        The criterion each feature had in the round it was eliminated (its
        margin fraction; AdaBoost-CR: its contribution ratio); kept
        features: their criterion in the last round.  NaN when there was no
        round (``n_features_to_select`` keeps every feature).
    n_iter_ : int
        Elimination rounds.
    classes_, n_features_in_, feature_names_in_

    See Also
    --------
    AdaBoostCR : the same loop by contribution ratio.
    sklearn.feature_selection.RFE : the generic version.

    Notes
    -----
    Each round's AdaBoost is the one Algorithm 1 trains, without always
    training it again: the stumps of the previous round's committee before
    its first stump on a removed feature are this round's first stumps (a
    feature's histograms do not depend on the other features searched), so
    boosting resumes there, and a round whose removed features had no stump
    keeps the committee without a pass over the rows.  On data with many
    features that never make a stump (10^7 rows, 10 informative features of
    50), 50 -> 10 features with ``step="halving"`` costs one AdaBoost run.

    References
    ----------
    M. Alshawabkeh, J. A. Aslam, J. G. Dy, D. Kaeli, "Feature weighting and
    selection using hypothesis margin of boosting", ICDM 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from dmargin.boosting._boosting import SBSMF
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 50)
    >>> X = rng.normal(size=(100, 6)); X[:, 4] += 2 * y
    >>> SBSMF(n_features_to_select=1, n_estimators=20).fit(X, y).get_support().nonzero()[0]
    array([4])
    """


class AdaBoostCR(_BackwardSelector):
    """AdaBoost-CR: backward elimination by contribution ratio (reimplementation).

    The baseline of the SBS-MF paper (Tsuchiya & Fujiyoshi, ICPR 2008): the
    same loop as :class:`SBSMF`, removing the feature with the smallest
    contribution ratio ``CR_f = Gamma_f = sum_{t: f_t = f} alpha_t / sum_t
    |alpha_t|`` (eq. 7 and 11).  A reimplementation from the papers'
    descriptions: the original used Real AdaBoost with look-up-table weak
    learners; here the same discrete stumps as :class:`AdaBoostStumps`
    (the baselines' published code is not public).  Attributes as
    :class:`SBSMF`.

    Parameters
    ----------
    n_features_to_select, step, n_estimators, max_bins, class_weight, random_state
        As :class:`SBSMF`.
    """

    _criterion = "contribution_ratios"


# ---------------------------------------------------------------------------
# BDSFS: forward selection by boosted decision stumps
# ---------------------------------------------------------------------------


class BDSFS(_RankingSelector):
    """BDSFS: boosted decision stump feature selection (reimplementation).

    Forward selection of the SBS-MF paper's baseline (Das, ICML 2001):
    round ``t`` picks, among the features not selected yet, the decision
    stump with the largest information gain computed from ``D_t``-weighted
    class counts, adds its feature, and reweights as AdaBoost.M1 (correct
    samples times ``beta = eps / (1 - eps)``, then normalised).  When the
    stump's weighted error is 0 or at least 1/2 the weights restart from
    ``D_1`` (dmargin's choice: AdaBoost.M1 would stop, but a full ordering
    is wanted).  Features with no split (constant) come last, by index.  A
    reimplementation from the papers' descriptions (no code is public);
    the original's wrapper step that picks the subset size is left to the
    user (``n_features_to_select``).

    Parameters
    ----------
    n_features_to_select : int or float, default=1
        The first features of the order to keep (a float: that fraction).
    max_bins : int, default=256
        See :class:`AdaBoostStumps`.
    class_weight : {"balanced"} or None, default=None
        Initial weights ``D_1``.
    random_state : int, Generator or None, default=None
        See :class:`AdaBoostStumps`.

    Attributes
    ----------
    order_ : ndarray of shape (n_features,)
        Feature indices in the order they were selected.
    ranking_ : ndarray of shape (n_features,)
        1 for the selected features, then 2, 3, ... along ``order_``.
    support_ : ndarray of shape (n_features,)
    n_features_ : int
    classes_, n_features_in_, feature_names_in_
    """

    _parameter_constraints = {
        "n_features_to_select": N_FEATURES_TO_KEEP,
        "max_bins": _BOOST_CONSTRAINTS["max_bins"],
        "class_weight": _BOOST_CONSTRAINTS["class_weight"],
        "random_state": [RANDOM_STATE],
    }

    def __init__(
        self, n_features_to_select=1, *, max_bins=256, class_weight=None, random_state=None
    ):
        self.n_features_to_select = n_features_to_select
        self.max_bins = max_bins
        self.class_weight = class_weight
        self.random_state = random_state

    def fit(self, X, y):
        """Order the features by boosted information gain.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two classes.

        Returns
        -------
        self : BDSFS
        """
        data, binned, _, class_weight = _prepare(self, X, y)
        a = binned.n_features
        left = np.ones(a, dtype=bool)
        order = []
        hist = WeightedHistograms(binned, class_weight)
        stump = None
        while left.any():
            features = np.flatnonzero(left)
            H = hist.histogram(features, stump)
            gain, l0, l1 = information_gain(H, binned.n_bins[features])
            if not np.isfinite(gain).any():  # only unsplittable features remain
                order.extend(features.tolist())
                break
            k, b = np.unravel_index(np.argmax(gain), gain.shape)
            f = int(features[k])
            order.append(f)
            left[f] = False
            total = float(H[k].sum())
            # +1 polarity errs on class 1 left of the split and class 0 right of it
            err_plus = (l1[k, b] + (l0[k, -1] - l0[k, b])) / total
            polarity = 1.0 if err_plus <= 0.5 else -1.0
            eps = min(err_plus, 1.0 - err_plus)
            if eps <= 0.0 or eps >= 0.5:
                hist = WeightedHistograms(binned, class_weight)  # restart from D_1
                stump = None
                continue
            alpha = 0.5 * np.log((1.0 - eps) / eps)  # same normalised update as beta
            z = total * ((1.0 - eps) * np.exp(-alpha) + eps * np.exp(alpha))
            stump = (f, int(b), polarity, alpha, z)

        order = np.asarray(order, dtype=np.int64)
        k = n_to_select(self.n_features_to_select, a)
        ranking = np.empty(a, dtype=np.int64)
        ranking[order] = np.maximum(1, np.arange(a) - k + 2)
        self.classes_ = data.classes
        self.order_ = order
        self.ranking_ = ranking
        self.support_ = ranking == 1
        self.n_features_ = int(self.support_.sum())
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: ``None``, no rate measured for its forward
        search."""
        return None
