"""SURF, SURF*, MultiSURF, MultiSURF*: Relief scores from every neighbour within a threshold.

Instead of ReliefF's k nearest neighbours, an anchor scores every row closer
than a threshold (and the starred variants also those farther than another):
SURF and SURF* with one global threshold, the mean of all pairwise
distances; MultiSURF and MultiSURF* with a threshold per anchor, the mean of
its distances minus half their standard deviation.  The semantics, the
scoring arithmetic included, are skrebate 0.8.4's (the implementation its
users run), for class labels and for a continuous target (skrebate's
continuous endpoint: hits and misses by the target's difference).  Each fit
is one statistic of the pairwise engine in two passes over the same tiles:
the distance moments, then the neighbours within the thresholds
(:func:`dmargin.engine.threshold_statistic`).
"""

from __future__ import annotations

import numbers

import numpy as np

from .._base import N_ANCHORS, N_FEATURES_TO_SELECT, WeightSelector, anchors_for
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
from .._utils import make_rng, timer
from .._validation import BOOLEAN, NONE, RANDOM_STATE, Interval, Options
from ..engine import (
    MISSING,
    compact_threshold_statistic,
    feature_kinds,
    permuted_rows,
    threshold_statistic,
)
from ..progress import fit_steps
from ..relief._regression import hit_bound, set_target
from ..relief._stir import (
    graph_from_sums,
    graph_sample,
    sample_moments,
    sample_rows_note,
    sample_shape,
    stir,
    uncalibrated,
)
from ..relief._terms import stir_shares
from ._cost import surf_cost
from ._terms import (
    FAR_NONE,
    FAR_SIMILARITY,
    FAR_SUBTRACT,
    multisurf_thresholds,
    surf_agg,
    surf_stir_agg,
    surf_thresholds,
)

SURF_PARAMS = """
    Parameters
    ----------
    discrete_threshold : int, default=10
        A feature with at most this many distinct values is discrete: its
        difference is 0 (equal) or 1 (different), as skrebate's
        ``categorical_threshold``.  When the data mix discrete and
        continuous features, a discrete mismatch weighs ``A / A_discrete`` in
        the distance and a scored continuous difference larger than the
        feature's standard deviation counts 1 (skrebate's mixed data; the
        distances never ramp).  Missing values are not counted.  ``0`` makes
        every feature continuous.
    scale : {{"minmax"}} or None, default="minmax"
        ``"minmax"``: a continuous difference is ``|v1 - v2| / (max - min)``
        over the training data (skrebate's); ``None`` uses the raw values.
    n_anchors : int, float or None, default=None
        ``None`` scores every sample (O(N^2 A), skrebate's only mode); an int
        ``m`` (or a fraction of N) scores ``m`` anchors, drawn once per fit and
        stratified by class (uniform for a continuous target), against all N
        samples (O(m N A)); the scores are then divided by ``m``.{sample_note}{pvalues_param}
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
        The scores, on skrebate's scale: per anchor{range_note}, a hit term in
        [-1, 0] and a miss term in [0, K - 1] (K classes; K = 2 for a
        continuous target), averaged over the anchors.
    discrete_features_ : ndarray of shape (n_features,), dtype=bool
        The features treated as discrete.
    compact_dtype_ : numpy.dtype or None
        ``uint8`` when the fit kept the rows as bytes (the compact path, see
        Notes), ``float32`` when it kept float32 input as float32 rows,
        ``None`` when it ran on float64 rows.
    anchor_indices_ : ndarray of shape (m,) or None
        The rows used as anchors (sorted), ``None`` when every row was one.
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.  Not set for a continuous target.
    target_type_ : {{"binary", "multiclass", "continuous"}}
        The mode of the fit: class labels, or a continuous target
        (scikit-learn's ``type_of_target``: floats, not all integers).
    hit_bound_ : float
        Continuous target only: ``std(y, ddof=1)``, below which ``|y_a - y_j|``
        makes ``j`` a hit of ``a``.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` had string column names.{pvalues_attrs}
"""

