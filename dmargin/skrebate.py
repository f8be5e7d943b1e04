"""skrebate 0.8.4's classes under its own names and parameters, on dmargin's engine.

A skrebate user changes only the import::

    from dmargin.skrebate import MultiSURF      # was: from skrebate import MultiSURF

    fs = MultiSURF(n_features_to_select=10, categorical_threshold=10, n_jobs=-1)
    X_top = fs.fit(X, y).transform(X)           # X[:, fs.top_features_[:10]]

Every class takes skrebate's constructor parameters with skrebate's defaults,
``fit(X, y, weights=None)``, and has ``feature_importances_``,
``top_features_`` (the features by decreasing score, or ``|score|`` with
``rank_absolute``) and skrebate's ``transform`` (the top
``n_features_to_select`` columns, in that order).  Underneath, each is the
dmargin estimator of the same name (``ReliefF`` here is skrebate's ReliefF,
not :class:`dmargin.ReliefF`'s Weka semantics), so numpy, pandas and dask
input, missing values and a Dask cluster work as they do in dmargin.  Every
row is an anchor, as in skrebate (N^2 A a fit); for a sample of anchors on
millions of rows, use dmargin's own classes (``n_anchors``).

skrebate's rules, kept: a feature with at most ``categorical_threshold``
distinct values is discrete unless ``categorical_features`` lists the
discrete ones; the target is binary with two labels, multiclass with at most
``multiclass_threshold``, continuous beyond (or as ``label_type`` says); a
float ``n_neighbors`` is a fraction of the rows; ``weight_final_scores``
multiplies the scores by the ``weights`` given to ``fit``.  ``n_jobs`` and
``verbose`` are accepted and have no effect: dmargin's numba kernels use the
machine's cores, a Dask client the cluster's, and its progress goes to
:mod:`dmargin.progress` and the ``dmargin`` logger.

Where skrebate's own code has an accident, these classes follow its intent
and say so (``docs/relief_peers.md`` lists them): the anchor is never its
own neighbour, ties go to the lower row index, a pair of rows with no
feature in common is never a neighbour, the SURF mean with missing values
is of the whole distance matrix, a continuous target's hit bound is
``std(y, ddof=1)`` however few distinct values it takes (skrebate's is 0
when the target has no more values than ``categorical_threshold``), and
``weights`` given as a list are used (skrebate ignores them).

The wrappers' ``relief_object`` is the estimator they refit.  TURF's ``pct``
and ``num_scores_to_return`` are :class:`dmargin.TuRF`'s ``pct`` and
``keep``; Iter's ``max_iter``, ``convergence_threshold`` and ``beta`` are
:class:`dmargin.Iter`'s; VLS's ``num_feature_subset``,
``size_feature_subset`` and ``random_state`` are :class:`dmargin.VLS`'s.
"""

from __future__ import annotations

import numbers
from dataclasses import replace

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._capabilities import capabilities
from ._dask import compute, distinct_values, is_dask_collection
from ._validation import BOOLEAN, NONE, RANDOM_STATE, Interval, Kind, Options, is_continuous
from .relief._murelief import MuRelief as DmarginMuRelief
from .surf._surf import SURF, MultiSURF, MultiSURFstar, SURFstar
from .surf._swrf import SWRF, MultiSWRF, MultiSWRFDB, MultiSWRFDBstar, MultiSWRFstar, SWRFstar
from .wrappers._iter import Iter as DmarginIter
from .wrappers._turf import ESTIMATOR, TuRF, columns
from .wrappers._vls import VLS as DmarginVLS

#: ``categorical_features``: column indices (any iterable of ints).
_INDICES = Kind(
    "a list of column indices",
    lambda v: (
        not isinstance(v, (str, bytes))
        and hasattr(v, "__iter__")
        and all(isinstance(i, numbers.Integral) for i in v)
    ),
)
_ANY = Kind("any value", lambda v: True)

#: skrebate 0.8.4's ``ReliefF.__init__`` parameters, shared by its Relief classes.
_RELIEF_CONSTRAINTS = {
    "n_features_to_select": [Interval(numbers.Integral, 1, None)],
    "categorical_features": [_INDICES, NONE],
    "categorical_threshold": [Interval(numbers.Integral, 0, None)],
    "multiclass_threshold": [Interval(numbers.Integral, 2, None)],
    "verbose": [_ANY],
    "n_jobs": [Interval(numbers.Integral, None, None), NONE],
    "weight_final_scores": [BOOLEAN],
    "rank_absolute": [BOOLEAN],
    "label_type": [Options(("binary", "multiclass", "continuous")), NONE],
}
_NEIGHBOURS = {
    "n_neighbors": [
        Interval(numbers.Integral, 1, None),
        Interval(numbers.Real, 0, 1, closed="right"),
    ]
}


