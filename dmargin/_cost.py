"""What a fit will cost, said before it starts.

Each pairwise estimator's work is counted in its inner step (pair-features:
one ``|x_ak - x_jk|`` with its weight and sum; IMMIGRATE: ``N^2 A^2`` outer-
product terms) from N, A, the anchors and the iterations, and turned into
seconds with the rate this project measured on its 2-core development
machine (``benchmarks/results/``).  A rate on other hardware differs by a
constant factor: the estimate says how a setting scales and which setting is
faster, to within a factor of a few -- not a stopwatch.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

from ._utils import user_stacklevel
from .progress import expect_seconds, in_fit

#: Pair-features per second, exact ReliefF, 2 threads (relief_speed.json: N = 8,000,
#: A = 50, 0.373 s steady).
RELIEFF_RATE = 8.5e9
#: Pair-features per second and iteration, exact I-RELIEF, 2 threads (relief_speed.json:
#: N = 8,000, A = 50, 3 iterations in 2.77 s).
IRELIEF_RATE = 3.4e9
#: Pair-features per second of the SURF family (both passes counted once: N^2 A), 2 threads:
#: MultiSURF at N = 8,000, A = 50 in 0.66 s of wall time (tests/test_surf.py's kernels;
#: one thread: 0.62-0.67 s of CPU, about 2.2x fast-select's).
SURF_RATE = 4.8e9
#: Pair-features per second of the SWRF family (N^2 A, as SURF_RATE), 2 threads, N = 8,000,
#: A = 50: MultiSWRF 0.93 s and MultiSWRFDB about as fast (near sets only); the starred
#: variants score nearly every pair twice, SWRF* 1.55 s (SWRF_STAR_RATE).
SWRF_RATE = 3.4e9
#: Pair-features per second of MuRelief (N^2 A for its two passes), 2 threads, N = 8,000,
#: A = 50, n_neighbors = 100: the general nearest-neighbour kernel, a pair at a time.
MURELIEF_RATE = 6.3e8
SWRF_STAR_RATE = 2.0e9
#: MultiSURF(pvalues=True) against MultiSURF: the squared differences in the second pass
#: and a third pass over the same pairs (STIR's graph), measured 1.9-2.2x at N = 8,000,
#: A = 50, one thread.
STIR_SURF_FACTOR = 2.0
#: Seconds a ReliefF or SURF-family pass costs beyond its pairwise work (threads,
#: merges): what dominates permutation p-values at small N (ReliefF(n_permutations=19),
#: N = 300, A = 50, one thread on a loaded machine: 0.0039 s a pass, 0.0006 s of it pairs).
PASS_S = 0.003
#: Pair-features per second of online I-RELIEF, one thread (online_scale.json: 10^7 rows
#: x 50 features against 2,000 reference rows in a pass of 505 s).
ONLINE_RATE = 2.0e9
#: IMMIGRATE on one core: ``max_iter * (pairs A^2 / PAIR_RATE + A^3 / EIGH_RATE)``.  A
#: step's E-step visits the N^2 / 2 unordered pairs of rows (m N ordered ones with m
#: anchors), each adding an A x A outer product to Sigma; its M-step eigendecomposes the
#: A x A Sigma, which dominates when N is small (50 x 5000).  Rates measured while the
#: machine ran other jobs (load 5-6; numba, one BLAS thread): the E-step from the
#: "IMMIGRATE step" DEBUG timings of Immigrate(max_iter=3) on Gaussian data, N = 40..200,
#: A = 300..1500: 0.92e10-1.01e10 N^2 A^2 per second; the M-step on random symmetric
#: A x A matrices, A = 500..3000: 1.9e9-2.4e9 A^3 per second.  Rounded down, so the
#: estimate errs long: 50 x 5000 with 10 steps comes out at ~690 s, against 417 s
#: reported for that fit (benchmarks/results/immigrate_cost_rate.json).
PAIR_RATE = 9.0e9
EIGH_RATE = 2.0e9
#: Row-features per second of a pass of the linear LDM primal Newton solver (margins and
#: gradient, in-process, 2 threads): LDM(kernel="linear", solver="newton") on 10^6 x 50
#: Gaussian rows took 5.4 s for 54 Newton iterations and its Gram, band and check passes
#: (about 60 passes of N A); a LocalCluster of 2 workers on the same rows, 15 s.
LINEAR_RATE = 5.5e8
#: Passes of the linear LDM solver: Newton iterations over its smoothing stages and the
#: exact step (41-54 measured at 10^6 x 50, 20-60 on smaller data).
LDM_PASSES = 60
#: Row-feature-features per second of a squared-hinge SVM Newton pass (its Hessian, N A^2
#: over the active rows): 10^6 x 50 in 5.6 s for 5 passes.
SVM_RATE = 2.3e9
#: Newton iterations of the squared-hinge SVM (piecewise quadratic: 4-5 measured).
SVM_PASSES = 8
#: Row-features per second of a boosting round (the reweighting and the weighted class
#: histograms of the searched features, one round trip): SBSMF at 10^7 Parquet rows x 50
#: features on a LocalCluster of 2 workers, 0.62 s a round (large.json, n1e7-sbsmf, while
#: other processes kept 0.7 cores busy; 0.18 s at 10^6, where the round trip weighs more).
BOOST_RATE = 8.0e8
#: Seconds a boosting round costs besides its row-features (scheduling its graph and the
#: round trip to the driver; 10 blocks on 2 workers): 0.08-0.11 s at 10^6 x 50 rows,
#: 0.14-0.18 s a round against 0.06 s of histograms (the same runs).
BOOST_ROUND_S = 0.1
#: Row-features per second of what a boosting fit does once before its rounds (reading,
#: checking and binning the rows): 75 s at 10^7 x 50, 9 s at 10^6 x 50 (the same runs).
BOOST_PREPARE_RATE = 6.7e6


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


def immigrate_seconds(n_samples, n_features, max_iter, n_anchors=None):
    """Seconds a plain IMMIGRATE fit of ``max_iter`` steps takes on one core (rough)."""
    n, a = float(n_samples), float(n_features)
    pairs = n * n if n_anchors is None else 2.0 * n_anchors * n
    return max_iter * (pairs * a * a / PAIR_RATE + a**3 / EIGH_RATE)


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
    calling a formula of this module).  Known for the pairwise estimators
    (ReliefF, Relief, RReliefF, IRelief, OnlineIRelief, Immigrate, IM4E, the
    SURF family), for AdaBoostStumps, SBSMF and AdaBoostCR
    (:func:`boosting_cost`) and for the linear LDM, LDMRFE and SVMRFE with the
    distributed primal solver (``kernel="linear"``, ``solver`` "newton" or
    "auto"): passes of N A (LDM, about :data:`LDM_PASSES` per machine) or
    N A^2 (SVM, about :data:`SVM_PASSES`), per machine of a one-vs-one pair
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
    warnings.warn(
        f"{type(estimator).__name__}.fit on {n_samples:,} x {n_features:,} is estimated at "
        f"{cost} on this project's 2-core reference machine.{advice} (dmargin.fit_cost "
        "estimates a setting before fitting; warnings.filterwarnings('ignore', "
        "category=dmargin.LongFitWarning) silences this.)",
        LongFitWarning,
        stacklevel=user_stacklevel(),
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


def _pairs(estimator, n_samples):
    """``(m, pairs)``: the anchors ``n_anchors`` asks for (``None``: every row) and the
    pairs of rows a pass visits."""
    n = float(n_samples)
    m = anchor_count(getattr(estimator, "n_anchors", None), n_samples)
    return m, (n * n if m is None else m * n)


def _permutations(estimator):
    """``(B, text)``: permutation p-values repeat the pass ``B`` more times."""
    permutations = getattr(estimator, "n_permutations", 0) or 0
    again = f" x {1 + permutations} ({permutations} permutations)" if permutations else ""
    return permutations, again


def relief_cost(estimator, n_samples, n_features):
    """:func:`fit_cost` of ReliefF, Relief and RReliefF: one pass over the pairs of rows
    (and again for each permutation)."""
    a = float(n_features)
    m, pairs = _pairs(estimator, n_samples)
    permutations, again = _permutations(estimator)
    ops = pairs * a * (1 + permutations)
    formula = ("N^2 A, one pass" if m is None else f"m N A with m = {m}, one pass") + again
    return FitCost(ops, ops / RELIEFF_RATE + permutations * PASS_S, formula)


def irelief_cost(estimator, n_samples, n_features):
    """:func:`fit_cost` of I-RELIEF and IM4E: a pass over the pairs per iteration."""
    a = float(n_features)
    m, pairs = _pairs(estimator, n_samples)
    it = estimator.max_iter
    ops = pairs * a * it
    its = f"x {'at most ' if getattr(estimator, 'tol', 0) > 0 else ''}{it} iterations"
    formula = f"N^2 A {its}" if m is None else f"m N A with m = {m}, {its}"
    return FitCost(ops, ops / IRELIEF_RATE, formula)


def surf_cost(estimator, n_samples, n_features):
    """:func:`fit_cost` of the SURF family: two passes over the pairs (thresholds,
    neighbours), a third for STIR's p-values, all again for each permutation."""
    a = float(n_features)
    m, pairs = _pairs(estimator, n_samples)
    permutations, again = _permutations(estimator)
    ops = pairs * a
    formula = (
        "N^2 A, two passes (thresholds, neighbours)"
        if m is None
        else f"m N A with m = {m}, two passes"
    )
    if permutations:
        ops *= 1 + permutations
        return FitCost(ops, ops / SURF_RATE + permutations * PASS_S, formula + again)
    if getattr(estimator, "pvalues", False):
        formula = formula.replace(
            "two passes (thresholds, neighbours)",
            "three passes (thresholds, neighbours, STIR's graph)",
        )
        formula = formula.replace("two passes", "three passes (STIR)")
        return FitCost(ops, ops * STIR_SURF_FACTOR / SURF_RATE, formula)
    return FitCost(ops, ops / SURF_RATE, formula)


