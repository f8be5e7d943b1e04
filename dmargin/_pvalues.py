"""What a fit's p-values test, and what a fit that has none says when they are read.

The estimators with ``pvalues_`` (``ReliefF``, ``MultiSURF``) set ``pvalues_``,
``qvalues_``, ``global_pvalue_`` and ``t_statistics_`` through :func:`set_pvalues`;
those a fit did not compute (none asked for, or declined: outside STIR's
calibrated domain, or a feature carrying signal) are left out, and reading one
raises :class:`PValuesUnavailableError` with the reason the warning gave and what
to use instead.  Both kinds of p-value test the global null (no feature related
to the labels); :func:`signal_found` is STIR's check for partial nulls.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import false_discovery_control

from ._utils import warn


class UncalibratedPValuesWarning(UserWarning):
    """A fit asked for STIR's p-values on data where they have not been shown calibrated."""


class PValuesUnavailableError(AttributeError):
    """A fit's per-feature p-values were declined or never asked for.

    Raised on reading ``pvalues_``, ``qvalues_``, ``t_statistics_`` or
    ``global_pvalue_`` after such a fit, with the reason and what to use
    instead.  An ``AttributeError``, so ``hasattr(est, "pvalues_")`` is
    ``False``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from dmargin import PValuesUnavailableError, ReliefF
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> est = ReliefF().fit(X, y)
    >>> hasattr(est, "qvalues_")
    False
    >>> try:
    ...     est.qvalues_ <= 0.05
    ... except PValuesUnavailableError as error:
    ...     print(str(error).split(":")[0])
    ReliefF.qvalues_ is not available
    """


#: The fitted attributes of per-feature evidence, and the global test.
PVALUE_ATTRIBUTES = ("t_statistics_", "pvalues_", "qvalues_", "global_pvalue_")
#: The level at which STIR's global test says that some feature carries signal.
GLOBAL_LEVEL = 0.05


def alternatives(name):
    """What to use when per-feature p-values are not available."""
    return (
        f"For p-values of the global null (no feature related to the labels), exact on "
        f"any data, use {name}(n_permutations=B); for the features that matter, with "
        f"the false discovery rate controlled given the other features, use "
        f"dmargin.KnockoffSelector({name}())."
    )


