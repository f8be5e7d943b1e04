"""Brute-force NumPy references for STIR's p-values (Le, Urbanowicz, Moore & McKinney 2019).

The statistic over explicit hit and miss pairs, the law dmargin reads it
against (the variance, skewness and kurtosis the neighbour graph implies,
``dmargin/_stir.py``'s model) from a dense matrix of the graph's edges and
moments by their definitions over loops, and Johnson's SU law fitted by
root searches on scipy's own moments.

Nothing is imported from ``dmargin``: these functions are the oracle the
library is tested against, so they must not share its code.  The two rules
that are the library's choices rather than the paper's -- which rows estimate
the moments, and the fixed quadruples of rows that average them -- are
transcribed here from their definitions.
"""

import numpy as np
from scipy import stats

#: Rows that estimate a feature's difference moments (at most), and the fixed
#: quadruples of them that average the moments (at most).
SAMPLE_ROWS, TUPLES = 200, 5_000


def sample_size(n_rows, n_features):
    """At most :data:`SAMPLE_ROWS` rows, fewer for very wide data (3e9 differences)."""
    return int(min(n_rows, SAMPLE_ROWS, max(100, np.sqrt(3e9 / n_features))))


def evenly_spaced(n, size):
    """``size`` positions spread evenly over ``range(n)``, first and last included."""
    return np.unique(np.linspace(0, n - 1, size).round().astype(np.int64))


