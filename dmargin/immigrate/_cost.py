"""What a fit of IMMIGRATE costs (:func:`dmargin.fit_cost`): ``N^2 A^2`` outer-product
terms a step and an ``A x A`` eigendecomposition.  The rates were measured on this
project's 2-core development machine (``dmargin._cost`` says how to read them)."""

from __future__ import annotations

from .._cost import FitCost, anchor_count

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


def immigrate_seconds(n_samples, n_features, max_iter, n_anchors=None):
    """Seconds a plain IMMIGRATE fit of ``max_iter`` steps takes on one core (rough)."""
    n, a = float(n_samples), float(n_features)
    pairs = n * n if n_anchors is None else 2.0 * n_anchors * n
    return max_iter * (pairs * a * a / PAIR_RATE + a**3 / EIGH_RATE)


def immigrate_cost(estimator, n_samples, n_features):
    """:func:`~dmargin.fit_cost` of IMMIGRATE: ``N^2 A^2`` outer-product terms a step
    (:func:`immigrate_seconds`)."""
    n, a = float(n_samples), float(n_features)
    m = anchor_count(getattr(estimator, "n_anchors", None), n_samples)
    it = estimator.max_iter
    ops = (n * n if m is None else 2.0 * m * n) * a * a * it
    formula = f"N^2 A^2 x {it} steps" if m is None else f"m N A^2 with m = {m}, x {it} steps"
    return FitCost(ops, immigrate_seconds(n_samples, n_features, it, m), formula)
