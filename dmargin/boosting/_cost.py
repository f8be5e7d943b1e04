"""What a fit of AdaBoost with stumps and its backward eliminations costs
(:func:`dmargin.fit_cost`): passes over the rows, one a boosting round.  The rates were
measured on this project's 2-core development machine (``dmargin._cost`` says how to read
them)."""

from __future__ import annotations

from .._cost import FitCost, elimination_widths, format_seconds

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


def boosting_cost(estimator, n_samples, n_features, *, eliminates):
    """:func:`~dmargin.fit_cost` of AdaBoost with stumps (``eliminates=False``) and its
    backward eliminations.

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
    widths = elimination_widths(estimator, n_features)
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
