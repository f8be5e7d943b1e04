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
    DEVICES,
    MISSING,
    PLAIN,
    check_device,
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
from ._docstrings import (
    PVALUES_ATTRS,
    PVALUES_PARAM,
    STIR_NOTES,
    SURF_NOTES,
    SURF_PARAMS,
    SURF_SAMPLE,
)
from ._terms import (
    FAR_NONE,
    FAR_SIMILARITY,
    FAR_SUBTRACT,
    multisurf_thresholds,
    surf_agg,
    surf_stir_agg,
    surf_thresholds,
)


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
        "device": [Options(DEVICES)],
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
        device="cpu",
    ):
        self.discrete_threshold = discrete_threshold
        self.scale = scale
        self.n_anchors = n_anchors
        self.n_features_to_select = n_features_to_select
        self.rank_absolute = rank_absolute
        self.random_state = random_state
        self.device = device

    def _off_the_gpu(self, target, kinds, with_p, compact):
        """Why ``device="cuda"`` cannot run this fit, or ``None``."""
        if self._soft:
            return "weighs each neighbour by its distance (the GPU passes count them)"
        if target is not None:
            return "is given a continuous target (the GPU passes take class labels)"
        if with_p:
            return "is asked for STIR's p-values (their neighbour graph runs on the CPU)"
        if compact or kinds.kind != PLAIN:
            return (
                "is given discrete features or missing values (the GPU passes take continuous ones)"
            )
        return None

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
        check_device(type(self).__name__, self.device)
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
        why = self.device != "cpu" and self._off_the_gpu(target, kinds, with_p, compact)
        if why:
            raise ValueError(
                f"{type(self).__name__}(device={self.device!r}) {why}: fit with device='cpu'."
            )

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
                device=self.device,
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
            sample_note=SURF_SAMPLE, range_note="", pvalues_param="", pvalues_attrs=""
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
            sample_note=SURF_SAMPLE,
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
            pvalues_param=PVALUES_PARAM,
            pvalues_attrs=PVALUES_ATTRS,
        )
        + """
    See Also
    --------
    MultiSURFstar : also scores the extreme far rows.
    SURF : one global threshold.
    ReliefF : k nearest neighbours instead of a radius.
"""
        + SURF_NOTES
        + STIR_NOTES
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
        device="cpu",
    ):
        super().__init__(
            discrete_threshold=discrete_threshold,
            scale=scale,
            n_anchors=n_anchors,
            n_features_to_select=n_features_to_select,
            rank_absolute=rank_absolute,
            random_state=random_state,
            device=device,
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
