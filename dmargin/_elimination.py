"""Backward elimination: the one loop under SBS-MF, AdaBoost-CR, LDM-RFE and SVM-RFE.

The phases of scikit-learn's ``RFE._fit``: every feature survives at first;
each round the estimator scores the survivors (a callable: boosting
margin fractions, ``S(j) = -alpha^T K(-j) alpha``, ...), the lowest go, and
the removed features' rank grows; the loop stops at the target.  Here live
the conversions of ``n_features_to_select`` and ``step``, the tie rules,
``ranking_`` and ``elimination_scores_``, and the progress events, so the
estimators differ only in their score.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._utils import logger, timer
from ._validation import Interval
from .progress import fit_steps

#: Constraints of ``n_features_to_select``: a count, or a fraction in (0, 1].
N_FEATURES_TO_KEEP = [
    Interval(numbers.Integral, 1, None),
    Interval(numbers.Real, 0, 1, closed="right"),
]
#: Constraints of ``step``: a count, or a fraction in (0, 1) of the initial features.
STEP = [Interval(numbers.Integral, 1, None), Interval(numbers.Real, 0, 1, closed="neither")]
#: Scores within this relative distance of the lowest are tied with it (``ties="together"``).
_TIE_RTOL = 1e-12


def n_to_select(k, n_features) -> int:
    """The number of features to keep.

    An int is a count, at most ``n_features`` (the fit's door warned when it
    asked for more); a float is a fraction of ``n_features``, at least one.
    """
    if isinstance(k, numbers.Integral):
        return min(int(k), n_features)
    return max(1, int(k * n_features))


def n_to_remove(step, n_left, n_features) -> int:
    """The number of features a round removes before the target caps it.

    ``step``: an int; a float, that fraction of the initial ``n_features``
    (at least one); ``"halving"``, the SBS-MF paper's schedule for
    microarrays: half of the ``n_left`` survivors while more than 100 remain
    (never going below 100), then one at a time; or a callable of
    ``n_left`` (TuRF's fraction of the survivors).
    """
    if callable(step):
        return int(step(n_left))
    if step == "halving":
        return min(n_left // 2, n_left - 100) if n_left > 100 else 1
    if isinstance(step, numbers.Integral):
        return int(step)
    return max(1, int(step * n_features))


def elimination_rounds(n_features, target, step) -> int:
    """Rounds from ``n_features`` down to ``target`` removing :func:`n_to_remove` each.

    Exact for ``ties="lower_index"``; an upper bound when ties remove more.
    """
    rounds, left = 0, n_features
    while left > target:
        left -= max(1, min(n_to_remove(step, left, n_features), left - target))
        rounds += 1
    return rounds


def _lowest(scores, n_remove, ties):
    """Positions (into ``scores``) a round removes, in increasing order for ``"together"``.

    ``"lower_index"``: the ``n_remove`` lowest, ties to the lower index (a
    stable sort, as ``RFE``).  ``"together"``: also every score tied with the
    lowest (Ou et al. 2017, Algorithm 1: ``d <- set(arg min S)``).
    """
    order = np.argsort(scores, kind="stable")
    if ties == "lower_index":
        return order[:n_remove]
    low = scores[order[0]]
    tied = np.flatnonzero(np.abs(scores - low) <= _TIE_RTOL * max(abs(low), 1e-300))
    chosen = set(order[:n_remove].tolist()) | set(tied.tolist())
    return np.array(sorted(chosen), dtype=np.int64)


@dataclass
class Elimination:
    """What a backward elimination found; the estimators copy it to their attributes."""

    support: np.ndarray  # bool mask of the kept features
    ranking: np.ndarray  # 1 for kept features; larger was removed earlier
    scores: np.ndarray  # each feature's score in the round that removed it (kept: the last)
    history: list  # per round: (surviving feature indices, their scores)

    @property
    def n_iter(self) -> int:
        return len(self.history)


def eliminate(
    estimator,
    score: Callable[[np.ndarray], np.ndarray],
    n_features: int,
    *,
    n_features_to_select,
    step,
    ties: str = "lower_index",
) -> Elimination:
    """Backward elimination of ``n_features`` features by ``score``.

    Parameters
    ----------
    estimator : estimator
        The estimator being fitted (named in progress events and logs).
    score : callable
        ``score(features)`` -> the criterion of each surviving feature
        (``features``: their indices, increasing); the lowest are removed.
    n_features : int
    n_features_to_select : int or float
        See :func:`n_to_select`.
    step : int, float or "halving"
        See :func:`n_to_remove`.
    ties : {"lower_index", "together"}, default="lower_index"
        ``"lower_index"``: a round removes exactly its count, ties going to
        the lower feature index.  ``"together"``: every feature tied (to
        1e-12 relative) with the lowest score goes as well, unless that would
        leave fewer than the target; then the round removes exactly its
        count, the lowest scores first, ties to the lower index.

    Returns
    -------
    Elimination
    """
    # Initialization
    target = n_to_select(n_features_to_select, n_features)
    support = np.ones(n_features, dtype=bool)
    ranking = np.ones(n_features, dtype=np.int64)
    scores = np.full(n_features, np.nan)
    history = []
    name = type(estimator).__name__

    # Elimination
    with fit_steps(estimator, "round", elimination_rounds(n_features, target, step)) as steps:
        while support.sum() > target:
            features = np.flatnonzero(support)
            with timer("%s: round with %d features", name, features.size):
                crit = score(features)
            n_remove = min(n_to_remove(step, features.size, n_features), features.size - target)
            drop = _lowest(crit, n_remove, ties)
            if features.size - drop.size < target:  # ties would undershoot: keep lower indices
                drop = drop[np.argsort(crit[drop], kind="stable")][:n_remove]
            history.append((features, crit))
            # Overwritten while a feature survives: its last value is from the round
            # that removed it, or, for a kept feature, from the last round.
            scores[features] = crit
            support[features[drop]] = False
            ranking[~support] += 1
            logger.debug("%s: removed %s", name, features[drop].tolist())
            steps.step()

    return Elimination(support, ranking, scores, history)