def quadruples(n_rows, n_features):
    """Quadruples of distinct rows drawn with seed 0 (at most 2e8 / A of them): ``(4, T)``."""
    wanted = int(min(TUPLES, max(500, 2e8 // max(1, n_features))))
    drawn = np.random.default_rng(0).integers(0, n_rows, (4, 4 * wanted))
    distinct = np.ones(drawn.shape[1], dtype=bool)
    for a in range(4):
        for b in range(a + 1, 4):
            distinct &= drawn[a] != drawn[b]
    return drawn[:, distinct][:, :wanted]


def nearest(X, candidates, i, k):
    d = np.abs(X[candidates] - X[i]).sum(axis=1)
    return candidates[np.lexsort((candidates, d))[:k]]  # ties to the lower row


def moments_reference(sample):
    """Moments of each feature's difference between the sample's rows, by their
    definitions: ``g(x_i)`` the mean difference to the other rows minus its mean
    ``mu``, ``h_ij = |x_i - x_j| - g_i - g_j - mu``; the pair, triangle and
    four-cycle moments over the library's fixed quadruples ``(i, j, l, o)``
    (its quadrature, not part of the statistic): the pairs are their ``(i, j)``,
    the triples their ``(i, j, l)``."""
    size, n_features = sample.shape
    out = np.zeros((11, n_features))
    tuples = quadruples(size, n_features).T
    for f in range(n_features):
        x = sample[:, f]
        g = np.array(
            [np.mean([abs(x[a] - x[b]) for b in range(size) if b != a]) for a in range(size)]
        )
        mu = g.mean()
        g = g - mu

        def h(a, b):
            return abs(x[a] - x[b]) - g[a] - g[b] - mu

        pairs = [(g[i], g[j], h(i, j)) for i, j, _, _ in tuples]
        e2 = np.mean([hij**2 for *_, hij in pairs])
        out[:, f] = [
            np.mean(g**2),
            np.mean(g**3),
            np.mean([gi * gj * hij for gi, gj, hij in pairs]),
            np.mean([gi * hij**2 for gi, _, hij in pairs]),
            e2,
            np.mean([hij**3 for *_, hij in pairs]),
            np.mean([h(i, j) * h(j, l) * h(l, i) for i, j, l, _ in tuples]),
            np.mean([hij**4 for *_, hij in pairs]) - 3 * e2**2,
            np.mean([h(i, j) ** 2 * h(i, l) ** 2 for i, j, l, _ in tuples]) - e2**2,
            np.mean([h(i, j) ** 2 * h(j, l) * h(l, i) for i, j, l, _ in tuples]),
            np.mean([h(i, j) * h(j, l) * h(l, o) * h(o, i) for i, j, l, o in tuples]),
        ]
    return out


def su_or_pearson_sf(z, gamma, kurt):
    """Upper tail of a standardised law of skewness ``gamma`` and excess kurtosis
    ``kurt``: Johnson's SU law fitted on scipy's own moments (nested root
    searches: the shape ``a`` for the skewness at each ``b``, then ``b`` for the
    kurtosis) where the kurtosis is above the lognormal law's of that
    skewness, else the Pearson type III law."""
    from scipy import optimize

    def moments(a, b):
        skew, excess = stats.johnsonsu.stats(a, b, moments="sk")
        return float(skew), float(excess)

    out = []
    for zf, gf, kf in zip(z, gamma, kurt):
        p = stats.pearson3.sf(zf, gf)
        sign = 1.0 if gf >= 0 else -1.0
        # The lognormal law of skewness |gamma|: its omega bounds b from above.
        w = (
            optimize.brentq(lambda w: (w + 2) * np.sqrt(w - 1) - abs(gf), 1, 50, xtol=1e-15)
            if gf != 0
            else 1.0
        )
        if kf > 0 and kf > w**4 + 2 * w**3 + 3 * w**2 - 6:

            def shape(b):  # the a of skewness gamma at b (a < 0: right skew); None: none
                if gf == 0:
                    return 0.0
                skew_of = lambda a: moments(-sign * a, b)[0] - gf  # noqa: E731
                if sign * skew_of(40 * b) < 0:  # beyond even Omega = 40: b too close to the top
                    return None
                return optimize.brentq(skew_of, 1e-300, 40 * b, xtol=1e-300, rtol=1e-15) * -sign

            def kurt_off(b):  # increasing as b falls; below kf near the lognormal law
                a = shape(b)
                return -1.0 if a is None else moments(a, b)[1] - kf

            b_top = 1 / np.sqrt(np.log(w)) if gf != 0 else 1e3
            b = optimize.brentq(kurt_off, 0.3, b_top * (1 - 1e-9), xtol=1e-15, rtol=1e-15)
            a = shape(b)
            mean, var = stats.johnsonsu.stats(a, b, moments="mv")
            p = stats.johnsonsu.sf(mean + zf * np.sqrt(var), a, b)
        out.append(p)
    return np.array(out)


def stir_reference(X, y, k, anchors=None, find=None):
    """STIR over explicit neighbour pairs (two classes): the paper's pseudo t-test,
    its standard error and degrees of freedom over the distinct pairs, plus the
    covariance of pairs that share a row, and the p-value read against the
    skewness that the neighbour graph implies (``dmargin.relief._stir``'s model),
    every sum over the graph taken from a dense matrix of its edges.
    ``find(X, members, i)``: anchor ``i``'s neighbours among ``members``
    (default: its ``k`` nearest, ReliefF's)."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    anchors = range(n) if anchors is None else list(anchors)
    if find is None:

        def find(X, members, i):
            return nearest(X, members, i, k)

    pairs = {"hit": [], "miss": []}  # (difference row, weight 1/k_a)
    found_from = {"hit": set(), "miss": set()}  # (anchor, neighbour)
    edges = np.zeros((n, n))  # the weights -1/k_a (hits) and +1/k_a (misses)
    per_anchor = []  # (mean hit difference, mean miss difference)
    for i in anchors:
        others = np.flatnonzero(np.arange(n) != i)
        means = {}
        for side, members in (
            ("hit", others[y[others] == y[i]]),
            ("miss", others[y[others] != y[i]]),
        ):
            found = find(X, members, i)
            for j in found:
                pairs[side].append((np.abs(X[i] - X[j]), 1.0 / len(found)))
                found_from[side].add((i, j))
                edges[i, j] += (1.0 if side == "miss" else -1.0) / len(found)
            means[side] = np.abs(X[i] - X[found]).mean(axis=0) if len(found) else None
        if means["hit"] is not None and means["miss"] is not None:  # (not both: no covariance)
            per_anchor.append((means["hit"], means["miss"]))
    m = len(anchors)
    mean, var, count, draws = {}, {}, {}, {}
    for side, items in pairs.items():
        diffs = np.array([d for d, _ in items])
        weights = np.array([w for _, w in items])
        mean[side] = (weights[:, None] * diffs).sum(axis=0) / m
        var[side] = (weights[:, None] * (diffs - mean[side]) ** 2).sum(axis=0) / m
        count[side] = len(items)
        # A pair found from both of its rows enters the sums twice: sum of c^2 over
        # the distinct pairs, c its count, is n + (the pairs counted twice, twice).
        twice = sum((j, i) in found_from[side] for i, j in found_from[side])
        draws[side] = count[side] ** 2 / (count[side] + twice)
    nh, nm = count["hit"], count["miss"]
    eh, em = draws["hit"], draws["miss"]
    pooled = ((nm - 1) * var["miss"] + (nh - 1) * var["hit"]) / (nh + nm - 2)
    independent = pooled * (1 / em + 1 / eh)
    # The graph: W symmetric, C its row sums, e over its distinct pairs.
    W = edges + edges.T
    C = W.sum(axis=1)
    e_i, e_j = np.nonzero(np.triu(W, 1))
    w = W[e_i, e_j]
    # Two pairs that share a row: the anchors' hit and miss means covary by c.
    hit_means, miss_means = (np.array(v) for v in zip(*per_anchor))
    c = np.array([np.cov(hit_means[:, f], miss_means[:, f])[0, 1] for f in range(X.shape[1])])
    variance = independent + c * ((C**2).sum() - 2 * (w**2).sum()) / m**2
    variance = np.where(variance > 0, variance, independent)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant feature: 0 / 0
        t = (mean["miss"] - mean["hit"]) / np.sqrt(variance)
    # Skewness of the score from the moments of random rows' differences.
    rows = np.arange(n) if anchors == list(range(n)) or len(anchors) == n else np.sort(anchors)
    sample = X[rows[evenly_spaced(len(rows), sample_size(len(rows), X.shape[1]))]]
    g2, g3, ggh, ghh, h2, h3, tri, k4h, c22, e211, e4 = moments_reference(sample)
    k3 = (
        g3 * (C**3).sum()
        + 6 * ggh * (w * C[e_i] * C[e_j]).sum()
        + 3 * ghh * (w**2 * (C[e_i] + C[e_j])).sum()
        + h3 * (w**3).sum()
        + tri * np.trace(W @ W @ W)
    )
    # Fourth cumulant of the h part, by the shapes of four edges (see dmargin.relief._stir):
    # one edge four times, two edges of one row twice, a triangle with a side
    # twice, a four-cycle of distinct rows (counted by loops here).
    n_rows = W.shape[0]
    one_edge = (w**4).sum()
    two_edges = (
        sum(
            W[i, j] ** 2 * W[i, l] ** 2
            for i in range(n_rows)
            for j in range(n_rows)
            for l in range(n_rows)
            if j != l
        )
        / 2
    )
    side_twice = (
        sum(
            W[i, j] ** 2 * W[j, l] * W[l, i]
            for i in range(n_rows)
            for j in range(i + 1, n_rows)
            for l in range(n_rows)
        )
        if n_rows < 60
        else ((W**2) * (W @ W)).sum() / 2
    )
    W2 = W @ W
    cycles = ((W2 * W2).sum() - 2 * ((W**2).sum(axis=1) ** 2).sum() + (W**4).sum()) / 8
    k4 = k4h * one_edge + 6 * c22 * two_edges + 12 * e211 * side_twice + 24 * e4 * cycles
    var_model = g2 * (C**2).sum() + h2 * (w**2).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        gamma = k3 / var_model**1.5
        kurt = k4 / var_model**2
    gamma = np.where(np.isfinite(gamma), gamma, 0.0)
    kurt = np.where(np.isfinite(kurt), kurt, 0.0)
    p = su_or_pearson_sf(stats.norm.isf(stats.t.sf(t, eh + em - 2)), gamma, kurt)
    return mean["miss"] - mean["hit"], t, p, benjamini_hochberg(p)


def benjamini_hochberg(p):
    order = np.argsort(p)
    ranked = p[order] * p.size / np.arange(1, p.size + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty_like(p)
    out[order] = np.minimum(q, 1.0)
    return out