_SURF_SAMPLE = """  The threshold is then the mean distance of the
        anchors' rows (m x N distances, zeros of the anchors themselves
        included, as skrebate's mean of the full matrix)."""

SURF_NOTES = """
    Notes
    -----
    Scoring follows skrebate's ``compute_score``: for an anchor of class
    ``y`` with ``h`` neighbours of its class (difference sum ``H``) and ``m``
    of the others, ``m_c`` of class ``c`` (sum ``M_c``), among ``K`` classes,
    the score is ``(sum_c M_c (m_c / m) (K - 1) / m - H / h) / N`` (for two
    classes ``(M / m - H / h) / N``), each part only when its count is
    positive.

    A continuous target (``target_type_ == "continuous"``) is skrebate's
    continuous endpoint: the neighbour sets are the same as for classes
    (the thresholds depend on ``X`` only); a neighbour ``j`` of anchor ``a``
    is a hit when ``|y_a - y_j| < std(y, ddof=1)`` (``hit_bound_``), a miss
    otherwise, and the two-class score above is taken with those hits and
    misses, for the near and the far sets alike.  Such a fit takes the
    float64 path (``compact_dtype_`` is ``None``).

    Missing values (NaN) follow skrebate's rule: a pair's distance is the
    mean of its differences over the features present in both rows (a
    discrete mismatch counts 1), the thresholds' means and deviations leave
    out a pair with no feature in common, and every count above is per
    feature, of the neighbours that have it (an anchor missing a feature
    scores 0 on it); infinite values are refused.  Differences from skrebate:
    the target is continuous when ``type_of_target`` says so (floats, not
    all integers), so integer labels are always classes (skrebate treats
    more than 10 distinct labels as a continuous endpoint); SURF's and
    SURF*'s mean with missing values is that of the whole distance matrix
    (skrebate's missing-value path leaves its upper triangle 0, halving the
    mean); and a distance exactly at a threshold up to floating-point
    rounding may fall on the other side (the sums are accumulated in another
    order).  The distances are computed
    twice (once per pass), never stored: memory is O(N A).

    Compact rows (genotypes): integer or boolean ``X`` (numpy, pandas or
    dask, judged by its dtype) whose values all lie in ``[0, 255]`` and whose
    features are all discrete (``discrete_threshold``) is fitted as ``uint8``,
    automatically: no float64 copy (2,350 x 230,000 SNPs take 0.5 GB instead
    of 4.3 GB), the distance (the number of mismatched features) computed on
    bit planes of the rows (popcount, 64 features an instruction) and the
    neighbours' differences summed on the bytes, one tile of anchors at a
    time.  Dask blocks are converted where they live and read by the
    general kernels, whose per-row partials (N x classes x A float64 in all)
    still bound the width a cluster fits: GWAS widths (10^5 SNPs and more)
    run in-process.  The scores equal the float64 path's (the same rows
    given as floats) to rounding in the last bits: every distance and sum is
    an integer.  Continuous, mixed, negative or wider values, float input and
    a continuous target take the float64 path unchanged (``compact_dtype_``
    is ``None``); to force it on genotypes, pass them as floats.

    Float32 rows: ``float32`` ``X`` (numpy, pandas or dask; class labels)
    stays ``float32``, half the memory of float64 rows: scaled in float64
    and rounded to float32 once (a block of rows at a time), then read by
    the kernels, which compute every difference, distance and sum in
    float64.  The scores equal the float64 path's on the same float32
    values to rounding in the last bits; against float64 rows scaled
    without the rounding they differ by it (about 1e-7 relative, and a
    neighbour whose distance lies within it of a threshold may change
    sides).  Pass float64 to keep float64 rows.
"""