def murelief_cost(estimator, n_samples, n_features):
    """:func:`fit_cost` of MuRelief: two passes over the pairs (the class means, the
    neighbours farthest from them), on the general nearest-neighbour kernel; one
    (the nearest neighbours) for skrebate's ReliefF (:mod:`dmargin.skrebate`)."""
    m, pairs = _pairs(estimator, n_samples)
    passes = 2 if getattr(estimator, "_ranked", True) else 1
    ops = pairs * float(n_features) * passes / 2
    what = "two passes (class means, neighbours)" if passes == 2 else "one pass"
    formula = f"N^2 A, {what}" if m is None else f"m N A with m = {m}, {what}"
    return FitCost(ops, ops / MURELIEF_RATE, formula)


def swrf_cost(estimator, n_samples, n_features, star):
    """:func:`fit_cost` of the SWRF family: two passes over the pairs (the distance
    moments, the weighted neighbours; ``star``: near and far)."""
    m, pairs = _pairs(estimator, n_samples)
    ops = pairs * float(n_features)
    formula = (
        "N^2 A, two passes (moments, weighted neighbours)"
        if m is None
        else f"m N A with m = {m}, two passes"
    )
    return FitCost(ops, ops / (SWRF_STAR_RATE if star else SWRF_RATE), formula)