def _distinct(y):
    """``y``'s distinct values as a numpy vector, counted where ``y`` lives (a dask
    array or Series: only the distinct values come to the driver)."""
    if is_dask_collection(y):
        return distinct_values(y)
    values = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
    try:
        return np.unique(values.ravel())
    except TypeError:  # mixed types: the door's checks name the problem
        return values.ravel()


def _top_features(scores, rank_absolute):
    """skrebate's ``top_features_``: ``np.argsort(s)[::-1]`` (of ``|s|`` with
    ``rank_absolute``), its tie order included."""
    return np.argsort(np.absolute(scores) if rank_absolute else scores)[::-1]


def _skrebate_transform(est, X, n_features_to_select):
    """skrebate's ``transform``: ``X``'s top ``n_features_to_select`` columns, best first."""
    check_is_fitted(est, "top_features_")
    width = np.shape(X)[1] if np.ndim(X) == 2 or hasattr(X, "columns") else None
    if width is not None and width != est.n_features_in_:  # scikit-learn's words
        raise ValueError(
            f"X has {width} features, but {type(est).__name__} is expecting "
            f"{est.n_features_in_} features as input."
        )
    if est.n_features_in_ < n_features_to_select:
        raise ValueError(
            "Number of features to select is larger than the number of features in the dataset."
        )
    return columns(X, est.top_features_[:n_features_to_select])


def _skrebate_target(est, y):
    """skrebate's target type: whether ``y`` is a continuous target."""
    return est._continuous(_distinct(y))


def _no_declared_discrete(est):
    # Genotype bytes count every feature discrete by its values: not when declared.
    return est.categorical_features is None


def _skrebate_capabilities(base):
    """``base``'s capabilities under skrebate's rules: the target typed by skrebate's
    (``label_type``, ``multiclass_threshold``), and genotype bytes only when
    ``categorical_features`` declares no feature."""
    declared = capabilities(base)

    def compact(estimator):
        return declared.compact(estimator) and _no_declared_discrete(estimator)

    return replace(
        declared,
        target_rule=_skrebate_target,
        compact_rows=compact if declared.compact_rows else False,
    )


class _SkrebateRelief:
    """skrebate's parameters and rules on a dmargin Relief estimator (a mixin before it)."""

    # dmargin's own parameters, at the values that give skrebate's semantics.
    scale = "minmax"
    n_anchors = None
    random_state = None
    pvalues = False
    n_permutations = 0
    device = "cpu"

    @property
    def discrete_threshold(self):
        return self.categorical_threshold

    def _declared_discrete(self, n_features):
        if self.categorical_features is None:
            return None
        index = np.asarray(list(self.categorical_features), dtype=np.int64)
        bad = index[(index < 0) | (index >= n_features)]
        if bad.size:
            raise ValueError(
                f"{type(self).__name__}: categorical_features names column "
                f"{int(bad[0])}, but X has {n_features} features (columns 0 to "
                f"{n_features - 1}); give the discrete columns' indices."
            )
        mask = np.zeros(n_features, dtype=np.bool_)
        mask[index] = True
        return mask

    def _continuous(self, distinct):
        """skrebate's rule on ``y``'s distinct values."""
        try:
            n_labels = len(set(distinct.tolist()))
        except TypeError:  # unhashable labels: the door's checks name the problem
            return False
        if n_labels == 1:
            raise ValueError(
                f"{type(self).__name__}: all labels are of the same class; "
                "feature selection needs at least two."
            )
        if self.label_type is not None:
            if self.label_type == "binary" and n_labels != 2:
                raise ValueError(
                    f"{type(self).__name__}: label_type='binary', but y has "
                    f"{n_labels} distinct labels; use 'multiclass' or "
                    "'continuous'."
                )
            return self.label_type == "continuous"
        return n_labels > 2 and n_labels > self.multiclass_threshold

    def fit(self, X, y, weights=None, *, feature_weights=None):
        """Compute the scores (skrebate's ``fit(X, y, weights=None)``).

        Parameters
        ----------
        X : array-like, pandas or dask DataFrame, or dask array of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Labels or a continuous target, typed by skrebate's rules.
        weights : array-like of shape (n_features,), default=None
            Feature weights in the distance (skrebate's Iter).
        feature_weights : array-like of shape (n_features,), default=None
            The same, by dmargin's name (for :class:`dmargin.VLS` and
            :class:`dmargin.Iter`); give one or the other.

        Returns
        -------
        self : estimator
        """
        if weights is not None and feature_weights is not None:
            raise ValueError(
                f"{type(self).__name__}.fit: give the feature weights once, "
                "as weights or as feature_weights."
            )
        weights = feature_weights if weights is None else weights
        labels = None
        distinct = _distinct(y)
        if not self._continuous(distinct) and is_continuous(distinct):
            # Float labels skrebate counts as classes: fitted by their codes (on the
            # driver: at most multiclass_threshold labels, N codes).
            y = compute(y, what="the labels")[0] if is_dask_collection(y) else y
            labels, y = np.unique(np.asarray(y), return_inverse=True)
        super().fit(X, y, feature_weights=weights)
        if labels is not None:
            self.classes_ = labels
        if weights is not None and self.weight_final_scores:
            self.feature_importances_ = self.feature_importances_ * np.asarray(
                weights, dtype=np.float64
            )
        self.top_features_ = _top_features(self.feature_importances_, self.rank_absolute)
        return self

    def transform(self, X):
        """``X``'s top ``n_features_to_select`` columns, best first (skrebate's order)."""
        return _skrebate_transform(self, X, self.n_features_to_select)

    def fit_transform(self, X, y, weights=None):
        """:meth:`fit`, then :meth:`transform`."""
        return self.fit(X, y, weights).transform(X)