_PVALUES_PARAM = """
    pvalues : bool, default=False
        Two classes: STIR's p-values for the scores (``pvalues_``, Notes),
        from a third pass over the same pairs (about twice the fit's time)
        and a sample of at most 1,000 rows for the graph's triangles; only
        where STIR's law has been shown calibrated (Notes) and while no
        feature carries signal (Simes' combination of STIR's p-values over
        0.05; else ``global_pvalue_`` alone), elsewhere a warning.
    n_permutations : int, default=0
        ``B > 0``: permutation p-values of the global null (no feature
        related to the labels) from B more passes with the labels permuted,
        exact for exchangeable labels and any number of classes
        (``B + 1 >= A / q`` for a discovery at level q to be possible)."""

_PVALUES_ATTRS = """
    t_statistics_ : ndarray of shape (n_features,)
        With ``pvalues=True``: STIR's pseudo t-statistics, each feature's
        differences to the misses against those to the hits (Notes).
        Otherwise, or when the fit declined them, not set: reading it
        raises :class:`dmargin.PValuesUnavailableError`, which says why.
    pvalues_ : ndarray of shape (n_features,)
        With ``pvalues=True``: one-sided p-values of ``t_statistics_``; with
        ``n_permutations=B``: ``(1 + #{b : W_b >= W}) / (B + 1)``.  Not set
        (:class:`dmargin.PValuesUnavailableError`) without either, or when
        declined.
    qvalues_ : ndarray of shape (n_features,)
        ``pvalues_`` adjusted by Benjamini-Hochberg.  Like ``pvalues_``, they
        test the global null (no feature related to the labels): they are
        not per-feature evidence when other features carry the signal, and
        control the false discovery rate under the global null only, not
        among the features flagged once some features matter
        (``docs/pvalues.md``); :class:`dmargin.KnockoffSelector` selects the
        features that matter with the rate controlled given the others.
    global_pvalue_ : float
        Simes' combination of ``pvalues_`` (their smallest q-value), a
        p-value of the global null; kept when STIR's per-feature p-values
        are declined because a feature carries signal."""


_STIR_NOTES = """
    ``pvalues=True`` (two classes, no missing value) adds STIR's p-values
    (Le et al. 2019) as on ``ReliefF``: the score is STIR's difference of
    the mean miss and mean hit differences, and dmargin reads its
    t-statistic against the law its neighbour graph implies
    (:mod:`dmargin.relief._stir`).  MultiSURF's neighbourhoods hold about a third
    of the rows, so the graph is nearly dense and the score far from
    normal (skewness about 0.5 and excess kurtosis about 1 on uniform rows,
    at any N); the paper's count reads it as a t-test with a pair per
    degree of freedom.  The fit then sums the squared differences in its
    second pass and runs a third over the same pairs for the graph's row
    sums, powers and pairs found from both rows (exact, where the rows are);
    the triangles and four-cycles come from at most 1,000 rows (every row
    up to that many; with a sample of anchors, up to half of them among the
    anchors), whose distances are computed where the rows are.  Measured at
    1,200 rows from 300 of them: the triangles and four-cycles within 5 %,
    the p-values within 2 %.  On null data (uniform rows, N = 300, A = 50,
    1,000 draws, random labels; the 925 within 45:55) 4.9 % of the p-values
    fall under 0.05 and 0.11 % under 0.001, and 5.2 % of the draws make a
    discovery at q = 0.05 (4.2 % with balanced labels; the paper's test:
    about 60 % of 100 draws).  The law is not calibrated everywhere: on heavy-tailed or skewed
    features, few-valued ones (genotypes) and classes of 1:3 it makes too many
    discoveries or far too few (``benchmarks/_nulls.py``, ``docs/pvalues.md``).  The fit
    therefore returns STIR's p-values only where they have been shown
    calibrated -- two classes, the smaller at least 45 % of the rows, every
    feature with more than 10 distinct values, ``|skewness| <= 1`` and excess
    kurtosis ``<= 4`` in the moment sample -- and elsewhere warns
    (:class:`dmargin.UncalibratedPValuesWarning`) and returns none.
    ``n_permutations=B`` gives exact permutation p-values on any data,
    ``(1 + #{b : W_b >= W}) / (B + 1)`` over B more passes with the labels
    permuted (and a sample of anchors redrawn for them).  Both kinds test the
    global null; once Simes' combination of STIR's p-values
    (``global_pvalue_``) is at most 0.05 a feature carries signal, the
    others' p-values are off the law, and the fit warns and keeps
    ``global_pvalue_`` alone.  For the features that matter, with the false
    discovery rate controlled given the other features, use
    :class:`dmargin.KnockoffSelector`.
"""