def online_cost(estimator, n_samples, n_features):
    """:func:`fit_cost` of online I-RELIEF: every row against the reference rows, per pass."""
    n, a = float(n_samples), float(n_features)
    ref = n if estimator.reference_size is None else min(n, estimator.reference_size)
    ops = n * ref * a * estimator.n_passes
    formula = f"N M A x {estimator.n_passes} passes, M = {ref:.0f}"
    return FitCost(ops, ops / ONLINE_RATE, formula)


def immigrate_cost(estimator, n_samples, n_features):
    """:func:`fit_cost` of IMMIGRATE: ``N^2 A^2`` outer-product terms a step
    (:func:`immigrate_seconds`)."""
    n, a = float(n_samples), float(n_features)
    m = anchor_count(getattr(estimator, "n_anchors", None), n_samples)
    it = estimator.max_iter
    ops = (n * n if m is None else 2.0 * m * n) * a * a * it
    formula = f"N^2 A^2 x {it} steps" if m is None else f"m N A^2 with m = {m}, x {it} steps"
    return FitCost(ops, immigrate_seconds(n_samples, n_features, it, m), formula)


def _elimination_widths(estimator, n_features):
    """The number of features each elimination round fits on, as floats."""
    from ._elimination import n_to_remove, n_to_select  # the elimination's own schedule

    target = n_to_select(estimator.n_features_to_select, n_features)
    left, widths = n_features, []
    while left > target:
        widths.append(float(left))
        left -= max(1, min(n_to_remove(estimator.step, left, n_features), left - target))
    return widths