def _init(
    self,
    n_features_to_select=10,
    n_neighbors=100,
    categorical_features=None,
    categorical_threshold=10,
    multiclass_threshold=10,
    verbose=False,
    n_jobs=1,
    weight_final_scores=False,
    rank_absolute=False,
    label_type=None,
):
    # skrebate's ReliefF.__init__ (its MuRelief's and, through **kwargs, its SWRF family's)
    self.n_neighbors = n_neighbors
    _init_without_neighbours(
        self,
        n_features_to_select,
        categorical_features,
        categorical_threshold,
        multiclass_threshold,
        verbose,
        n_jobs,
        weight_final_scores,
        rank_absolute,
        label_type,
    )


def _init_without_neighbours(
    self,
    n_features_to_select=10,
    categorical_features=None,
    categorical_threshold=10,
    multiclass_threshold=10,
    verbose=False,
    n_jobs=1,
    weight_final_scores=False,
    rank_absolute=False,
    label_type=None,
):
    # skrebate's SURF.__init__ (its SURF family's)
    self.n_features_to_select = n_features_to_select
    self.categorical_features = categorical_features
    self.categorical_threshold = categorical_threshold
    self.multiclass_threshold = multiclass_threshold
    self.verbose = verbose
    self.n_jobs = n_jobs
    self.weight_final_scores = weight_final_scores
    self.rank_absolute = rank_absolute
    self.label_type = label_type


class ReliefF(_SkrebateRelief, DmarginMuRelief):
    """skrebate's ReliefF: the ``n_neighbors`` nearest hits and nearest rows of each other
    class, scored with skrebate's ``compute_score``.

    Not :class:`dmargin.ReliefF` (Weka's semantics: misses weighted by class
    priors, a different multiclass score).  Parameters, attributes and
    rules: the module's docstring and skrebate 0.8.4's ``ReliefF``.
    """

    _capabilities = _skrebate_capabilities(DmarginMuRelief)
    _ranked = False
    _parameter_constraints = {**_RELIEF_CONSTRAINTS, **_NEIGHBOURS}
    __init__ = _init


class MuRelief(_SkrebateRelief, DmarginMuRelief):
    """skrebate's MuRelief (:class:`dmargin.MuRelief` under skrebate's parameters)."""

    _capabilities = _skrebate_capabilities(DmarginMuRelief)
    _parameter_constraints = {**_RELIEF_CONSTRAINTS, **_NEIGHBOURS}
    __init__ = _init


def _threshold_class(base, neighbours):
    """skrebate's class of ``base``'s name: ``neighbours`` says whether its
    signature has ``n_neighbors`` (the SWRF family's, unused, as skrebate's)."""
    name = base.__name__
    doc = (
        f"skrebate's {name} (:class:`dmargin.{name}` under skrebate's parameters; "
        "the module's docstring)."
    )
    constraints = {**_RELIEF_CONSTRAINTS, **({"n_neighbors": [_ANY]} if neighbours else {})}
    return type(
        name,
        (_SkrebateRelief, base),
        {
            "__init__": _init if neighbours else _init_without_neighbours,
            "__doc__": doc,
            "__module__": __name__,
            "__qualname__": name,
            "_parameter_constraints": constraints,
            "_capabilities": _skrebate_capabilities(base),
        },
    )


