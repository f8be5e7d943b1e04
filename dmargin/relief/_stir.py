"""STIR: p-values for ReliefF's and MultiSURF's scores (Le, Urbanowicz, Moore & McKinney 2019).

STIR reads a feature's score -- its mean difference to the misses minus its
mean difference to the hits -- as a two-sample t-statistic over the hit and
miss pairs.  The pairs are not independent: a pair is often found from both
of its rows, pairs that share a row share that row's value, and the
neighbour graph has triangles, whose three pairs always include an odd number
of hits (misses join the two classes), which skews the score to the right.
The paper's count makes p-values that are far too small (uniform rows,
random labels: 10 % under 0.05, a discovery at q = 0.05 in 35 % of the
draws); this module keeps STIR's statistic and reads it against the
distribution the neighbour graph implies.

The model: given the pairs found, a feature unrelated to the labels has
values that are exchangeable draws, so the score ``S = (1/m) sum_e w_e
phi(x_i, x_j)`` is a weighted sum over the graph's edges (``w_e = -1/k_a``
for a hit, ``+1/k_a`` for a miss, ``k_a`` the anchor's neighbours on that
side, the two findings of a pair added: ReliefF's graph in
:func:`dmargin.relief._terms.pair_graph_sums`, MultiSURF's in the third pass
of :mod:`dmargin.engine.kernels.graph`).  Hoeffding's decomposition ``phi =
mu + g(x_i) + g(x_j) + h(x_i, x_j)`` gives, with ``C_i = sum_j w_ij``::

    m^2 Var S  = sigma_g^2 sum C_i^2 + sigma_h^2 sum w_e^2
    m^3 k3(S)  = E g^3 sum C_i^3 + 6 E[g_i g_j h_ij] sum w_e C_i C_j
                 + 3 E[g_i h_ij^2] sum w_e^2 (C_i + C_j) + E h^3 sum w_e^3
                 + E[h_ij h_jl h_li] trace(W^3)

(every other term vanishes because ``h`` is degenerate), and the fourth
cumulant of the ``h`` part from the four-cycles, the shared rows and the
triangles with a side twice (:func:`kurtosis`).  The variance keeps the
data's own spread: the paper's pooled variance of the found pairs'
differences over the distinct pairs (``sigma_phi^2 sum w_e^2``), plus ``c
(sum C_i^2 - 2 sum w_e^2)`` for two pairs that share a row, with ``c`` the
covariance of the anchors' mean hit and mean miss differences
(:func:`dmargin.relief._terms.stir_anchor_sums`).  The skewness ``k3 / Var^1.5`` and the
excess kurtosis ``k4 / Var^2`` take the moments of the feature's difference
between random rows, from a sample of rows (:func:`pair_moments`); the
one-sided p-value reads ``t`` against Johnson's SU law of that skewness and
kurtosis, or where no SU law has them a Pearson type III law of the
skewness (:func:`skewed_sf`).

Why the variance is not the model's own: the neighbours of a row are close
on every feature, so the found pairs' differences are smaller and less
variable than random rows' (on uniform rows the model's variance is 8 %
too large), while the skewness and kurtosis, ratios, transfer roughly
(uniform rows, random labels: skewness 0.11 modelled, 0.09 measured at
ReliefF's k = 10 of N = 300; MultiSURF at N = 200, whose neighbourhoods
hold a third of the rows, skewness 0.57 against 0.52 and kurtosis 1.18
against 0.95: the score stays far from normal however large N is, and the
model's heavier tails make its far p-values a little conservative).  Left
out: the pull of unequal classes on ReliefF's weights, which is not a
matter of the pairs' dependence (``ReliefF`` Notes).
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
from scipy.stats import norm, pearson3
from scipy.stats import t as student_t

from ..engine import scored_differences, summary_of_rows_at
from ._terms import GraphSums

#: At most this many rows estimate a feature's difference moments.
SAMPLE_ROWS = 200
#: Quadruples of sample rows ``(i, j, l, o)``: their pairs ``(i, j)`` give the
#: pair moments, their triples ``(i, j, l)`` the triangle's and the shared
#: row's, all four the four-cycle's ``E[h_ij h_jl h_lo h_oi]``.
TUPLES = 5_000
# Caps on the moments' work for very wide data: ``S^2 A`` differences (the
# general path's ``g``) and ``T A`` quadruples.
_PAIR_BUDGET, _TUPLE_BUDGET = 3e9, 2e8


def sample_size(n_rows, n_features):
    """Rows :func:`pair_moments` takes: :data:`SAMPLE_ROWS`, fewer for very wide data."""
    return int(min(n_rows, SAMPLE_ROWS, max(100, math.sqrt(_PAIR_BUDGET / n_features))))


def evenly_spaced(n, size):
    """``size`` row positions spread evenly over ``range(n)`` (first and last included)."""
    return np.unique(np.linspace(0, n - 1, size).round().astype(np.int64))


def sample_moments(rows, anchors, kinds):
    """:func:`pair_moments` of at most :data:`SAMPLE_ROWS` rows, evenly spaced
    among the sampled anchors (already on the driver) or, when every row is
    an anchor, among the rows, where the rows are (only the ``(11, A)``
    moments come back)."""
    return _of_sample(rows, anchors, pair_moments, kinds.discrete, kinds.ramp)


def _of_sample(rows, anchors, fn, *args):
    if anchors is not None:
        X = anchors.X
        return fn(
            np.asarray(X[evenly_spaced(len(X), sample_size(len(X), X.shape[1]))], dtype=np.float64),
            *args,
        )
    index = evenly_spaced(rows.n_samples, sample_size(rows.n_samples, rows.n_features))
    return summary_of_rows_at(rows, index, fn, *args)


# ---------------------------------------------------------------------------
# Where the law has been shown calibrated
# ---------------------------------------------------------------------------
# The null battery (benchmarks/_nulls.py, bench_stir.py --battery) found the
# law calibrated on continuous features with nearly balanced classes, and not
# on heavy tails (Student t3), skewed features (exponential), few-valued ones
# (0/1/2 genotypes) or classes of 1:1.5 and beyond.  ReliefF's far tail is
# also too thin on normal features (1,400 null draws, N = 300: FDR 0.065 at
# q = 0.05, 0.13 % of p-values under 0.001), so its p-values stay on features
# lighter-tailed than the normal law.  A fit outside these bounds returns no
# p-values.  The moment sample's kurtosis of a normal feature exceeds 0 in
# almost every draw (largest over 50 features: 0.5-3.4 at N = 100-1,000);
# uniform features stay under -0.57, exponential ones have |skewness| over 2.

#: The smaller of the two classes holds at least this share of the rows.  ReliefF's
#: weights lean toward the larger class (1:1.5: 6.3 % of null p-values under 0.05);
#: MultiSURF's p-values hold their share there but not their far tail (FDR 0.085 over
#: 1,000 draws); at 1:1.22 both are calibrated.
MIN_CLASS_SHARE = {"ReliefF": 0.45, "MultiSURF": 0.45}
#: Bounds on each feature's skewness and excess kurtosis in the moment sample.
MAX_SKEWNESS = 1.0
MAX_KURTOSIS = {"ReliefF": 0.0, "MultiSURF": 4.0}
#: A feature with at most this many distinct values (skrebate's discrete threshold).
FEW_VALUES = 10


def feature_shape(X):
    """``(3, A)``: each column's skewness, excess kurtosis and number of distinct
    values, missing values left out (a column of one value: skewness and
    kurtosis 0)."""
    X = np.asarray(X, dtype=np.float64)
    out = np.zeros((3, X.shape[1]))
    for f in range(X.shape[1]):
        x = X[:, f]
        x = x[~np.isnan(x)]
        out[2, f] = np.unique(x).size
        if out[2, f] > 1:
            z = x - x.mean()
            var = np.mean(z * z)
            out[0, f] = np.mean(z**3) / var**1.5
            out[1, f] = np.mean(z**4) / var**2 - 3.0
    return out


def sample_shape(rows, anchors):
    """:func:`feature_shape` of the rows :func:`sample_moments` takes."""
    return _of_sample(rows, anchors, feature_shape)


def uncalibrated(method, counts, missing=False, shape=None, names=None, where=""):
    """Why STIR's law has not been shown calibrated on these data, or ``None``.

    ``method``: "ReliefF" or "MultiSURF"; ``counts``: rows per class;
    ``missing``: whether any value is missing; ``shape``: :func:`sample_shape`;
    ``names``: the features' names; ``where``: the rows of ``shape``
    (:func:`sample_rows_note`), so that a figure quoted can be reproduced.
    """
    counts = np.asarray(counts)
    if counts.size != 2:
        return f"{counts.size} classes (STIR compares hits and misses of two classes)"
    share, least = counts.min() / counts.sum(), MIN_CLASS_SHARE[method]
    if share < least:
        return (
            f"classes of {int(counts.min())} and {int(counts.max())} rows (the smaller "
            f"holds {share:.1%}; shown calibrated from {least:.0%})"
        )
    if missing:
        return "missing values"
    if shape is None:
        return None

    def feature(f):
        return f"feature {names[f]!r} (column {f})" if names is not None else f"column {f}"

    at = f" {where}" if where else ""
    few = np.flatnonzero((shape[2] > 1) & (shape[2] <= FEW_VALUES))
    if few.size:
        return (
            f"{few.size} feature(s) with at most {FEW_VALUES} distinct values, e.g. "
            f"{feature(few[0])} with {int(shape[2, few[0]])}{at} (genotypes, counts: "
            "shown calibrated on continuous features only)"
        )
    skew = np.flatnonzero(np.abs(shape[0]) > MAX_SKEWNESS)
    if skew.size:
        f = skew[np.abs(shape[0, skew]).argmax()]
        return (
            f"{skew.size} skewed feature(s), e.g. {feature(f)} of skewness "
            f"{shape[0, f]:.2f}{at} (scipy.stats.skew; shown calibrated up to "
            f"{MAX_SKEWNESS:g} in absolute value)"
        )
    top = MAX_KURTOSIS[method]
    tails = np.flatnonzero(shape[1] > top)
    if tails.size:
        f = tails[shape[1, tails].argmax()]
        return (
            f"{tails.size} feature(s) with tails heavier than shown calibrated, e.g. "
            f"{feature(f)} of excess kurtosis {shape[1, f]:.2f}{at} "
            f"(scipy.stats.kurtosis; shown calibrated up to "
            f"{top:g}{', lighter than the normal law' if top == 0 else ''})"
        )
    return None


def sample_rows_note(rows, anchors):
    """Which rows :func:`sample_shape` took, as a recipe a user can rerun."""
    if anchors is not None:
        n, where = len(anchors.X), "anchor_indices_"
    else:
        n, where = rows.n_samples, None
    size = sample_size(n, rows.n_features)
    if where is None:
        if size >= n:
            return f"in all {n} rows"
        return (
            f"in the {size} evenly spaced rows numpy.linspace(0, {n - 1}, {size}).round() "
            f"of the {n}"
        )
    if size >= n:
        return f"in the {n} anchors' rows (anchor_indices_)"
    return (
        f"in the {size} evenly spaced anchors' rows "
        f"anchor_indices_[numpy.linspace(0, {n - 1}, {size}).round().astype(int)]"
    )


def _tuples(n_rows, n_features):
    """Quadruples of distinct sample rows, drawn with a fixed seed (a
    quadrature of the moments, not a random part of the fit); ``(4, T)``."""
    wanted = int(min(TUPLES, max(500, _TUPLE_BUDGET // max(1, n_features))))
    drawn = np.random.default_rng(0).integers(0, n_rows, (4, 4 * wanted))
    distinct = np.ones(drawn.shape[1], dtype=bool)
    for a in range(4):
        for b in range(a + 1, 4):
            distinct &= drawn[a] != drawn[b]
    return drawn[:, distinct][:, :wanted]


class PairMoments(NamedTuple):
    """The rows of :func:`pair_moments`' ``(11, A)`` array, by name:
    ``PairMoments(*moments)``."""

    #: ``E g^2``, ``E g^3`` over the rows.
    g2: np.ndarray
    g3: np.ndarray
    #: ``E[g_i g_j h_ij]``, ``E[g_i h_ij^2]``, ``E h^2``, ``E h^3`` over the pairs.
    ggh: np.ndarray
    ghh: np.ndarray
    h2: np.ndarray
    h3: np.ndarray
    #: ``E[h_ij h_jl h_li]`` over the triples.
    tri: np.ndarray
    #: ``E h^4 - 3 (E h^2)^2``, ``E[h_ij^2 h_il^2] - (E h^2)^2``, ``E[h_ij^2 h_jl h_li]``,
    #: ``E[h_ij h_jl h_lo h_oi]``.
    k4h: np.ndarray
    c22: np.ndarray
    e211: np.ndarray
    e4: np.ndarray


def pair_moments(X, discrete, ramp):
    """Moments of each feature's scored difference between independent rows.

    ``X``: sample rows (S x A, scaled as the engine scores them).  With
    ``g(x) = E phi(x, X') - mu`` over the sample (a row never paired with
    itself; missing differences left out) and ``h = phi - g - g' - mu``,
    returns ``(11, A)``: ``E g^2, E g^3`` over the rows, ``E[g_i g_j h_ij],
    E[g_i h_ij^2], E h^2, E h^3`` over the pairs ``(i, j)``, ``E[h_ij h_jl
    h_li]`` over the triples ``(i, j, l)``, then the fourth-order ones:
    ``E h^4 - 3 (E h^2)^2`` (pairs), ``E[h_ij^2 h_il^2] - (E h^2)^2`` and
    ``E[h_ij^2 h_jl h_li]`` (triples), ``E[h_ij h_jl h_lo h_oi]`` (the
    quadruples ``(i, j, l, o)`` of :func:`_tuples`).  NaN for a feature with
    fewer than four values.
    """
    X = np.asarray(X, dtype=np.float64)
    size, n_features = X.shape
    out = np.full((11, n_features), np.nan)
    if size < 4:
        return out
    plain = not np.any(discrete) and np.all(np.isinf(ramp)) and not np.isnan(X).any()
    if plain:
        g = _mean_distances(X)
    else:
        g = np.empty_like(X)
        step = max(1, int(4e6 // (size * size)))
        for start in range(0, n_features, step):
            f = slice(start, min(n_features, start + step))
            phi = scored_differences(X[:, None, f], X[None, :, f], discrete[f], ramp[f])
            phi[np.arange(size), np.arange(size)] = np.nan
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all missing: NaN
                g[:, f] = np.nanmean(phi, axis=1)
    i, j, l, o = _tuples(size, n_features)

    def h(p, q):
        phi = np.abs(X[p] - X[q]) if plain else scored_differences(X[p], X[q], discrete, ramp)
        return phi - g[p] - g[q] - mu

    mean = np.mean if plain else np.nanmean
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all missing: NaN
        mu = mean(g, axis=0)
        g -= mu
        h_ij, h_jl, h_li = h(i, j), h(j, l), h(l, i)
        gi_h = g[i] * h_ij
        h2 = h_ij * h_ij
        e2 = mean(h2, axis=0)
        two_sides = h_jl * h_li  # the triangle's other two sides
        out[:] = [
            mean(g * g, axis=0),
            mean(g * g * g, axis=0),
            mean(gi_h * g[j], axis=0),
            mean(gi_h * h_ij, axis=0),
            e2,
            mean(h2 * h_ij, axis=0),
            mean(h_ij * two_sides, axis=0),
            mean(h2 * h2, axis=0) - 3.0 * e2 * e2,
            mean(h2 * h_li * h_li, axis=0) - e2 * e2,
            mean(h2 * two_sides, axis=0),
            mean(h_ij * h_jl * h(l, o) * h(o, i), axis=0),
        ]
    return out


def _mean_distances(X):
    """``mean_{j != i} |x_i - x_j|`` per row and column, from the sorted columns:
    the rows before ``x_i`` in its column's order add ``x_i r - (their sum)``,
    those after it ``(their sum) - x_i (S - 1 - r)`` (ties add 0 either way)."""
    size = X.shape[0]
    order = np.argsort(X, axis=0, kind="stable")
    sorted_ = np.take_along_axis(X, order, axis=0)
    before = np.cumsum(sorted_, axis=0) - sorted_  # sums of the values before each position
    rank = np.arange(size)[:, None]
    after = sorted_.sum(axis=0) - before - sorted_
    total = sorted_ * rank - before + after - sorted_ * (size - 1 - rank)
    out = np.empty_like(X)
    np.put_along_axis(out, order, total / (size - 1.0), axis=0)
    return out


#: Rows of the sample from which MultiSURF's STIR estimates its graph's sums
#: over pairs and triangles (every row up to this many).
GRAPH_ROWS = 1000
# Cap on the sample's distances for very wide data: ``R^2 A``.
_GRAPH_BUDGET = 4e9


def graph_sample(n_rows, n_features, anchor_index=None, feature_cost=1.0):
    """The rows whose pairs and triangles estimate the graph's sums, and the
    inverse of each one's chance of being drawn (``(index, v)``, sorted).

    Every row when there are at most :data:`GRAPH_ROWS` (fewer for very wide
    data: ``feature_cost`` is a feature's share of a pair's distance, 1/8 for
    compact rows, whose mismatches are counted 64 a word), else that many
    evenly spaced; with a sample of anchors, two strata: up to half the
    sample among the anchors, the rest among the other rows (each weighing
    its stratum's size over its share).
    """
    width = max(1.0, n_features * feature_cost)
    size = int(min(GRAPH_ROWS, max(100, math.sqrt(_GRAPH_BUDGET / width))))
    if anchor_index is None:
        index = evenly_spaced(n_rows, min(n_rows, size))
        return index, np.full(index.size, n_rows / index.size)
    anchors = np.asarray(anchor_index, dtype=np.int64)
    n_others = n_rows - anchors.size
    take_a = min(anchors.size, max(size // 2, size - n_others))
    take_o = min(n_others, size - take_a)
    picked_a = anchors[evenly_spaced(anchors.size, take_a)] if take_a else anchors[:0]
    # The p-th row that is not an anchor: p plus the anchors at or before it.
    positions = evenly_spaced(n_others, take_o) if take_o else np.zeros(0, np.int64)
    picked_o = positions + np.searchsorted(
        anchors - np.arange(anchors.size), positions, side="right"
    )
    index = np.concatenate([picked_a, picked_o])
    v = np.concatenate(
        [
            np.full(picked_a.size, anchors.size / max(1, picked_a.size)),
            np.full(picked_o.size, n_others / max(1, picked_o.size)),
        ]
    )
    order = np.argsort(index)
    return index[order], v[order]


def graph_from_sums(exact, sampled, found):
    """STIR's ``(pairs, graph)`` (:func:`stir`'s) from a graph pass:
    ``exact`` (:func:`dmargin.engine.thresholds.graph_row_sums`), ``sampled``
    (:func:`dmargin.engine.thresholds.sample_graph_sums`) and ``found``, the pairs
    found per side."""
    c2, c3, w2, w3, mutual_h, mutual_m, r2 = exact
    wcc, w2c, trace3, w4, side_twice, trace4 = sampled
    found_h, found_m = found
    pairs = np.array([[found_h, mutual_h], [found_m, mutual_m]])
    return pairs, np.array(GraphSums(c2, w2, c3, w3, wcc, w2c, trace3, w4, r2, side_twice, trace4))


def shared_row_variance(anchor_sums, graph, m):
    """What pairs that share a row add to the score's variance:
    ``c (sum C_i^2 - 2 sum w_e^2) / m^2``, ``c`` the covariance over the
    anchors of their mean hit and mean miss differences (0 with fewer than
    two anchors that have both)."""
    total_h, total_m, cross, both = anchor_sums
    with np.errstate(invalid="ignore", divide="ignore"):
        c = (cross - total_h * total_m / both) / (both - 1.0)
    c = np.where(both > 1, c, 0.0)
    graph = GraphSums(*graph)
    return c * (graph.c2 - 2.0 * graph.w2) / float(m) ** 2


def skewness(graph, moments):
    """The score's skewness under the model (module docstring); 0 where the
    moments are undefined."""
    g, mo = GraphSums(*graph), PairMoments(*moments)
    var = mo.g2 * g.c2 + mo.h2 * g.w2
    k3 = (
        mo.g3 * g.c3
        + 6.0 * mo.ggh * g.wcc
        + 3.0 * mo.ghh * g.w2c
        + mo.h3 * g.w3
        + mo.tri * g.trace3
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        gamma = k3 / var**1.5
    return np.where(np.isfinite(gamma) & (var > 0), gamma, 0.0)


def kurtosis(graph, moments):
    """The score's excess kurtosis under the model, from its ``h`` part.

    ``m^4 k4 = k4(h) sum w_e^4 + 3 c22 (sum r_i^2 - 2 sum w_e^4)
    + 6 E[h_ij^2 h_jl h_li] T + 3 E[h_ij h_jl h_lo h_oi] (trace(W^4) - 2 sum r_i^2
    + 2 sum w_e^4)``: one edge four times, two edges of one row twice each
    (``r_i = sum_j W_ij^2``, ``c22 = E[h_ij^2 h_il^2] - (E h^2)^2``), a triangle with a
    side twice (``T = sum_ij W_ij^2 (W^2)_ij``) and the four-cycles (the closed
    walks of length four on four distinct rows); every other joint cumulant of
    a degenerate ``h`` vanishes.  The ``g`` parts are left out (a few per cent
    of the variance in neighbour graphs).  0 where the moments are undefined.
    """
    graph, moments = GraphSums(*graph), PairMoments(*moments)
    c2, w2, w4, r2, t2, trace4 = (
        graph.c2,
        graph.w2,
        graph.w4,
        graph.r2,
        graph.side_twice,
        graph.trace4,
    )
    g2, h2, k4h, c22, e211, e4 = (
        moments.g2,
        moments.h2,
        moments.k4h,
        moments.c22,
        moments.e211,
        moments.e4,
    )
    var = g2 * c2 + h2 * w2
    k4 = (
        k4h * w4
        + 3.0 * c22 * (r2 - 2.0 * w4)
        + 6.0 * e211 * t2
        + 3.0 * e4 * (trace4 - 2.0 * r2 + 2.0 * w4)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        kurt = k4 / var**2
    return np.where(np.isfinite(kurt) & (var > 0), kurt, 0.0)


def _su_shape(omega, big_omega):
    """Skewness, excess kurtosis and variance of ``sinh(Z / delta - Omega)``,
    ``Z`` standard normal, ``omega = exp(1 / delta^2)`` (Johnson's SU law)."""
    w, om = omega, big_omega
    var = (w - 1.0) * (w * np.cosh(2.0 * om) + 1.0) / 2.0
    m3 = (
        -np.sqrt(w) * (w - 1.0) ** 2 * (w * (w + 2.0) * np.sinh(3.0 * om) + 3.0 * np.sinh(om)) / 4.0
    )
    m4 = (
        (w - 1.0) ** 2
        * (
            w * w * (w**4 + 2 * w**3 + 3 * w * w - 3.0) * np.cosh(4.0 * om)
            + 4.0 * w * w * (w + 2.0) * np.cosh(2.0 * om)
            + 3.0 * (2.0 * w + 1.0)
        )
        / 8
    )
    return m3 / var**1.5, m4 / var**2 - 3.0, var


def _su_cosh(omega, kurt):
    """``cosh(2 Omega) >= 1`` at which the SU law of ``omega`` has excess kurtosis
    ``kurt`` (its kurtosis is a ratio of quadratics in it); NaN where none."""
    w, b = omega, kurt + 3.0
    a = w * w * (w**4 + 2 * w**3 + 3 * w * w - 3.0)
    q2 = 2.0 * a - 2.0 * b * w * w
    q1 = 4.0 * w * w * (w + 2.0) - 4.0 * b * w
    q0 = 3.0 * (2.0 * w + 1.0) - a - 2.0 * b
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.sqrt(q1 * q1 - 4.0 * q2 * q0)
        c = np.maximum((-q1 + root) / (2.0 * q2), (-q1 - root) / (2.0 * q2))
    return np.where(c >= 1.0, c, np.nan)


def _decreasing_root(f, lo, hi, steps=12, polish=24):
    """Roots of the decreasing ``f`` between ``lo`` and ``hi`` (arrays): ``steps``
    bisections, then ``polish`` steps of regula falsi (the Illinois variant),
    which converge superlinearly on a smooth ``f``: 40 evaluations instead of
    the 100 bisections of full precision."""
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        above = f(mid) > 0
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    f_lo, f_hi = f(lo), f(hi)
    side = np.zeros(lo.shape)
    for _ in range(polish):
        with np.errstate(invalid="ignore", divide="ignore"):
            x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        x = np.where(
            np.isfinite(x) & (x > np.minimum(lo, hi)) & (x < np.maximum(lo, hi)), x, 0.5 * (lo + hi)
        )
        fx = f(x)
        above = fx > 0  # the root lies above x: x replaces lo
        # Illinois: halve the value kept from the same side twice running.
        f_hi = np.where(above & (side > 0), 0.5 * f_hi, f_hi)
        f_lo = np.where(~above & (side < 0), 0.5 * f_lo, f_lo)
        lo, f_lo = np.where(above, x, lo), np.where(above, fx, f_lo)
        hi, f_hi = np.where(above, hi, x), np.where(above, f_hi, fx)
        side = np.where(above, 1.0, -1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
    return np.where(
        np.isfinite(x) & (x >= np.minimum(lo, hi)) & (x <= np.maximum(lo, hi)), x, 0.5 * (lo + hi)
    )


def johnson_su(gamma, kurt):
    """Johnson's SU law of skewness ``gamma`` and excess kurtosis ``kurt``, by
    moment matching (after Tuenter 2001): ``(shape, delta, mean, sd)`` with
    ``Z = shape + delta asinh(X)`` standard normal and ``X`` of that mean and
    standard deviation; NaN where no SU law has them (kurtosis at or below
    the lognormal line: lighter tails than SU can make).

    With ``omega = exp(1 / delta^2)`` the kurtosis fixes ``cosh(2 Omega)``
    (:func:`_su_cosh`) and the skewness then decreases from the lognormal
    law's of that kurtosis to 0 as ``omega`` grows to the symmetric law's:
    three roots on ``log(omega - 1)`` (:func:`_decreasing_root`).
    """
    gamma, kurt = np.broadcast_arrays(np.asarray(gamma, float), np.asarray(kurt, float))
    target = np.abs(gamma)
    ok = np.isfinite(target) & np.isfinite(kurt) & (kurt > 0)
    kurt_ok = np.where(ok, kurt, 1.0)

    def symmetric_excess(u):  # increasing in u = log(omega - 1)
        return _su_shape(1.0 + np.exp(u), 0.0)[1] - kurt_ok

    top = _decreasing_root(
        lambda u: -symmetric_excess(u), np.full(target.shape, -30.0), np.full(target.shape, 5.0)
    )

    # The lognormal law of the same kurtosis bounds omega below (cosh(2 Omega)
    # infinite there); its skewness is the largest an SU law of that kurtosis has.
    def lognormal_excess(u):
        w = 1.0 + np.exp(u)
        return w**4 + 2 * w**3 + 3 * w * w - 6.0 - kurt_ok

    bottom = _decreasing_root(lambda u: -lognormal_excess(u), np.full(target.shape, -30.0), top)
    w_bottom = 1.0 + np.exp(bottom)
    ok &= target < (w_bottom + 2.0) * np.sqrt(w_bottom - 1.0)

    def skew_at(u):
        w = 1.0 + np.exp(u)
        c = _su_cosh(w, kurt_ok)
        return np.where(np.isnan(c), np.inf, _su_shape(w, -np.arccosh(c) / 2.0)[0])

    u = _decreasing_root(lambda u: skew_at(u) - target, bottom, top)
    w = 1.0 + np.exp(u)
    big_omega = -np.sign(gamma) * np.arccosh(_su_cosh(w, kurt_ok)) / 2.0
    delta = 1.0 / np.sqrt(np.log(w))
    _, _, var = _su_shape(w, big_omega)
    out = [big_omega * delta, delta, -np.sqrt(w) * np.sinh(big_omega), np.sqrt(var)]
    return [np.where(ok, v, np.nan) for v in out]


def skewed_sf(t, df, gamma, kurt=None):
    """One-sided p-values of ``t``: Student's ``t`` with ``df`` degrees of
    freedom read as a normal deviate ``z``, then the upper tail of ``z`` under
    a law of mean 0, variance 1, skewness ``gamma`` and excess kurtosis
    ``kurt``: Johnson's SU law (:func:`johnson_su`) where one has them, else
    the Pearson type III law of that skewness (a gamma law standardised),
    the three-moment approximation of permutation tests (Mielke's MRPP)."""
    z = norm.isf(student_t.sf(t, df))
    p = pearson3.sf(z, gamma)
    if kurt is None:
        return p
    shape, delta, mean, sd = johnson_su(gamma, kurt)
    su = np.isfinite(shape)
    with np.errstate(invalid="ignore"):
        tail = norm.sf(shape + delta * np.arcsinh(mean + z * sd))
    return np.where(su, tail, p)


def stir(sums, anchor_sums, m, pairs, graph, moments):
    """STIR's pseudo t-statistics and one-sided p-values.

    ``sums``: :func:`dmargin.relief._terms.stir_sums` merged, ``(2, 4, A)``; hit and miss
    differences are weighted by ``1 / k`` of their anchor and averaged over
    the ``m`` anchors (the ReliefF score's means), their variances pooled
    (Le et al. 2019, eqs. 5-10).  ``pairs``: per side the pairs found and
    those found from both rows (:func:`dmargin.relief._terms.stir_finish`); a pair found from
    both of its rows is two of the ``n`` pairs of a side but one draw, so the
    pooled variance and the degrees of freedom take each side's
    ``n_eff = n^2 / (n + n_mutual)``.  ``anchor_sums``, ``graph``,
    ``moments``: :func:`shared_row_variance` and :func:`skewness`.
    """
    # Pairs and anchors per feature: with missing values each feature has its own.
    first, second, n_pairs, anchors = sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3]
    mean = first / m
    # sum_a (1/k_a) sum_j (d_aj - mean)^2, expanded: each anchor's 1/k weights sum to one.
    var = np.maximum(second - 2.0 * mean * first + mean**2 * anchors, 0.0) / m
    (n_h, n_m), (var_h, var_m) = n_pairs, var
    # Each side's share of distinct draws, from the pairs found (per feature alike).
    eff_h, eff_m = (found / (found + twice) if found else 1.0 for found, twice in pairs)
    e_h, e_m = n_h * eff_h, n_m * eff_m
    df = e_h + e_m - 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = ((n_m - 1.0) * var_m + (n_h - 1.0) * var_h) / (n_h + n_m - 2.0)
        independent = pooled * (1.0 / e_m + 1.0 / e_h)
    variance = independent + shared_row_variance(anchor_sums, graph, m)
    # A correction that would leave no variance (a handful of pairs): the pairs' own.
    variance = np.where(variance > 0, variance, independent)
    ok = (df > 0) & (variance > 0)
    diff = mean[1] - mean[0]
    t = np.divide(diff, np.sqrt(np.where(ok, variance, 1.0)), out=np.zeros_like(diff), where=ok)
    p = skewed_sf(t, np.where(ok, df, 1.0), skewness(graph, moments), kurtosis(graph, moments))
    return t, np.where(ok, p, 1.0)
