"""What a fit of the SURF and SWRF families costs (:func:`dmargin.fit_cost`): two passes
over the pairs of rows (thresholds, neighbours), a third for STIR's p-values.  The rates
were measured on this project's 2-core development machine (``dmargin._cost`` says how to
read them)."""

from __future__ import annotations

from .._cost import PASS_S, FitCost, pairs_visited, permutation_passes

#: Pair-features per second of the SURF family (both passes counted once: N^2 A), 2 threads:
#: MultiSURF at N = 8,000, A = 50 in 0.66 s of wall time (tests/test_surf.py's kernels;
#: one thread: 0.62-0.67 s of CPU, about 2.2x fast-select's).
SURF_RATE = 4.8e9
#: Pair-features per second of the SWRF family (N^2 A, as SURF_RATE), 2 threads, N = 8,000,
#: A = 50: MultiSWRF 0.93 s and MultiSWRFDB about as fast (near sets only); the starred
#: variants score nearly every pair twice, SWRF* 1.55 s (SWRF_STAR_RATE).
SWRF_RATE = 3.4e9
SWRF_STAR_RATE = 2.0e9
#: MultiSURF(pvalues=True) against MultiSURF: the squared differences in the second pass
#: and a third pass over the same pairs (STIR's graph), measured 1.9-2.2x at N = 8,000,
#: A = 50, one thread.
STIR_SURF_FACTOR = 2.0


def surf_cost(estimator, n_samples, n_features):
    """:func:`~dmargin.fit_cost` of the SURF family: two passes over the pairs (thresholds,
    neighbours), a third for STIR's p-values, all again for each permutation."""
    a = float(n_features)
    m, pairs = pairs_visited(estimator, n_samples)
    permutations, again = permutation_passes(estimator)
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


def swrf_cost(estimator, n_samples, n_features, star):
    """:func:`~dmargin.fit_cost` of the SWRF family: two passes over the pairs (the
    distance moments, the weighted neighbours; ``star``: near and far)."""
    m, pairs = pairs_visited(estimator, n_samples)
    ops = pairs * float(n_features)
    formula = (
        "N^2 A, two passes (moments, weighted neighbours)"
        if m is None
        else f"m N A with m = {m}, two passes"
    )
    return FitCost(ops, ops / (SWRF_STAR_RATE if star else SWRF_RATE), formula)
