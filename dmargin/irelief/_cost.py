"""What a fit of I-RELIEF costs (:func:`dmargin.fit_cost`).

A pass over the pairs of rows per iteration (also IM4E's), or for online I-RELIEF every row against the reference rows
per pass.  The rates were measured on this project's 2-core development machine
(``dmargin._cost`` says how to read them)."""

from __future__ import annotations

from .._cost import FitCost, pairs_visited

#: Pair-features per second and iteration, exact I-RELIEF, 2 threads (relief_speed.json:
#: N = 8,000, A = 50, 3 iterations in 2.77 s).
IRELIEF_RATE = 3.4e9
#: Pair-features per second of online I-RELIEF, one thread (online_scale.json: 10^7 rows
#: x 50 features against 2,000 reference rows in a pass of 505 s).
ONLINE_RATE = 2.0e9


def irelief_cost(estimator, n_samples, n_features):
    """:func:`~dmargin.fit_cost` of I-RELIEF and IM4E: a pass over the pairs per iteration."""
    a = float(n_features)
    m, pairs = pairs_visited(estimator, n_samples)
    it = estimator.max_iter
    ops = pairs * a * it
    its = f"x {'at most ' if getattr(estimator, 'tol', 0) > 0 else ''}{it} iterations"
    formula = f"N^2 A {its}" if m is None else f"m N A with m = {m}, {its}"
    return FitCost(ops, ops / IRELIEF_RATE, formula)


def online_cost(estimator, n_samples, n_features):
    """:func:`~dmargin.fit_cost` of online I-RELIEF: every row against the reference rows,
    per pass."""
    n, a = float(n_samples), float(n_features)
    ref = n if estimator.reference_size is None else min(n, estimator.reference_size)
    ops = n * ref * a * estimator.n_passes
    formula = f"N M A x {estimator.n_passes} passes, M = {ref:.0f}"
    return FitCost(ops, ops / ONLINE_RATE, formula)
