"""What a fit will cost, said before it starts.

Each pairwise estimator's work is counted in its inner step (pair-features:
one ``|x_ak - x_jk|`` with its weight and sum; IMMIGRATE: ``N^2 A^2`` outer-
product terms) from N, A, the anchors and the iterations, and turned into
seconds with the rate this project measured on its 2-core development
machine (``benchmarks/results/``).  A rate on other hardware differs by a
constant factor: the estimate says how a setting scales and which setting is
faster, to within a factor of a few -- not a stopwatch.

This module is the generic part: :func:`fit_cost` asks the estimator (its
``_fit_cost`` method), :func:`fit_started` warns before a long fit, and the
counts the families share (the pairs a pass visits, permutations, elimination
rounds, a wrapper's fits).  Each family's formula and measured rates live with
it, in its subpackage's ``_cost.py`` (``relief/``, ``irelief/``, ``surf/``,
``immigrate/``, ``boosting/``, ``ldm/``).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from ._utils import warn
from .progress import expect_seconds, in_fit

#: Seconds a ReliefF or SURF-family pass costs beyond its pairwise work (threads,
#: merges): what dominates permutation p-values at small N (ReliefF(n_permutations=19),
#: N = 300, A = 50, one thread on a loaded machine: 0.0039 s a pass, 0.0006 s of it pairs).
PASS_S = 0.003


class LongFitWarning(UserWarning):
    """A fit estimated (:func:`fit_cost`) to take longer than ten minutes, said once
    before its work starts.

    The message names the estimate and, when the estimator has one, a cheaper
    setting (a sample of anchors, ``n_anchors``) with its estimate.  Silence
    it as any warning::

        warnings.filterwarnings("ignore", category=dmargin.LongFitWarning)
    """


#: Seconds of estimated cost from which a fit warns before it starts (:class:`LongFitWarning`).
LONG_FIT_SECONDS = 600.0
#: The sample of anchors a slow exact fit is pointed to, by estimator (else
#: :data:`ADVICE_ANCHORS_DEFAULT`): minutes where the exact fit takes hours.
ADVICE_ANCHORS = {"Immigrate": 500, "IM4EImmigrate": 500, "BoostedImmigrate": 500}
ADVICE_ANCHORS_DEFAULT = 1000


@dataclass(frozen=True)
class FitCost:
    """A fit's estimated work and time.

    Attributes
    ----------
    operations : float
        Inner steps (pair-features, or IMMIGRATE's outer-product terms).
    seconds : float
        At this project's measured rate (a 2-core machine).
    formula : str
        How ``operations`` grow, e.g. ``"N^2 A x 3 iterations"``.
    """

    operations: float
    seconds: float
    formula: str

    def __str__(self):
        return f"~{format_seconds(self.seconds)} ({self.formula})"


def format_seconds(seconds):
    """``12 s``, ``5 min``, ``3.2 h``."""
    if seconds < 120:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def anchor_count(n_anchors, n_samples):
    """The number of anchors ``n_anchors`` means for ``n_samples`` rows (``None``: all)."""
    if n_anchors is None:
        return None
    m = (
        n_anchors
        if isinstance(n_anchors, numbers.Integral)
        else max(1, round(n_anchors * n_samples))
    )
    return None if m >= n_samples else int(m)


def fit_cost(estimator, n_samples, n_features):
    """What ``estimator.fit`` on ``n_samples x n_features`` will cost, or ``None``.

    Each estimator states its own cost (a ``_fit_cost`` method, most of them
    calling its family's formula).  Known for the pairwise estimators
    (ReliefF, Relief, RReliefF, IRelief, OnlineIRelief, Immigrate, IM4E, the
    SURF family), for AdaBoostStumps, SBSMF and AdaBoostCR
    (``dmargin/boosting/_cost.py``) and for the linear LDM, LDMRFE and SVMRFE with the
    distributed primal solver (``kernel="linear"``, ``solver`` "newton" or
    "auto"): passes of N A (LDM, about 60 per machine) or
    N A^2 (SVM, about 8), per machine of a one-vs-one pair
    and, for the eliminations, per round on its surviving features (the
    number of classes is not known here: two are assumed).  Iter, VLS and
    TuRF add up their wrapped estimator's fits (:func:`repeated_cost`).
    ``None`` for the others, whose cost is not dominated by pairs of rows or
    passes over them.
    Iterative fits are counted at ``max_iter`` (an upper bound when ``tol >
    0`` stops them early).

    Raises
    ------
    TypeError
        ``estimator`` is not one of dmargin's estimators (it states no cost).

    Examples
    --------
    >>> import dmargin
    >>> str(dmargin.fit_cost(dmargin.ReliefF(), 200_000, 41))
    '~3 min (N^2 A, one pass)'
    >>> str(dmargin.fit_cost(dmargin.ReliefF(n_anchors=1000), 200_000, 41))
    '~0.96 s (m N A with m = 1000, one pass)'
    >>> str(dmargin.fit_cost(dmargin.ReliefF(n_permutations=999), 300, 50))
    '~3.5 s (N^2 A, one pass x 1000 (999 permutations))'
    >>> str(dmargin.fit_cost(dmargin.LDM(kernel="linear"), 10**6, 50))
    '~5.5 s (N A x about 60 Newton passes, linear primal)'
    """
    own = getattr(estimator, "_fit_cost", None)
    if own is None:
        raise TypeError(
            f"fit_cost estimates dmargin's estimators; {type(estimator).__name__} "
            "states no cost (it has no _fit_cost method)."
        )
    return own(n_samples, n_features)


def fit_started(estimator, n_samples, n_features):
    """The door of ``estimator.fit`` on ``n_samples x n_features`` (the shape only).

    For the outermost fit: one :class:`LongFitWarning` when its estimate
    (:func:`fit_cost`) exceeds :data:`LONG_FIT_SECONDS`, and the estimate
    handed to its progress (:func:`dmargin.progress.expect_seconds`: the
    notebook bar).  A fit inside another does nothing.
    """
    if in_fit():
        return
    try:
        cost = fit_cost(estimator, n_samples, n_features)
    except (TypeError, ValueError, ArithmeticError):  # an estimator that states no cost
        cost = None
    expect_seconds(estimator, None if cost is None else cost.seconds)
    if cost is None or not cost.seconds > LONG_FIT_SECONDS:
        return
    cheaper = cheaper_setting(estimator, n_samples, n_features)
    advice = "" if cheaper is None else f" With {cheaper[0]}: {cheaper[1]}."
    warn(
        f"{type(estimator).__name__}.fit on {n_samples:,} x {n_features:,} is estimated at "
        f"{cost} on this project's 2-core reference machine.{advice} (dmargin.fit_cost "
        "estimates a setting before fitting; warnings.filterwarnings('ignore', "
        "category=dmargin.LongFitWarning) silences this.)",
        LongFitWarning,
    )


def cheaper_setting(estimator, n_samples, n_features):
    """``(setting, FitCost)``: a sample of anchors that makes the fit cheaper, or ``None``.

    The estimator's own ``n_anchors`` or its wrapped estimator's
    (``estimator__n_anchors``), set to :data:`ADVICE_ANCHORS` rows where it
    asks for more (or every row).
    """
    from sklearn.base import clone

    params = estimator.get_params(deep=True)
    cost = fit_cost(estimator, n_samples, n_features)
    for key in sorted(k for k in params if k == "n_anchors" or k.endswith("__n_anchors")):
        owner = estimator
        for part in key.split("__")[:-1]:
            owner = getattr(owner, part)
        m = ADVICE_ANCHORS.get(type(owner).__name__, ADVICE_ANCHORS_DEFAULT)
        now = anchor_count(params[key], n_samples)
        if m >= n_samples or (now is not None and now <= m):
            continue
        other = fit_cost(clone(estimator).set_params(**{key: m}), n_samples, n_features)
        if other is not None and cost is not None and other.seconds < cost.seconds:
            return f"{key}={m}", other
    return None


def repeated_cost(estimator, n_samples, widths, what):
    """:func:`fit_cost` of a wrapper: fits of ``estimator`` on ``n_samples`` rows and
    ``widths[i]`` features each (``what`` says which fits), or ``None`` when the
    wrapped estimator states no cost."""
    own = getattr(estimator, "_fit_cost", None)
    costs = [] if own is None else [own(n_samples, int(w)) for w in widths]
    if not costs or any(c is None for c in costs):
        return None
    first = costs[0]
    return FitCost(
        sum(c.operations for c in costs),
        sum(c.seconds for c in costs),
        f"{what}; the first {type(estimator).__name__} fit {first}",
    )


def pairs_visited(estimator, n_samples):
    """``(m, pairs)``: the anchors ``n_anchors`` asks for (``None``: every row) and the
    pairs of rows a pass visits."""
    n = float(n_samples)
    m = anchor_count(getattr(estimator, "n_anchors", None), n_samples)
    return m, (n * n if m is None else m * n)


def permutation_passes(estimator):
    """``(B, text)``: permutation p-values repeat the pass ``B`` more times."""
    permutations = getattr(estimator, "n_permutations", 0) or 0
    again = f" x {1 + permutations} ({permutations} permutations)" if permutations else ""
    return permutations, again


def elimination_widths(estimator, n_features):
    """The number of features each round of a backward elimination fits on, as floats."""
    from ._elimination import n_to_remove, n_to_select  # the elimination's own schedule

    target = n_to_select(estimator.n_features_to_select, n_features)
    left, widths = n_features, []
    while left > target:
        widths.append(float(left))
        left -= max(1, min(n_to_remove(estimator.step, left, n_features), left - target))
    return widths