def boosting_cost(estimator, n_samples, n_features, *, eliminates):
    """:func:`fit_cost` of AdaBoost with stumps (``eliminates=False``) and its backward
    eliminations.

    A boosting round reweights the rows and sums their weights into class
    histograms of the searched features: ``N A`` row-features at
    :data:`BOOST_RATE` and :data:`BOOST_ROUND_S` of scheduling, after one
    pass that reads and bins the rows.  SBS-MF
    and AdaBoost-CR boost ``n_estimators`` rounds on the survivors of every
    elimination round: an upper bound, since a round whose removed features
    had no stump keeps the previous committee (no pass) and one whose removed
    features had a stump resumes before the first of them; when no removed
    feature ever had a stump, one run on all features is the whole cost (the
    formula says how much that is).
    """
    n, a, rounds = float(n_samples), float(n_features), int(estimator.n_estimators)
    prepare = n * a / BOOST_PREPARE_RATE
    one_run = prepare + rounds * (n * a / BOOST_RATE + BOOST_ROUND_S)
    if not eliminates:
        return FitCost(rounds * n * a, one_run, f"N A x {rounds} boosting rounds")
    widths = _elimination_widths(estimator, n_features)
    ops = rounds * n * sum(widths)
    seconds = prepare + ops / BOOST_RATE + rounds * len(widths) * BOOST_ROUND_S
    if not widths:
        formula = "no elimination round: one pass that bins the rows"
    else:
        formula = (
            f"N A x {rounds} boosting rounds in each of {len(widths)} elimination "
            f"rounds on fewer features (at most; ~{format_seconds(one_run)} when no "
            "removed feature ever had a stump)"
        )
    return FitCost(ops, seconds, formula)


def linear_primal_cost(estimator, n_samples, n_features, *, svm=False, eliminates=False):
    """:func:`fit_cost` of the linear primal Newton solver (one machine per round):
    LDM's (``svm=False``) or the squared-hinge SVM's, once or in each elimination
    round; ``None`` unless the estimator uses that solver (``kernel="linear"``,
    ``solver`` other than "cd")."""
    if estimator.kernel != "linear" or getattr(estimator, "solver", "auto") == "cd":
        return None
    widths = _elimination_widths(estimator, n_features) if eliminates else [float(n_features)]
    n = float(n_samples)
    if svm:
        ops = sum(n * a * (a + 1) for a in widths) * SVM_PASSES
        seconds = ops / SVM_RATE
        per = f"N A^2 x about {SVM_PASSES} Newton passes"
    else:
        ops = sum(n * a for a in widths) * LDM_PASSES
        seconds = ops / LINEAR_RATE
        per = f"N A x about {LDM_PASSES} Newton passes"
    rounds = f", {len(widths)} rounds on fewer features each" if eliminates else ""
    return FitCost(ops, seconds, f"{per}, linear primal{rounds}")