class PValues:
    """Mixin of the estimators with ``pvalues_``: an attribute a fit left out raises
    :class:`PValuesUnavailableError` saying why (:func:`set_pvalues`)."""

    def __getattr__(self, name):
        # Only reached when normal lookup fails: a fitted attribute that is not there.
        reasons = self.__dict__.get("_pvalues_unavailable")
        if reasons and name in reasons:
            label = type(self).__name__
            raise PValuesUnavailableError(
                f"{label}.{name} is not available: {reasons[name]}. {alternatives(label)}"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


#: Why a fit with permutation p-values has no t-statistics.
PERMUTATION_T = (
    "permutation p-values (n_permutations=B) come without STIR's t-statistics "
    "(pvalues=True with two classes adds them)"
)


def set_pvalues(est, pvalues=None, t=None, reason=None, t_reason=None, global_p=None):
    """Set ``pvalues_``, ``qvalues_`` (Benjamini-Hochberg), ``global_pvalue_``
    (Simes' combination: their minimum) and ``t_statistics_``; those not given
    are removed, and reading them raises :class:`PValuesUnavailableError` with
    ``reason`` (``t_reason`` for the t-statistics).  ``global_p``: p-values
    declined whose Simes combination is kept as ``global_pvalue_``."""
    for attribute in PVALUE_ATTRIBUTES:
        est.__dict__.pop(attribute, None)
    unavailable = {}
    if pvalues is None:
        unavailable = dict.fromkeys(PVALUE_ATTRIBUTES, reason)
        if global_p is not None:
            est.global_pvalue_ = simes(global_p)
            del unavailable["global_pvalue_"]
    else:
        est.pvalues_ = np.asarray(pvalues, dtype=np.float64)
        est.qvalues_ = false_discovery_control(est.pvalues_, method="bh")
        est.global_pvalue_ = simes(est.pvalues_)
    if t is None:
        unavailable.setdefault("t_statistics_", t_reason or reason)
    else:
        est.t_statistics_ = t
    est._pvalues_unavailable = unavailable


def not_asked(est):
    """The reason :func:`set_pvalues` gives when a fit asked for no p-values."""
    return (
        f"{type(est).__name__} was fitted with pvalues=False and n_permutations=0, "
        "so it computed no p-values"
    )


def simes(pvalues):
    """Simes' global p-value, ``min_j A p_(j) / j`` (the smallest Benjamini-Hochberg
    q-value): valid for the global null, that no feature is related to the labels."""
    p = np.sort(np.asarray(pvalues, dtype=np.float64))
    return float(min(1.0, np.min(p.size * p / np.arange(1, p.size + 1)))) if p.size else 1.0


def signal_found(t, pvalues, names=None):
    """Why STIR's per-feature p-values are declined although its law holds, or ``None``.

    STIR's law is that of a feature unrelated to the labels given a neighbour
    graph that no feature shapes.  When some feature carries signal, the
    neighbours are found by it, and a noise feature's score is pulled away
    from the law (1 informative and 7 uniform noise features, N = 400, 1:1:
    noise p-values under 0.05 in 18 % of the draws).  Simes' combination
    still tests the global null; once it rejects at :data:`GLOBAL_LEVEL`, the
    per-feature p-values are declined.
    """
    g = simes(pvalues)
    if g > GLOBAL_LEVEL:
        return None
    f = int(np.argmin(pvalues))
    feature = f"feature {names[f]!r} (column {f})" if names is not None else f"column {f}"
    return (
        f"{feature} carries signal (STIR's global p = {g:.3g}, Simes' combination of the "
        "features' p-values, kept as global_pvalue_); with an informative feature present "
        "the other features' p-values are not calibrated: they test the global null, not "
        "whether each feature matters"
    )


def set_stir_pvalues(est, t, pvalues, n_features):
    """STIR's p-values on ``est``, or, where :func:`signal_found` finds signal, the
    decline (with its warning), ``global_pvalue_`` and the raw values kept for
    :func:`raw_pvalues`."""
    found = signal_found(t, pvalues, getattr(est, "feature_names_in_", None))
    if found is None:
        set_pvalues(est, pvalues, t)
        return
    keep_raw(est, t, pvalues)
    set_pvalues(est, reason=warn_declined(est, found, n_features), global_p=pvalues)


def keep_raw(est, t, pvalues):
    """Keep STIR's statistics of a fit whose per-feature p-values were declined after
    they were computed (:func:`raw_pvalues`)."""
    est._stir_raw = (np.asarray(t), np.asarray(pvalues))


def raw_pvalues(est):
    """STIR's ``(t_statistics, pvalues)`` of ``est``'s last fit before the check of
    :func:`signal_found`, or ``None`` where STIR did not run: what a benchmark
    measures the check with (the false discovery rate of the raw p-values on
    partial nulls), never evidence that a feature matters."""
    raw = est.__dict__.get("_stir_raw")
    if raw is not None:
        return raw
    if "pvalues_" in est.__dict__ and "t_statistics_" in est.__dict__:
        return est.t_statistics_, est.pvalues_
    return None


def warn_uncalibrated(estimator, reason, n_features):
    """Say why the fit returns no p-values, and what to use instead; returns the
    reason a later read of ``pvalues_`` gives."""
    return warn_declined(
        estimator, f"STIR's law has not been shown calibrated on {reason}", n_features
    )


def warn_declined(estimator, why, n_features):
    """:func:`warn_uncalibrated` with the whole reason ``why``."""
    name = type(estimator).__name__
    need = math.ceil(n_features / 0.05)
    warn(
        f"{name}(pvalues=True) returns no per-feature p-values for these data: {why}. Use "
        f"{name}(n_permutations=B) for permutation p-values of the global null (no feature "
        f"related to the labels), exact for any data (B + 1 >= {need}, n_features / 0.05, "
        "for a discovery at q = 0.05 to be possible), dmargin.KnockoffSelector for the "
        "features that matter (the false discovery rate controlled given the other "
        "features), or pvalues=False for the scores alone.",
        UncalibratedPValuesWarning,
    )
    return f"{name}(pvalues=True) declined them: {why}"
