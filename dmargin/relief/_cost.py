"""What a fit of the Relief family's estimators costs (:func:`dmargin.fit_cost`).

ReliefF, Relief and RReliefF: one pass over the pairs of rows; MuRelief, two on the general
nearest-neighbour kernel.  The rates were measured on this project's 2-core development
machine (``dmargin._cost`` says how to read them)."""

from __future__ import annotations

from .._cost import PASS_S, FitCost, pairs_visited, permutation_passes

#: Pair-features per second, exact ReliefF, 2 threads (relief_speed.json: N = 8,000,
#: A = 50, 0.373 s steady).
RELIEFF_RATE = 8.5e9
#: Pair-features per second of MuRelief (N^2 A for its two passes), 2 threads, N = 8,000,
#: A = 50, n_neighbors = 100: the general nearest-neighbour kernel, a pair at a time.
MURELIEF_RATE = 6.3e8


def relief_cost(estimator, n_samples, n_features):
    """:func:`~dmargin.fit_cost` of ReliefF, Relief and RReliefF: one pass over the pairs
    of rows (and again for each permutation)."""
    a = float(n_features)
    m, pairs = pairs_visited(estimator, n_samples)
    permutations, again = permutation_passes(estimator)
    ops = pairs * a * (1 + permutations)
    formula = ("N^2 A, one pass" if m is None else f"m N A with m = {m}, one pass") + again
    if getattr(estimator, "device", "cpu") != "cpu":
        formula += "; the time at the CPU's rate (no GPU rate is measured)"
    return FitCost(ops, ops / RELIEFF_RATE + permutations * PASS_S, formula)


def murelief_cost(estimator, n_samples, n_features, *, ranked=True):
    """:func:`~dmargin.fit_cost` of MuRelief: two passes over the pairs (the class means,
    the neighbours farthest from them), on the general nearest-neighbour kernel; one
    (the nearest neighbours, ``ranked=False``) for skrebate's ReliefF
    (:mod:`dmargin.skrebate`)."""
    m, pairs = pairs_visited(estimator, n_samples)
    passes = 2 if ranked else 1
    ops = pairs * float(n_features) * passes / 2
    what = "two passes (class means, neighbours)" if passes == 2 else "one pass"
    formula = f"N^2 A, {what}" if m is None else f"m N A with m = {m}, {what}"
    return FitCost(ops, ops / MURELIEF_RATE, formula)
