"""Decision stumps on binned features: their search, their committee, the boosting loop.

Driver-side numpy over the weighted class histograms of the binned
features (:class:`dmargin.engine.WeightedHistograms`), shared by the
estimators of :mod:`dmargin.boosting._boosting`: AdaBoost's stump of largest edge
(:func:`best_stump`, spec 8.1), BDSFS's split of largest information gain
(:func:`information_gain`, 8.3), the committee :class:`Stumps` with the
SBS-MF paper's margin decomposition (eq. 6, 7, 10), and :func:`boost`.
Binary problems only (``y`` in {-1, +1}).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._utils import timer
from ..engine import WeightedHistograms

#: A stump's edge is capped below 1 so that alpha stays finite (spec 8.1).
_EDGE_CAP = 1.0 - 1e-10
#: Edges at or below this are no better than a constant: boosting stops.
_MIN_EDGE = 1e-12


# ---------------------------------------------------------------------------
# The boosting loop (driver side)
# ---------------------------------------------------------------------------


def best_stump(hist, n_bins):
    """``(k, split, signed edge, total weight)`` of the best stump in ``hist``.

    ``hist[k, b, c]`` holds the weight of class ``c`` in bin ``b`` of the
    ``k``-th searched feature, which has ``n_bins[k]`` bins.  The edge of the
    split after bin ``b`` with polarity +1 is ``right - left`` of ``D y``;
    the stump maximising ``|edge|`` wins, ties to the lower feature, then the
    lower threshold.  ``k = -1`` when no feature can be split.
    """
    g = hist[:, :, 1] - hist[:, :, 0]
    left = np.cumsum(g, axis=1)
    edge = left[:, -1:] - 2.0 * left
    valid = np.arange(hist.shape[1])[None, :] < (np.asarray(n_bins)[:, None] - 1)
    score = np.where(valid, np.abs(edge), -1.0)
    if score.size == 0 or score.max() < 0:
        return -1, -1, 0.0, float(hist[0].sum()) if hist.size else 0.0
    k, b = np.unravel_index(np.argmax(score), score.shape)
    return int(k), int(b), float(edge[k, b]), float(hist[k].sum())


@dataclass
class Stumps:
    """A boosted committee of stumps: ``F(x) = sum_t alpha_t s_t sign(x_f - theta)``."""

    feature: np.ndarray  # global feature index of each stump
    split: np.ndarray  # bin after which the stump splits
    threshold: np.ndarray
    polarity: np.ndarray  # +1: x > theta votes for the positive class
    alpha: np.ndarray
    edge: np.ndarray  # weighted edge gamma_t (eq. 2), before the cap
    margin_sum: np.ndarray  # sum_i y_i h_t(x_i), unweighted
    perfect: bool
    #: Per stump: its row of the arrays above and its reweighting ``(f, split,
    #: polarity, alpha, Z)``, from which :func:`boost` resumes a committee.
    rounds: list = field(default_factory=list, repr=False, compare=False)

    def decision(self, X):
        F = np.zeros(X.shape[0])
        for f, th, s, a in zip(self.feature, self.threshold, self.polarity, self.alpha):
            F += a * s * np.where(X[:, f] > th, 1.0, -1.0)
        return F

    def feature_votes(self, X, n_features):
        """``sum_{t: f_t = f} alpha_t h_t(x) / sum_{t: f_t = f} |alpha_t|`` per feature (eq. 6
        without the label), 0 for unused features: shape (n_samples, n_features)."""
        H = np.zeros((X.shape[0], n_features))
        norm = np.zeros(n_features)
        for f, th, p, a in zip(self.feature, self.threshold, self.polarity, self.alpha):
            H[:, f] += a * p * np.where(X[:, f] > th, 1.0, -1.0)
            norm[f] += abs(a)
        used = norm > 0
        H[:, used] /= norm[used]
        return H

    def contribution_ratios(self, n_features):
        """Gamma_f (eq. 7): the share of ``sum_t |alpha_t|`` spent on feature f."""
        out = np.zeros(n_features)
        np.add.at(out, self.feature, self.alpha)
        total = np.abs(self.alpha).sum()
        return out / total if total > 0 else out

    def margin_fractions(self, n_features):
        """MF_f (eq. 10): feature f's share of the summed training margin."""
        out = np.zeros(n_features)
        np.add.at(out, self.feature, self.alpha * self.margin_sum)
        total = np.sum(self.alpha * self.margin_sum)
        return out / total if total != 0 else out