def _counts_neighbours(estimator):
    """Whether genotype rows may stay bytes: the compact kernels count the neighbours, so a
    variant that weighs them (``_soft``) reads float rows."""
    return not estimator._soft


class ThresholdSelector(WeightSelector):
    """The SURF family: one engine statistic; subclasses set the thresholds and the far set."""

    #: Class labels or a continuous target; float32 rows stay float32, genotypes bytes
    #: unless the neighbours are weighed.
    _capabilities = Capabilities(
        allow_nan=True,
        targets=("classes", "continuous"),
        keep_float32=True,
        compact_rows=_counts_neighbours,
    )
    _thresholds = staticmethod(surf_thresholds)
    _far_rule = FAR_NONE
    #: An anchor block's share of the score from its pass-2 partials, and whether
    #: they weigh each neighbour (the SWRF family) or count it.
    _agg = staticmethod(surf_agg)
    _soft = False

    _parameter_constraints = {
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
        discrete_threshold=10,
        scale="minmax",
        n_anchors=None,
        n_features_to_select=None,
        rank_absolute=False,
        random_state=None,
    ):
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
            Class labels of any type, or a continuous target (floats, not all
            integers: skrebate's continuous endpoint; a dask target is
            computed, N floats).
        feature_weights : array-like of shape (n_features,), default=None
            Non-negative weights of the features' differences in the distance
            (skrebate's ``fit(X, y, weights)``): the neighbourhoods change,
            the scored differences do not.  With missing values a pair's
            distance is the weighted mean over the features both rows have.

        Returns
        -------
        self : estimator
        """
        # Initialisation: rows placed once (as bytes when they are genotype-like,
        # unweighted, and y is class labels), feature kinds as skrebate detects them
        start = start_fit(self, X, y, feature_weights=feature_weights)
        data, rows, target = start.data, start.rows, start.target
        compact = rows.X.dtype == np.uint8
        kinds = (
            start.kinds
            if start.kinds is not None
            else feature_kinds(
                rows,
                self.discrete_threshold,
                missing=data.missing,
                discrete=self._declared_discrete(rows.n_features),
            ).weighted(start.feature_weights)
        )
        bound = None if target is None else hit_bound(target)
        anchors = anchors_for(self, rows)
        permutations = getattr(self, "n_permutations", 0)
        with_p = getattr(self, "pvalues", False) and not permutations
        declined = not_asked(self)
        if with_p:  # STIR's p-values where its law has been shown calibrated, else a warning
            _check_stir(self, target, rows.n_classes, kinds)
            if start.feature_weights is not None:
                raise ValueError(
                    f"{type(self).__name__}(pvalues=True): STIR's law has been "
                    "shown calibrated for the unweighted distance only; fit "
                    "without feature_weights, or use n_permutations=B."
                )
            reason = (
                _OWN_TERM
                if type(self)._agg is not surf_agg or self._soft
                else uncalibrated(
                    "MultiSURF",
                    data.counts,
                    shape=sample_shape(rows, anchors),
                    names=getattr(self, "feature_names_in_", None),
                    where=sample_rows_note(rows, anchors),
                )
            )
            if reason is not None:
                declined = warn_uncalibrated(self, reason, rows.n_features)
                with_p = False
        if permutations and target is not None:
            raise ValueError(
                f"{type(self).__name__}(n_permutations={permutations}) permutes "
                "class labels; y is a continuous target. Fit with "
                "n_permutations=0."
            )
        # (Compact rows count mismatches on bit planes: a feature costs 1/8 or less.)
        sample = (
            graph_sample(
                rows.n_samples,
                rows.n_features,
                None if anchors is None else anchors.index,
                1 / 8 if compact and not rows.on_dask else 1.0,
            )
            if with_p
            else None
        )
        agg = surf_stir_agg if with_p else self._agg

        # One statistic: distance moments, thresholds, neighbours scored
        # (and with p-values, STIR's neighbour graph)
        name = type(self).__name__
        far = self._far_rule != FAR_NONE

        def scores(rows, anchors, agg, sample, with_p):
            if compact and not rows.on_dask:
                # 0/1 differences are their own squares (no squares summed)
                args = self._agg_args(kinds) + ((False,) if with_p else ())
                return compact_threshold_statistic(
                    rows, self._thresholds, agg, args, far=far, anchors=anchors, graph_sample=sample
                )
            return threshold_statistic(
                rows,
                self._thresholds,
                agg,
                self._agg_args(kinds),
                far=far,
                kinds=kinds,
                anchors=anchors,
                target=target,
                bound=bound or 0.0,
                graph_sample=sample,
                soft=self._soft,
            )

        with fit_steps(self, "pass", 1 + permutations) as steps, timer(name):
            out = scores(rows, anchors, agg, sample, with_p)
            steps.step()
            if permutations:  # the same pass with the labels permuted (and anchors redrawn)
                m = rows.n_samples if anchors is None else anchors.n_samples
                weights = np.asarray(out, dtype=np.float64) / m
                reached = np.zeros(weights.size)
                rng = make_rng(self.random_state).spawn(1)[0]  # not the anchors' stream
                for _ in range(permutations):
                    permuted = permuted_rows(rows, data.counts, rng)
                    reached += (
                        np.asarray(
                            scores(permuted, anchors_for(self, permuted), self._agg, None, False),
                            dtype=np.float64,
                        )
                        / m
                        >= weights
                    )
                    steps.step()

        # Final attributes
        m = rows.n_samples if anchors is None else anchors.n_samples
        self.compact_dtype_ = (
            np.dtype(np.uint8)
            if compact
            else np.dtype(np.float32)
            if rows.X.dtype == np.float32
            else None
        )
        set_target(self, None if target is not None else data.classes, bound)
        self.discrete_features_ = kinds.discrete
        self.anchor_indices_ = None if anchors is None else anchors.index
        if with_p:
            total, exact, sampled = out
            shares = stir_shares(total)
            pairs, graph = graph_from_sums(exact, sampled, shares.sums[:, 2, 0])
            moments = sample_moments(rows, anchors, kinds)
            t, p = stir(shares.sums, shares.anchor_sums, m, pairs, graph, moments)
            self.__dict__.pop("_stir_raw", None)
            set_stir_pvalues(self, t, p, rows.n_features)
            out = shares.score
        elif hasattr(self, "pvalues"):
            self.__dict__.pop("_stir_raw", None)
            if permutations:
                set_pvalues(self, (1.0 + reached) / (1.0 + permutations), t_reason=PERMUTATION_T)
            else:
                set_pvalues(self, reason=declined)
        self.feature_importances_ = np.asarray(out, dtype=np.float64) / m
        return self

    def _agg_args(self, kinds):
        """The arguments :attr:`_agg` takes after ``(P, y)``."""
        return self._far_rule, kinds.kind == MISSING

    def _fit_cost(self, n_samples, n_features):
        """:func:`~dmargin.fit_cost` of the SURF family: two passes over the pairs of
        rows (a third for STIR's p-values, all again per permutation)."""
        return surf_cost(self, n_samples, n_features)


#: Why a variant with its own per-anchor term gets no STIR p-values.
_OWN_TERM = "a per-anchor term other than MultiSURF's (the law is that of MultiSURF's own term)"


def _check_stir(estimator, target, n_classes, kinds):
    """STIR's p-values need two classes and no missing value."""
    name = type(estimator).__name__
    if target is not None:
        raise ValueError(
            f"{name}(pvalues=True) tests hits against misses of two classes "
            "(STIR); y is a continuous target. Fit with pvalues=False."
        )
    if n_classes != 2:
        raise ValueError(
            f"{name}(pvalues=True) tests hits against misses of two classes "
            f"(STIR, case-control data); y has {n_classes} classes. Fit with "
            f"pvalues=False, or use {name}(n_permutations=B) for permutation "
            "p-values with any number of classes."
        )
    if kinds.kind == MISSING:
        bad = np.flatnonzero(kinds.missing)
        raise ValueError(
            f"{name}(pvalues=True) does not take missing values (feature "
            f"{int(bad[0])} has {int(kinds.missing[bad[0]])}); impute them first "
            f"(e.g. sklearn.impute.SimpleImputer), or use {name}(n_permutations=B) "
            "for permutation p-values."
        )


class SURF(ThresholdSelector):
    __doc__ = (
        """SURF: every neighbour closer than the mean distance (Greene et al. 2009).

    One threshold for all anchors, the mean of the N x N distance matrix
    (Manhattan over range-normalised continuous and 0/1 discrete
    differences, its zero diagonal included); an anchor scores every other
    row strictly closer, hits against misses, with skrebate 0.8.4's
    ``SURF`` arithmetic.
"""
        + SURF_PARAMS.format(
            sample_note=_SURF_SAMPLE, range_note="", pvalues_param="", pvalues_attrs=""
        )
        + """
    See Also
    --------
    SURFstar : also scores the far rows, with the opposite sign.
    MultiSURF : a threshold per anchor.
    ReliefF : k nearest neighbours instead of a radius.
"""
        + SURF_NOTES
        + """
    References
    ----------
    C. S. Greene, N. M. Penrod, J. Kiralis, J. H. Moore, "Spatially Uniform
    ReliefF (SURF) for computationally-efficient filtering of gene-gene
    interactions", BioData Mining 2:5, 2009.

    Examples
    --------
    >>> from dmargin import SURF
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("wdbc")
    >>> SURF(n_features_to_select=5).fit(X, y).transform(X).shape
    (569, 5)
    """
    )


class SURFstar(ThresholdSelector):
    __doc__ = (
        """SURF*: SURF plus the far rows, scored with the opposite sign (Greene et al. 2010).

    With SURF's one threshold (the mean distance), rows strictly closer are
    near and rows strictly farther are far; the near rows score as in SURF
    and the far rows' same scoring is subtracted (skrebate 0.8.4's
    ``SURFstar``).
"""
        + SURF_PARAMS.format(
            sample_note=_SURF_SAMPLE,
            range_note=" and set (near, far)",
            pvalues_param="",
            pvalues_attrs="",
        )
        + """
    See Also
    --------
    SURF, MultiSURFstar
"""
        + SURF_NOTES
        + """
    References
    ----------
    C. S. Greene, D. S. Himmelstein, J. Kiralis, J. H. Moore, "The informative
    extremes: using both nearest and farthest individuals can improve Relief
    algorithms in the domain of human genetics", EvoBIO 2010.

    Examples
    --------
    >>> from dmargin import SURFstar
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("wdbc")
    >>> SURFstar().fit(X, y).feature_importances_.shape
    (30,)
    """
    )
    _far_rule = FAR_SUBTRACT


class MultiSURF(PValues, ThresholdSelector):
    __doc__ = (
        """MultiSURF: each anchor's neighbours within mean - deviation / 2 (Urbanowicz 2018).

    Each anchor's threshold is the mean of its distances to every other row
    minus half their standard deviation (ddof 0); the rows strictly closer
    are its neighbours, scored as skrebate 0.8.4's ``MultiSURF``.
"""
        + SURF_PARAMS.format(
            sample_note="",
            range_note="",
            pvalues_param=_PVALUES_PARAM,
            pvalues_attrs=_PVALUES_ATTRS,
        )
        + """
    See Also
    --------
    MultiSURFstar : also scores the extreme far rows.
    SURF : one global threshold.
    ReliefF : k nearest neighbours instead of a radius.
"""
        + SURF_NOTES
        + _STIR_NOTES
        + """
    References
    ----------
    R. J. Urbanowicz, R. S. Olson, P. Schmitt, M. Meeker, J. H. Moore,
    "Benchmarking relief-based feature selection methods for bioinformatics
    data mining", Journal of Biomedical Informatics 85, 2018.

    T. T. Le, R. J. Urbanowicz, J. H. Moore, B. A. McKinney, "STatistical
    Inference Relief (STIR) feature selection", Bioinformatics 35(8), 2019.

    Examples
    --------
    >>> from dmargin import MultiSURF
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("wdbc")
    >>> est = MultiSURF(n_features_to_select=3).fit(X, y)
    >>> int(est.get_support().sum())
    3
    >>> est = MultiSURF(n_permutations=19, random_state=0).fit(X, y)
    >>> float(est.pvalues_[est.feature_importances_.argmax()])  # 1 / (19 + 1)
    0.05
    """
    )
    _thresholds = staticmethod(multisurf_thresholds)
    _parameter_constraints = {
        **ThresholdSelector._parameter_constraints,
        "pvalues": [BOOLEAN],
        "n_permutations": [Interval(numbers.Integral, 0, None)],
    }

    def __init__(
        self,
        *,
        discrete_threshold=10,
        scale="minmax",
        n_anchors=None,
        pvalues=False,
        n_permutations=0,
        n_features_to_select=None,
        rank_absolute=False,
        random_state=None,
    ):
        super().__init__(
            discrete_threshold=discrete_threshold,
            scale=scale,
            n_anchors=n_anchors,
            n_features_to_select=n_features_to_select,
            rank_absolute=rank_absolute,
            random_state=random_state,
        )
        self.pvalues = pvalues
        self.n_permutations = n_permutations


class MultiSURFstar(ThresholdSelector):
    __doc__ = (
        """MultiSURF*: MultiSURF plus the extreme far rows (Granizo-Mackenzie & Moore 2013).

    Per anchor, rows closer than ``mu - sigma / 2`` are near and rows
    farther than ``mu + sigma / 2`` are far; near rows score as in
    MultiSURF, far rows score the similarities ``1 - diff`` with the same
    normalisation, added (skrebate 0.8.4's ``MultiSURFstar``).
"""
        + SURF_PARAMS.format(
            sample_note="", range_note=" and set (near, far)", pvalues_param="", pvalues_attrs=""
        )
        + """
    See Also
    --------
    MultiSURF, SURFstar
"""
        + SURF_NOTES
        + """
    References
    ----------
    D. Granizo-Mackenzie, J. H. Moore, "Multiple threshold spatially uniform
    ReliefF for the genetic analysis of complex human diseases", EvoBIO 2013.

    Examples
    --------
    >>> from dmargin import MultiSURFstar
    >>> from dmargin.datasets import load_dataset
    >>> X, y = load_dataset("wdbc")
    >>> MultiSURFstar().fit(X, y).feature_importances_.shape
    (30,)
    """
    )
    _thresholds = staticmethod(multisurf_thresholds)
    _far_rule = FAR_SIMILARITY