# Each rebinds dmargin's class of the name to skrebate's class over it.
SURF = _threshold_class(SURF, neighbours=False)
SURFstar = _threshold_class(SURFstar, neighbours=False)
MultiSURF = _threshold_class(MultiSURF, neighbours=False)
MultiSURFstar = _threshold_class(MultiSURFstar, neighbours=False)
SWRF = _threshold_class(SWRF, neighbours=True)
SWRFstar = _threshold_class(SWRFstar, neighbours=True)
MultiSWRF = _threshold_class(MultiSWRF, neighbours=True)
MultiSWRFstar = _threshold_class(MultiSWRFstar, neighbours=True)
MultiSWRFDB = _threshold_class(MultiSWRFDB, neighbours=True)
MultiSWRFDBstar = _threshold_class(MultiSWRFDBstar, neighbours=True)


# ---------------------------------------------------------------------------
# The wrappers: relief_object is one of the classes above
# ---------------------------------------------------------------------------


class _SkrebateWrapper:
    """A dmargin wrapper under skrebate's ``relief_object``: the wrapped object's
    ``n_features_to_select`` and ``rank_absolute`` are the wrapper's."""

    @property
    def estimator(self):
        return self.relief_object

    @property
    def n_features_to_select(self):
        return getattr(self.relief_object, "n_features_to_select", 10)

    @property
    def rank_absolute(self):
        return getattr(self.relief_object, "rank_absolute", False)

    def _finish(self):
        self.top_features_ = _top_features(self.feature_importances_, self.rank_absolute)
        return self

    def transform(self, X):
        """``X``'s top ``n_features_to_select`` columns, best first (skrebate's order)."""
        return _skrebate_transform(self, X, self.n_features_to_select)


_WRAPPED = {"relief_object": [ESTIMATOR]}


class TURF(_SkrebateWrapper, TuRF):
    """skrebate's TURF (:class:`dmargin.TuRF`; ``num_scores_to_return`` is its ``keep``)."""

    _parameter_constraints = {
        **_WRAPPED,
        "pct": [Interval(numbers.Real, 0, 1, closed="right")],
        "num_scores_to_return": [Interval(numbers.Integral, 0, None)],
    }

    def __init__(self, relief_object, pct=0.5, num_scores_to_return=100):
        self.relief_object = relief_object
        self.pct = pct
        self.num_scores_to_return = num_scores_to_return

    @property
    def keep(self):
        return self.num_scores_to_return

    def fit(self, X, y):
        """Eliminate and rescore (skrebate's ``TURF.fit``)."""
        return super().fit(X, y)._finish()

    def fit_transform(self, X, y):
        """:meth:`fit`, then :meth:`transform`."""
        return self.fit(X, y).transform(X)


class VLS(_SkrebateWrapper, DmarginVLS):
    """skrebate's VLS (:class:`dmargin.VLS`: the same subsets for the same seed)."""

    _parameter_constraints = {
        **_WRAPPED,
        "num_feature_subset": [Interval(numbers.Integral, 1, None)],
        "size_feature_subset": [Interval(numbers.Integral, 1, None)],
        "random_state": [RANDOM_STATE],
    }

    def __init__(
        self, relief_object, num_feature_subset=40, size_feature_subset=5, random_state=None
    ):
        self.relief_object = relief_object
        self.num_feature_subset = num_feature_subset
        self.size_feature_subset = size_feature_subset
        self.random_state = random_state

    def fit(self, X, y, weights=None):
        """Fit ``relief_object`` on every subset (skrebate's ``VLS.fit``)."""
        return super().fit(X, y, feature_weights=weights)._finish()

    def fit_transform(self, X, y, weights=None):
        """:meth:`fit`, then :meth:`transform`."""
        return self.fit(X, y, weights).transform(X)


class Iter(_SkrebateWrapper, DmarginIter):
    """skrebate's Iter (:class:`dmargin.Iter`)."""

    _parameter_constraints = {
        **_WRAPPED,
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "convergence_threshold": [Interval(numbers.Real, 0, None)],
        "beta": [Interval(numbers.Real, 0, None)],
    }

    def __init__(self, relief_object, max_iter=10, convergence_threshold=0.0001, beta=0.1):
        self.relief_object = relief_object
        self.max_iter = max_iter
        self.convergence_threshold = convergence_threshold
        self.beta = beta

    def fit(self, X, y):
        """Refit ``relief_object`` with its scores as weights (skrebate's ``Iter.fit``)."""
        return super().fit(X, y)._finish()

    def fit_transform(self, X, y):
        """:meth:`fit`, then :meth:`transform`."""
        return self.fit(X, y).transform(X)


__all__ = [
    "ReliefF",
    "SURF",
    "SURFstar",
    "MultiSURF",
    "MultiSURFstar",
    "TURF",
    "VLS",
    "Iter",
    "SWRFstar",
    "SWRF",
    "MultiSWRFstar",
    "MultiSWRF",
    "MultiSWRFDBstar",
    "MultiSWRFDB",
    "MuRelief",
]