def boost(binned, features, n_estimators, class_weight, count_cum, resume=None):
    """Discrete AdaBoost with stumps on the columns ``features`` (spec 8.1).

    ``count_cum = (left, total)``: cumulative unweighted ``sum y`` per bin,
    used for each stump's ``sum_i y_i h(x_i)`` without another pass.  A
    perfect stump (weighted error 0) ends boosting: it would be chosen again
    every round.  ``resume = (stumps, t)``: the first ``t`` stumps of a
    committee boosted on more features, all of them on ``features``, are
    this run's first ``t`` rounds (each was the argmax over a superset of
    the columns, so it is over ``features`` too, with the same histograms):
    the weights are replayed, stump by stump, and boosting goes on from
    round ``t + 1``.
    """
    features = np.asarray(features, dtype=np.int64)
    done = [] if resume is None else list(resume[0].rounds[: resume[1]])
    reweights = [s for _, s in done]
    hist = WeightedHistograms(binned, class_weight, replay=reweights[:-1])
    n_bins = binned.n_bins[features]
    stump = reweights[-1] if reweights else None
    perfect = False
    for t in range(len(done), n_estimators):
        with timer("stump search, round %d", t + 1):
            H = hist.histogram(features, stump)
        k, split, raw, total = best_stump(H, n_bins)
        r = abs(raw) / total if total > 0 else 0.0
        if k < 0 or r <= _MIN_EDGE:
            break
        polarity = 1.0 if raw > 0 else -1.0
        f = int(features[k])
        alpha = 0.5 * np.log((1.0 + min(r, _EDGE_CAP)) / (1.0 - min(r, _EDGE_CAP)))
        w_right, w_wrong = total * (1.0 + r) / 2.0, total * (1.0 - r) / 2.0
        z = w_right * np.exp(-alpha) + w_wrong * np.exp(alpha)
        left, tot = count_cum
        stump = (f, split, polarity, alpha, z)
        done.append(
            (
                (
                    f,
                    split,
                    binned.threshold(f, split),
                    polarity,
                    alpha,
                    r,
                    polarity * (tot[f] - 2.0 * left[f, split]),
                ),
                stump,
            )
        )
        if r >= _EDGE_CAP:
            perfect = True
            break
    cols = list(zip(*[row for row, _ in done])) if done else [()] * 7
    return Stumps(
        np.asarray(cols[0], dtype=np.int64),
        np.asarray(cols[1], dtype=np.int64),
        np.asarray(cols[2], dtype=np.float64),
        np.asarray(cols[3], dtype=np.float64),
        np.asarray(cols[4], dtype=np.float64),
        np.asarray(cols[5], dtype=np.float64),
        np.asarray(cols[6], dtype=np.float64),
        perfect,
        done,
    )


def initial_class_weight(class_weight, counts_):
    """Initial ``D_1`` per class: ``1/N`` each, or ``1/(2 N_c)`` ("balanced")."""
    counts_ = np.asarray(counts_, dtype=np.float64)
    if class_weight == "balanced":
        return 1.0 / (2.0 * counts_)
    return np.full(2, 1.0 / counts_.sum())


# ---------------------------------------------------------------------------
# BDSFS's split criterion
# ---------------------------------------------------------------------------


def _xlogx(p):
    return np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)


def _entropy_mass(w0, w1):
    """``W H(w0/W, w1/W) = W log W - w0 log w0 - w1 log w1`` (nats)."""
    return _xlogx(w0 + w1) - _xlogx(w0) - _xlogx(w1)


def information_gain(hist, n_bins):
    """Weighted information gain of every split, ``-inf`` where invalid.

    ``gain[k, b] = H(all) - (W_L H(left) + W_R H(right)) / W`` with the class
    weights of ``hist`` (natural logarithms).
    """
    left0 = np.cumsum(hist[:, :, 0], axis=1)
    left1 = np.cumsum(hist[:, :, 1], axis=1)
    t0, t1 = left0[:, -1:], left1[:, -1:]
    total = t0 + t1
    gain = (
        _entropy_mass(t0, t1) - _entropy_mass(left0, left1) - _entropy_mass(t0 - left0, t1 - left1)
    ) / np.where(total > 0, total, 1.0)
    valid = np.arange(hist.shape[1])[None, :] < (np.asarray(n_bins)[:, None] - 1)
    return np.where(valid, gain, -np.inf), left0, left1
