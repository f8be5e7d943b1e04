"""Relief and ReliefF in batch: the papers' driver loops over hard neighbours.

Each estimator validates, prepares the rows once, asks the engine for one
statistic per pass and does the small update on the driver (ReliefF:
Robnik-Sikonja & Kononenko 2003).  I-RELIEF is in :mod:`dmargin.irelief`.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._base import N_ANCHORS, N_FEATURES_TO_SELECT, WeightSelector, anchors_for, miss_priors
from .._capabilities import Capabilities
from .._pvalues import (
    PERMUTATION_T,
    PValues,
    not_asked,
    set_pvalues,
    set_stir_pvalues,
    warn_uncalibrated,
)
from .._start import start_fit
from .._utils import make_rng, timer, warn
from .._validation import BOOLEAN, NONE, RANDOM_STATE, Interval, Options
from ..engine import (
    DEVICES,
    MISSING,
    check_device,
    feature_kinds,
    knn_statistic,
    permuted_rows,
)
from ..progress import fit_steps
from ._cost import relief_cost
from ._regression import fit_continuous_relieff, set_target
from ._stir import sample_moments, sample_rows_note, sample_shape, stir, uncalibrated
from ._terms import (
    relief_agg,
    relieff_agg,
    relieff_class_share,
    relieff_continuous_agg,
    relieff_stir_agg,
    stir_combine,
    stir_finish,
    stir_shares,
)

#: The ``scale`` options of the Relief family: min-max, or none (rows scaled already).
SCALE = [Options(("minmax",)), NONE]


def positive_unit(nu):
    """``nu+ / ||nu+||_2``, or ``None`` when ``nu+`` is zero."""
    pos = np.maximum(nu, 0.0)
    norm = np.linalg.norm(pos)
    return pos / norm if norm > 0 else None


def _reads_rows_once(est, continuous):
    """With a sample of anchors, a ReliefF fit on class labels without permutations
    reads the rows once (the door streams dask rows instead of persisting them)."""
    return not continuous and est.n_permutations == 0


class ReliefF(PValues, WeightSelector):
    """ReliefF with Weka's semantics (Kononenko 1994; Robnik-Sikonja & Kononenko 2003).

    Every sample is an anchor; its ``n_neighbors`` nearest hits and, for
    each other class, ``n_neighbors`` nearest misses are found under the
    Manhattan distance of the range-normalised features; misses of class C
    are weighted by ``P(C) / (1 - P(c))``; each sum is divided by the
    number of neighbours actually found, as Weka does.  The
    nearest-neighbour search is a mergeable top-k over candidate blocks of
    the pairwise engine.  Ties at equal distance go to the lower row index.

    A continuous ``y`` (scikit-learn's ``type_of_target`` says "continuous":
    floats, not all integers) is scored with skrebate 0.8.4's continuous
    endpoint instead (``target_type_ = "continuous"``): a neighbour is a hit
    when ``|y_a - y_j| < std(y, ddof=1)``, a miss otherwise; each anchor
    takes its ``n_neighbors`` nearest hits and nearest misses among all rows
    and adds ``mean miss diff - mean hit diff``, divided by ``m`` (skrebate's
    ``compute_score``; as in skrebate, an anchor with fewer than
    ``n_neighbors`` other hits counts itself as one more hit, of difference
    0).  ``discrete_threshold`` and missing values follow skrebate's rules
    as for class labels; STIR's p-values do not apply,
    ``n_permutations`` permutes the target (:mod:`dmargin.relief._regression`).
    For RReliefF (Robnik-Sikonja & Kononenko 2003) see :class:`RReliefF`.

    Parameters
    ----------
    n_neighbors : int, default=10
        Neighbours per class (Weka's ``-K``).
    discrete_threshold : int, default=0
        A feature with at most this many distinct values (missing values not
        counted) is discrete: its difference is 0 (equal) or 1 (different),
        skrebate's ``discrete_threshold`` (its default is 10).  When discrete
        and continuous features mix, a discrete mismatch weighs
        ``A / A_discrete`` in the distance and a scored continuous difference
        above the feature's standard deviation counts 1 (skrebate's mixed
        data).  ``0``: every feature continuous (Weka's treatment of numeric
        attributes).
    scale : {"minmax"} or None, default="minmax"
        ``"minmax"`` is Weka's ``diff = |v1 - v2| / (max - min)`` (constant
        features contribute 0); ``None`` uses raw differences.
    n_anchors : int, float or None, default=None
        Weka's ``-M`` / Kononenko's ``m``: ``None`` makes every sample an
        anchor (O(N^2 A)); an int ``m`` (or a fraction of N) scores ``m``
        anchors, drawn stratified by class, against all N samples (O(m N A))
        and divides by ``m``.
    n_permutations : int, default=0
        ``0``: no permutations (``pvalues_`` are STIR's with
        ``pvalues=True``, else not set).  ``B > 0``: permutation p-values of
        the global null (no feature related to the labels) from B more
        passes with the labels permuted (dask rows are then persisted once
        instead of streamed).
    pvalues : bool, default=False
        ``True``: STIR's statistics and p-values with the weights, where
        STIR's law has been shown calibrated (Notes): two classes, the smaller
        holding at least 45 % of the rows, no missing value, every feature
        continuous (more than 10 distinct values) with ``|skewness| <= 1``
        and tails no heavier than the normal law's (excess kurtosis
        ``<= 0``: uniform-like features), and only while no feature carries
        signal: once Simes' combination of STIR's p-values rejects the global
        null at 0.05, the other features' p-values are off STIR's law (Notes),
        and the fit keeps ``global_pvalue_`` alone.  Elsewhere the fit warns
        (:class:`dmargin.UncalibratedPValuesWarning`) and returns no
        per-feature p-values: use ``n_permutations`` for the global null, or
        :class:`dmargin.KnockoffSelector` for the features that matter.
        ``False``: the weights alone,
        without STIR's sums, neighbour graph and moments;
        ``n_permutations > 0`` gives permutation p-values either way.
    n_features_to_select : int, float or None, default=None
        For ``transform``: ``None`` keeps features with positive weight, an
        int the top ones, a float that fraction (by ``|score|`` with
        ``rank_absolute=True``).
    rank_absolute : bool, default=False
        For ``transform``: rank the features by the absolute value of their
        scores (skrebate's ``rank_absolute``: a strongly negative score counts
        as informative); ``n_features_to_select=None`` then keeps every
        feature whose score is not 0.
    random_state : int, Generator or None, default=None
        Seeds the sample of anchors and the permutations.
    device : {"cpu", "cuda"}, default="cpu"
        Where the distance tiles run.  ``"cuda"``: on the GPU (numba.cuda):
        continuous features in float32 with every neighbour's rank rechecked
        in float64 where the float32 error bound cannot settle it, discrete
        features and missing values in float64, so the weights are the CPU's.
        For class labels (a continuous target is refused with the reason).
        On dask each task's tile runs on its worker's GPU.  A machine without
        a usable GPU is refused at ``fit`` with one line saying why.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        ReliefF's weights W (in [-1, 1], not normalised).
    discrete_features_ : ndarray of shape (n_features,), dtype=bool
        The features treated as discrete (``discrete_threshold``).
    anchor_indices_ : ndarray of shape (m,) or None
        The rows used as anchors (sorted), ``None`` when every row was one.
    t_statistics_ : ndarray of shape (n_features,)
        STIR's pseudo t-statistics (Le, Urbanowicz, Moore & McKinney 2019),
        for two classes: each feature's differences to the misses against
        those to the hits (the neighbours of the weights), the variances
        pooled as in the paper; the standard error counts a pair found from
        both of its rows as one draw and adds the covariance of pairs that
        share a row (Notes).  A feature with no spread in its differences (a
        constant feature) gets 0.  Not set for more than two classes (STIR
        is defined for case-control data), with ``pvalues=False`` or when the
        fit declined the p-values: reading it then raises
        :class:`dmargin.PValuesUnavailableError`, which says why.
    pvalues_ : ndarray of shape (n_features,)
        One-sided p-values: with ``n_permutations=0``, STIR's
        (``t_statistics_`` against the law the neighbour graph implies); with
        ``n_permutations=B``, ``(1 + #{b : W_b >= W}) / (B + 1)`` over the
        weights ``W_b`` of B fits with permuted labels (any number of classes).
        Not set when none were asked for or the fit declined them (reading
        it raises :class:`dmargin.PValuesUnavailableError`).
    qvalues_ : ndarray of shape (n_features,)
        ``pvalues_`` adjusted by Benjamini-Hochberg.  Both test the global
        null (no feature related to the labels), one feature's score at a
        time: they are not per-feature evidence when other features carry
        the signal, and control the false discovery rate under the global
        null only, not among the features flagged once some features matter
        (``docs/pvalues.md``); :class:`dmargin.KnockoffSelector` selects
        the features that matter with the rate controlled given the others.
    global_pvalue_ : float
        Simes' combination of ``pvalues_`` (their smallest q-value): a
        p-value of the global null, kept when STIR's per-feature p-values
        are declined because a feature carries signal.
    classes_ : ndarray of shape (n_classes,)
        Not set for a continuous target.
    target_type_ : {"binary", "multiclass", "continuous"}
        The mode of the fit, by ``type_of_target(y)``.
    hit_bound_ : float
        Continuous target only: ``std(y, ddof=1)``, below which ``|y_a - y_j|``
        makes a hit.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Notes
    -----
    Missing values (NaN) follow skrebate 0.8.4's rule, the one its users run:
    a pair's distance is the sum of its differences over the features present
    in both rows (a discrete mismatch counts 1) divided by their number; a
    neighbour missing a feature is left out of that feature's sum and of its
    neighbour count ``k_H`` or ``k_C``, so each feature is averaged over the
    neighbours that have it; an anchor missing a feature scores 0 on it.  A
    row with no feature in common with the anchor is never its neighbour.
    With two classes the weights equal skrebate's ``ReliefF``, with two
    exceptions: ties at the k-th neighbour (dmargin's go to the lower row,
    skrebate's follow an unstable sort), and an anchor whose class holds no
    more than ``k`` other rows, which skrebate counts as its own last hit
    (at distance ``sys.maxsize``) where dmargin averages over the hits
    there are (GAMETES at N = 200 with ``k = 100``:
    ``benchmarks/bench_gametes.py`` measures both); with more classes, the
    misses keep Weka's ``P(C) / (1 - P(c))`` weights.  Infinite values are
    refused.

    STIR's ReliefF score, the difference of the two means of its t-statistic,
    is ``feature_importances_`` itself for two classes.  The paper's t-test
    takes the ``n = m k`` pairs of a side as independent draws; they are not,
    and on null data its p-values are far too small (uniform rows, random
    labels: 10 % under 0.05, a discovery at q = 0.05 in a third of the draws).
    dmargin keeps the statistic and models its law given the neighbour graph
    (:mod:`dmargin.relief._stir`): a pair found from both of its rows counts once,
    pairs that share a row add their covariance to the variance, and the
    graph's triangles, which always hold an odd number of hits, skew the
    score to the right, the more so the larger ``k / N`` (skewness 0.11 at
    k = 10 of N = 300 rows, 0.66 at k = 50), and its four-cycles thicken its
    tails; the p-value reads the t-statistic against Johnson's SU law of the
    skewness and kurtosis that the graph and the feature's own differences
    imply (a Pearson type III law of the skewness where no SU law has them).
    The sums over the graph run where the neighbour pairs are merged; the
    differences' moments come from at most 200 rows (evenly spaced among the
    anchors or the rows).  Over 1,000 null draws (uniform rows, N = 300,
    A = 50, k = 10, random labels; the 925 within 45:55) the p-values are
    uniform by Kolmogorov-Smirnov (p = 0.16), 5.0 % fall under 0.05 and
    0.09 % under 0.001, and 4.4 % of the draws make a discovery at q = 0.05
    (95 % interval 3.3-6.0 %; the paper's test: 35 % of 100 draws).  With k near N / 6 the
    score is far from normal and the p-values are approximate, a little
    conservative (``benchmarks/README.md``, STIR).
    That calibration does not hold on all data: on heavy-tailed or skewed
    features, few-valued ones (genotypes) and unbalanced classes the law
    makes too many discoveries or far too few (the null battery of
    ``benchmarks/_nulls.py``, ``docs/pvalues.md``).  ReliefF's weights lean toward the
    larger class when the classes are unbalanced (1:1.5: 6.3 % of null
    p-values under 0.05), which no reading of the t-statistic corrects, and
    on normal features the law's far tail is too thin (FDR 0.065 at q = 0.05
    over 1,400 null draws, N = 300).  So
    ``pvalues=True`` returns STIR's p-values only inside the domain where
    they have been shown calibrated (``pvalues``) and otherwise warns.  Permutation
    p-values (``n_permutations``) are exact for exchangeable labels, at the
    price of B more passes; each permutation redraws the anchors of a
    sample, stratified by the permuted labels.

    Both kinds test the global null.  A feature that carries signal shapes
    the neighbour graph, and the other features' STIR p-values leave the law
    even inside the domain (one informative and seven uniform noise features,
    N = 400, 1:1, 200 draws: 8.9 % of the noise p-values under 0.05, FDR
    0.074 at q = 0.05), so once Simes' combination (``global_pvalue_``) is
    at most 0.05 the fit warns and keeps it alone.  For the features that
    matter, FDR controlled given the others: :class:`dmargin.KnockoffSelector`.

    References
    ----------
    T. T. Le, R. J. Urbanowicz, J. H. Moore, B. A. McKinney, "STatistical
    Inference Relief (STIR) feature selection", Bioinformatics 35(8), 2019.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dmargin import ReliefF
    >>> X, y = make_classification(n_samples=200, n_features=6, random_state=0)
    >>> ReliefF(n_neighbors=5, n_features_to_select=2).fit(X, y).transform(X).shape
    (200, 2)
    >>> est = ReliefF(n_permutations=99, random_state=0).fit(X, y)
    >>> float(est.pvalues_[est.feature_importances_.argmax()])  # 1 / (99 + 1)
    0.01
    """

    _capabilities = Capabilities(
        allow_nan=True, targets=("classes", "continuous"), one_pass=_reads_rows_once
    )
    #: The per-anchor term: ``agg(dist, idx, z, ya, miss_prior, missing)`` turns an
    #: anchor block's ``k`` nearest rows of each class (:func:`dmargin.engine.knn_statistic`)
    #: into its share of the score.  A Relief variant that weighs the neighbours
    #: otherwise is a subclass with its own (``docs/contributing/adding_an_estimator.md``).
    _agg = staticmethod(relieff_agg)
    #: The per-anchor term for a continuous target (:func:`relieff_continuous_agg`); a
    #: variant with its own ``_agg`` and not this one is refused on a continuous target.
    _continuous_agg = staticmethod(relieff_continuous_agg)
    _parameter_constraints = {
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "discrete_threshold": [Interval(numbers.Integral, 0, None)],
        "scale": SCALE,
        "n_anchors": N_ANCHORS,
        "n_permutations": [Interval(numbers.Integral, 0, None)],
        "pvalues": [BOOLEAN],
        "n_features_to_select": N_FEATURES_TO_SELECT,
        "rank_absolute": [BOOLEAN],
        "random_state": [RANDOM_STATE],
        "device": [Options(DEVICES)],
    }

    def __init__(
        self,
        *,
        n_neighbors=10,
        discrete_threshold=0,
        scale="minmax",
        n_anchors=None,
        n_permutations=0,
        pvalues=False,
        n_features_to_select=None,
        rank_absolute=False,
        random_state=None,
        device="cpu",
    ):
        self.n_neighbors = n_neighbors
        self.discrete_threshold = discrete_threshold
        self.scale = scale
        self.n_anchors = n_anchors
        self.n_permutations = n_permutations
        self.pvalues = pvalues
        self.n_features_to_select = n_features_to_select
        self.rank_absolute = rank_absolute
        self.random_state = random_state
        self.device = device

    def fit(self, X, y, feature_weights=None):
        """Compute the ReliefF weights.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        feature_weights : array-like of shape (n_features,), default=None
            Non-negative weights of the features' differences in the distance
            (skrebate's ``fit(X, y, weights)``): the neighbours change, the
            scored differences do not.  With missing values a pair's distance
            is the weighted mean over the features both rows have.

        Returns
        -------
        self : ReliefF
        """
        start = start_fit(self, X, y, feature_weights=feature_weights)
        check_device(type(self).__name__, self.device)
        if self.pvalues and start.feature_weights is not None:
            raise ValueError(
                "ReliefF(pvalues=True): STIR's law has been shown calibrated "
                "for the unweighted distance only; fit without "
                "feature_weights, or use n_permutations=B."
            )
        if start.target is not None:  # a regression target: skrebate's continuous endpoint
            if self.pvalues and not self.n_permutations:
                raise ValueError(
                    "ReliefF(pvalues=True) tests hits against misses of two "
                    "classes (STIR); y is a continuous target. Fit with "
                    "pvalues=False, or use n_permutations=B for permutation "
                    "p-values."
                )
            if self.device != "cpu":
                raise ValueError(
                    f"{type(self).__name__}(device={self.device!r}) ranks neighbours by class "
                    "labels; y is a continuous target. Fit with device='cpu'."
                )
            return fit_continuous_relieff(self, start)
        data, rows = start.data, start.rows
        # Feature kinds (a pass over the rows only for discrete_threshold > 0 or NaN)
        kinds = feature_kinds(rows, self.discrete_threshold, missing=data.missing).weighted(
            start.feature_weights
        )
        anchors = anchors_for(self, rows)
        # STIR's p-values only where its law has been shown calibrated (else a warning)
        reason, declined = None, not_asked(self)
        if self.pvalues and not self.n_permutations:
            if type(self)._agg is not relieff_agg:
                reason = (
                    "a per-anchor term other than ReliefF's (the law is that of ReliefF's own term)"
                )
            else:
                reason = uncalibrated("ReliefF", data.counts, missing=kinds.kind == MISSING)
            if reason is None:
                reason = uncalibrated(
                    "ReliefF",
                    data.counts,
                    shape=sample_shape(rows, anchors),
                    names=getattr(self, "feature_names_in_", None),
                    where=sample_rows_note(rows, anchors),
                )
            if reason is not None:
                declined = warn_uncalibrated(self, reason, rows.n_features)
        binary = len(data.classes) == 2 and self.pvalues and reason is None  # STIR's extras
        priors = (miss_priors(data.counts), kinds.kind == MISSING)
        # ReliefF's own term also from the neighbours' class sums (a changed one: its own rows)
        sums_agg = relieff_class_share if type(self)._agg is relieff_agg else None
        with fit_steps(self, "pass", 1 + self.n_permutations) as steps, timer("ReliefF"):
            if binary:  # STIR's sums and neighbour pairs come with the weights
                total, pairs, graph = knn_statistic(
                    rows,
                    self.n_neighbors,
                    relieff_stir_agg,
                    priors,
                    anchors=anchors,
                    kinds=kinds,
                    combine=stir_combine,
                    finish=stir_finish,
                    anchor_index=True,
                    device=self.device,
                )
            else:
                total = knn_statistic(
                    rows,
                    self.n_neighbors,
                    self._agg,
                    priors,
                    anchors=anchors,
                    kinds=kinds,
                    device=self.device,
                    sums_agg=sums_agg,
                )
            total = np.asarray(total)
            steps.step()
            m = rows.n_samples if anchors is None else anchors.n_samples
            shares = stir_shares(total) if binary else None
            weights = (shares.score if binary else total) / m
            reached = np.zeros(weights.size)
            rng = make_rng(self.random_state).spawn(1)[0]  # not the anchors' stream
            for _ in range(self.n_permutations):
                permuted = permuted_rows(rows, data.counts, rng)
                sample = anchors_for(self, permuted)
                reached += (
                    np.asarray(
                        knn_statistic(
                            permuted,
                            self.n_neighbors,
                            self._agg,
                            priors,
                            anchors=sample,
                            kinds=kinds,
                            device=self.device,
                            sums_agg=sums_agg,
                        )
                    )
                    / m
                    >= weights
                )
                steps.step()
        set_target(self, data.classes)
        self.discrete_features_ = kinds.discrete
        self.feature_importances_ = weights
        self.__dict__.pop("_stir_raw", None)
        t = p = None
        if binary:
            moments = sample_moments(rows, anchors, kinds)
            t, p = stir(shares.sums, shares.anchor_sums, m, pairs, graph, moments)
        if self.n_permutations:
            set_pvalues(
                self, (1.0 + reached) / (1.0 + self.n_permutations), t, t_reason=PERMUTATION_T
            )
        elif binary:
            set_stir_pvalues(self, t, p, rows.n_features)
        else:
            set_pvalues(self, reason=declined)
        self.anchor_indices_ = None if anchors is None else anchors.index
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: one pass over the pairs of rows (and one per
        permutation)."""
        return relief_cost(self, n_samples, n_features)


class Relief(WeightSelector):
    """Relief (Kira & Rendell 1992) in the closed form of Sun (2007), equation 6.

    ``z = sum_n |x_n - NM(x_n)| - |x_n - NH(x_n)|`` with the nearest miss
    (any other class) and nearest hit under the Manhattan distance; the
    weights ``z+ / ||z+||_2`` maximise the average margin ``w.z`` on the
    unit sphere (eq. 3).  A sample alone in its class contributes its miss
    term only.

    Parameters
    ----------
    scale : {"minmax"} or None, default="minmax"
        Scale each feature to [0, 1] over the training data first (constant
        features contribute 0); ``None`` uses the numbers as given.
    n_features_to_select : int, float or None, default=None
        For ``transform``: ``None`` keeps features with positive weight, an
        int the top ones, a float that fraction.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        ``z+ / ||z+||_2``.
    margin_vector_ : ndarray of shape (n_features,)
        ``z`` itself.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dmargin import Relief
    >>> X, y = make_classification(n_samples=100, n_features=5, random_state=0)
    >>> round(float((Relief().fit(X, y).feature_importances_ ** 2).sum()), 6)
    1.0
    """

    _parameter_constraints = {
        "scale": SCALE,
        "n_features_to_select": N_FEATURES_TO_SELECT,
    }

    def __init__(self, *, scale="minmax", n_features_to_select=None):
        self.scale = scale
        self.n_features_to_select = n_features_to_select

    def fit(self, X, y):
        """Compute ``z`` and the closed-form weights.

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : Relief
        """
        data, rows = start_fit(self, X, y)[:2]
        z = np.asarray(knn_statistic(rows, 1, relief_agg))
        w = positive_unit(z)
        if w is None:
            warn(
                "z+ is zero: no feature separates nearest hits from nearest "
                "misses; returning all-zero weights.",
                RuntimeWarning,
            )
            w = np.zeros_like(z)
        self.classes_ = data.classes
        self.margin_vector_ = z
        self.feature_importances_ = w
        return self

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost`: one pass over the pairs of rows."""
        return relief_cost(self, n_samples, n_features)
