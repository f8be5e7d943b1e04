"""STIR p-values on ReliefF (Le, Urbanowicz, Moore & McKinney 2019).

By construction: the engine's t-statistics, p-values and Benjamini-Hochberg
q-values equal a brute-force transcription of the paper's formulas (explicit
hit and miss pairs, each weighted 1/k of its anchor) to 1e-10, for every row as
an anchor and for a sample; STIR's ReliefF score is the weight itself; the
statistics agree across execution modes.  On GAMETES' pure 2-way epistasis the
two predictive SNPs get the smallest p-values.
"""

from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dmargin
from tests import reference as ref

GAMETES = (Path(__file__).resolve().parents[2] / "shared" / "data" / "gametes"
           / "GAMETES_Epistasis_2-Way_20atts_0.4H_EDM-1_1.tsv.gz")


def _nearest(X, candidates, i, k):
    d = np.abs(X[candidates] - X[i]).sum(axis=1)
    return candidates[np.lexsort((candidates, d))[:k]]  # ties to the lower row


def _moments_reference(sample):
    """Moments of each feature's difference between the sample's rows, by their
    definitions: ``g(x_i)`` the mean difference to the other rows minus its mean
    ``mu``, ``h_ij = |x_i - x_j| - g_i - g_j - mu``; the pair, triangle and
    four-cycle moments over the library's fixed quadruples ``(i, j, l, o)``
    (its quadrature, not part of the statistic): the pairs are their ``(i, j)``,
    the triples their ``(i, j, l)``."""
    from dmargin._stir import _tuples

    size, n_features = sample.shape
    out = np.zeros((11, n_features))
    tuples = _tuples(size, n_features).T
    for f in range(n_features):
        x = sample[:, f]
        g = np.array([np.mean([abs(x[a] - x[b]) for b in range(size) if b != a])
                      for a in range(size)])
        mu = g.mean()
        g = g - mu

        def h(a, b):
            return abs(x[a] - x[b]) - g[a] - g[b] - mu

        pairs = [(g[i], g[j], h(i, j)) for i, j, _, _ in tuples]
        e2 = np.mean([hij ** 2 for *_, hij in pairs])
        out[:, f] = [np.mean(g ** 2), np.mean(g ** 3),
                     np.mean([gi * gj * hij for gi, gj, hij in pairs]),
                     np.mean([gi * hij ** 2 for gi, _, hij in pairs]), e2,
                     np.mean([hij ** 3 for *_, hij in pairs]),
                     np.mean([h(i, j) * h(j, l) * h(l, i) for i, j, l, _ in tuples]),
                     np.mean([hij ** 4 for *_, hij in pairs]) - 3 * e2 ** 2,
                     np.mean([h(i, j) ** 2 * h(i, l) ** 2 for i, j, l, _ in tuples]) - e2 ** 2,
                     np.mean([h(i, j) ** 2 * h(j, l) * h(l, i) for i, j, l, _ in tuples]),
                     np.mean([h(i, j) * h(j, l) * h(l, o) * h(o, i) for i, j, l, o in tuples])]
    return out


def _su_or_pearson_sf(z, gamma, kurt):
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
        w = optimize.brentq(lambda w: (w + 2) * np.sqrt(w - 1) - abs(gf), 1, 50,
                            xtol=1e-15) if gf != 0 else 1.0
        if kf > 0 and kf > w ** 4 + 2 * w ** 3 + 3 * w ** 2 - 6:
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
    skewness that the neighbour graph implies (``dmargin._stir``'s model),
    every sum over the graph taken from a dense matrix of its edges.
    ``find(X, members, i)``: anchor ``i``'s neighbours among ``members``
    (default: its ``k`` nearest, ReliefF's)."""
    from dmargin._stir import evenly_spaced, sample_size

    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    anchors = range(n) if anchors is None else list(anchors)
    if find is None:
        def find(X, members, i):
            return _nearest(X, members, i, k)
    pairs = {"hit": [], "miss": []}  # (difference row, weight 1/k_a)
    found_from = {"hit": set(), "miss": set()}  # (anchor, neighbour)
    edges = np.zeros((n, n))  # the weights -1/k_a (hits) and +1/k_a (misses)
    per_anchor = []  # (mean hit difference, mean miss difference)
    for i in anchors:
        others = np.flatnonzero(np.arange(n) != i)
        means = {}
        for side, members in (("hit", others[y[others] == y[i]]),
                              ("miss", others[y[others] != y[i]])):
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
    c = np.array([np.cov(hit_means[:, f], miss_means[:, f])[0, 1]
                  for f in range(X.shape[1])])
    variance = independent + c * ((C ** 2).sum() - 2 * (w ** 2).sum()) / m ** 2
    variance = np.where(variance > 0, variance, independent)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant feature: 0 / 0
        t = (mean["miss"] - mean["hit"]) / np.sqrt(variance)
    # Skewness of the score from the moments of random rows' differences.
    rows = (np.arange(n) if anchors == list(range(n)) or len(anchors) == n
            else np.sort(anchors))
    sample = X[rows[evenly_spaced(len(rows), sample_size(len(rows), X.shape[1]))]]
    g2, g3, ggh, ghh, h2, h3, tri, k4h, c22, e211, e4 = _moments_reference(sample)
    k3 = (g3 * (C ** 3).sum() + 6 * ggh * (w * C[e_i] * C[e_j]).sum()
          + 3 * ghh * (w ** 2 * (C[e_i] + C[e_j])).sum() + h3 * (w ** 3).sum()
          + tri * np.trace(W @ W @ W))
    # Fourth cumulant of the h part, by the shapes of four edges (see dmargin._stir):
    # one edge four times, two edges of one row twice, a triangle with a side
    # twice, a four-cycle of distinct rows (counted by loops here).
    n_rows = W.shape[0]
    one_edge = (w ** 4).sum()
    two_edges = sum(W[i, j] ** 2 * W[i, l] ** 2 for i in range(n_rows) for j in range(n_rows)
                    for l in range(n_rows) if j != l) / 2
    side_twice = sum(W[i, j] ** 2 * W[j, l] * W[l, i] for i in range(n_rows)
                     for j in range(i + 1, n_rows) for l in range(n_rows)) if n_rows < 60 else \
        ((W ** 2) * (W @ W)).sum() / 2
    W2 = W @ W
    cycles = ((W2 * W2).sum() - 2 * ((W ** 2).sum(axis=1) ** 2).sum() + (W ** 4).sum()) / 8
    k4 = k4h * one_edge + 6 * c22 * two_edges + 12 * e211 * side_twice + 24 * e4 * cycles
    var_model = g2 * (C ** 2).sum() + h2 * (w ** 2).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        gamma = k3 / var_model ** 1.5
        kurt = k4 / var_model ** 2
    gamma = np.where(np.isfinite(gamma), gamma, 0.0)
    kurt = np.where(np.isfinite(kurt), kurt, 0.0)
    p = _su_or_pearson_sf(stats.norm.isf(stats.t.sf(t, eh + em - 2)), gamma, kurt)
    return mean["miss"] - mean["hit"], t, p, _benjamini_hochberg(p)


def _benjamini_hochberg(p):
    order = np.argsort(p)
    ranked = p[order] * p.size / np.arange(1, p.size + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty_like(p)
    out[order] = np.minimum(q, 1.0)
    return out


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.random((160, 7))
    y = np.repeat([0, 1], 80)
    X[:, 2] += 0.5 * y  # informative
    X[:, 5] = 0.25  # constant: t = 0, p = 1
    X[11] = X[12]  # a duplicate row
    return X, y


@pytest.mark.parametrize("k", [1, 10])
@pytest.mark.parametrize("n_anchors", [None, 40])
def test_stir_equals_the_brute_force_formulas(data, k, n_anchors):
    X, y = data
    est = dmargin.ReliefF(n_neighbors=k, n_anchors=n_anchors, random_state=3).fit(X, y)
    anchors = None if n_anchors is None else est.anchor_indices_
    scaled = ref.minmax_scale(X)
    assert_equals_reference(est, stir_reference(scaled, y, k, anchors), constant=5,
                            informative=2)


def assert_equals_reference(est, reference, constant, informative):
    """The fit's score, t-statistics, p-values and q-values against the brute-force
    STIR (to 1e-10); a constant feature gets t = 0 and p = 1."""
    w, t, p, _ = reference
    varies = np.arange(len(w)) != constant
    np.testing.assert_allclose(est.feature_importances_, w, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.t_statistics_[varies], t[varies], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(est.pvalues_[varies], p[varies], rtol=1e-10, atol=1e-12)
    assert est.t_statistics_[constant] == 0 and est.pvalues_[constant] == 1
    np.testing.assert_allclose(est.qvalues_, _benjamini_hochberg(est.pvalues_), rtol=1e-12)
    assert est.pvalues_.argmin() == informative and est.pvalues_[informative] < 1e-3


def test_pvalues_false_gives_the_same_weights_alone(data):
    X, y = data
    with_p = dmargin.ReliefF(n_anchors=60, random_state=4).fit(X, y)
    alone = dmargin.ReliefF(pvalues=False, n_anchors=60, random_state=4).fit(X, y)
    np.testing.assert_allclose(alone.feature_importances_, with_p.feature_importances_,
                               rtol=1e-13, atol=1e-15)
    assert alone.pvalues_ is None and alone.qvalues_ is None and alone.t_statistics_ is None
    permuted = dmargin.ReliefF(pvalues=False, n_permutations=9, random_state=4).fit(X, y)
    assert permuted.t_statistics_ is None and permuted.pvalues_.min() == 0.1


def test_stir_is_the_same_on_dask(data, threaded):
    X, y = data
    local = dmargin.ReliefF(n_anchors=50, random_state=1).fit(X, y)
    dask = dmargin.ReliefF(n_anchors=50, random_state=1).fit(da.from_array(X, chunks=40), y)
    for name in ("feature_importances_", "t_statistics_", "pvalues_", "qvalues_"):
        np.testing.assert_allclose(getattr(dask, name), getattr(local, name), rtol=1e-10,
                                   atol=1e-13)


def test_stir_counts_a_pair_found_from_both_rows_once_in_its_standard_error():
    # Two tight pairs of rows, one per class: each row's nearest hit is its twin,
    # so every hit pair is found from both of its rows (n = 4 slots, 2 draws).
    X = np.array([[0.0, 0.0], [0.01, 0.3], [1.0, 1.0], [1.01, 0.7]])
    y = np.array([0, 0, 1, 1])
    est = dmargin.ReliefF(n_neighbors=1).fit(X, y)
    _, t, p, _ = stir_reference(ref.minmax_scale(X), y, 1)
    np.testing.assert_allclose(est.t_statistics_, t, rtol=1e-12)
    np.testing.assert_allclose(est.pvalues_, p, rtol=1e-12)


def _null_fits(seed, draws, n_rows, n_features, k):
    """ReliefF fits of ``draws`` null sets: uniform rows, balanced labels at random."""
    rng = np.random.default_rng(seed)
    for _ in range(draws):
        X = rng.random((n_rows, n_features))
        y = rng.permutation(np.repeat([0, 1], n_rows // 2))
        yield dmargin.ReliefF(n_neighbors=k).fit(X, y)


def test_stir_pvalues_are_calibrated_on_null_data():
    # Uniform rows, balanced labels drawn at random: the p-values of 100 draws
    # x 20 features pass a Kolmogorov-Smirnov test of uniformity (p = 0.75),
    # 5.3 % of them fall under 0.05 and 5 of the draws make a discovery at
    # q = 0.05.  With the paper's test (each pair found from both of its rows
    # counted as two draws, no covariance, no skewness) 10 % fall under 0.05,
    # the KS p-value is 1e-27 and 32 % of the draws make a discovery (400
    # draws; benchmarks/bench_stir.py).
    pvalues, discoveries = [], []
    for est in _null_fits(11, 100, 200, 20, 10):
        pvalues.append(est.pvalues_)
        discoveries.append(bool((est.qvalues_ <= 0.05).any()))
    p = np.concatenate(pvalues)
    assert stats.kstest(p, "uniform").pvalue > 0.01
    assert 0.035 < (p < 0.05).mean() < 0.065
    assert np.mean(discoveries) <= 0.08


def test_stir_takes_missing_values_and_discrete_features(threaded):
    # Genotype-like 0/1/2 columns (discrete) beside continuous ones, 5 % missing:
    # finite p-values, the informative feature first, the same on dask.
    rng = np.random.default_rng(12)
    y = np.repeat([0, 1], 100)
    X = np.hstack([rng.integers(0, 3, (200, 4)).astype(float), rng.random((200, 4))])
    X[:, 5] += 0.6 * y
    X[rng.random(X.shape) < 0.05] = np.nan
    est = dmargin.ReliefF(discrete_threshold=3).fit(X, y)
    assert est.discrete_features_[:4].all() and not est.discrete_features_[4:].any()
    assert np.all((est.pvalues_ >= 0) & (est.pvalues_ <= 1))
    assert est.pvalues_.argmin() == 5 and est.pvalues_[5] < 1e-6
    on_dask = dmargin.ReliefF(discrete_threshold=3).fit(da.from_array(X, chunks=70), y)
    np.testing.assert_allclose(on_dask.pvalues_, est.pvalues_, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(on_dask.t_statistics_, est.t_statistics_, rtol=1e-10, atol=1e-13)


def test_stir_is_only_for_two_classes(data):
    X, _ = data
    est = dmargin.ReliefF().fit(X, np.repeat([0, 1, 2, 3], 40))
    assert est.pvalues_ is None and est.qvalues_ is None and est.t_statistics_ is None


def test_gametes_predictive_snps_get_the_smallest_pvalues():
    if not GAMETES.exists():
        pytest.skip("the shared GAMETES data are not beside the repository")
    frame = pd.read_csv(GAMETES, sep="\t")
    X, y = frame.drop(columns="class"), frame["class"]
    est = dmargin.ReliefF(n_neighbors=100).fit(X, y)
    best = set(X.columns[np.argsort(est.pvalues_)[:2]])
    assert best == {"P1", "P2"}
    assert np.all(est.qvalues_[X.columns.isin(["P1", "P2"])] < 0.05)


# ---------------------------------------------------------------------------
# Permutation p-values
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("segment", [7, 64, 2**16])
def test_permuted_labels_are_a_permutation_and_do_not_depend_on_the_blocks(segment,
                                                                              monkeypatch):
    from dmargin.engine import permute

    monkeypatch.setattr(permute, "SEGMENT", segment)
    codes = np.repeat([0, 1, 2], [50, 20, 30])
    counts = np.bincount(codes)
    local, (per_segment, seed) = permute.permuted_codes(codes, counts, np.random.default_rng(4))
    assert np.array_equal(np.bincount(local), counts) and not np.array_equal(local, codes)
    for chunk in (9, 33, 100):
        blocks, _ = permute.permuted_codes(da.from_array(codes, chunks=chunk), counts,
                                           np.random.default_rng(4))
        np.testing.assert_array_equal(blocks.compute(scheduler="sync"), local)
    np.testing.assert_array_equal(permute.labels_of(per_segment, seed, 13, 71), local[13:71])


def test_permuted_labels_are_uniform_over_rows():
    # Each row receives class c with probability N_c / N: over 2,000 draws the
    # counts per (row, class) pass a chi-square test against that expectation.
    from dmargin.engine import permute

    codes = np.repeat([0, 1], [3, 7])
    rng = np.random.default_rng(0)
    hits = sum(permute.permuted_codes(codes, [3, 7], rng)[0] == 0 for _ in range(2000))
    expected = 2000 * 0.3
    squares = (hits - expected) ** 2
    chi2 = (squares / expected + squares / (2000 - expected)).sum()
    assert stats.chi2.sf(chi2, df=9) > 0.001


def _permutation_reference(X, y, k, n_permutations, random_state, n_anchors=None):
    """``(1 + #{W_b >= W}) / (B + 1)`` with ``W_b`` from the brute-force ReliefF on the
    library's permuted labels and anchors."""
    from dmargin.engine import permute

    est = dmargin.ReliefF(n_neighbors=k, n_anchors=n_anchors, random_state=random_state)
    scaled = ref.minmax_scale(X)
    classes, codes = np.unique(y, return_inverse=True)
    w = ref.relieff(scaled, codes, k, anchors=None if n_anchors is None
                    else list(est.fit(X, y).anchor_indices_))
    rng = np.random.default_rng(random_state).spawn(1)[0]
    reached = np.zeros(X.shape[1])
    for _ in range(n_permutations):
        permuted, _ = permute.permuted_codes(codes, np.bincount(codes), rng)
        anchors = None
        if n_anchors is not None:
            rows = dmargin.engine.prepare_rows(scaled, permuted, len(classes))
            anchors = list(dmargin.engine.sample_anchors(
                rows, n_anchors, np.random.default_rng(random_state)).index)
        reached += ref.relieff(scaled, permuted, k, anchors=anchors) >= w
    return w, (1 + reached) / (1 + n_permutations)


@pytest.mark.parametrize("n_anchors", [None, 30])
def test_permutation_pvalues_equal_the_reference(n_anchors):
    rng = np.random.default_rng(2)
    X = rng.random((90, 5))
    y = np.repeat([0, 1, 2], 30)
    X[:, 1] += 0.3 * y
    est = dmargin.ReliefF(n_neighbors=5, n_anchors=n_anchors, n_permutations=19,
                          random_state=8).fit(X, y)
    w, p = _permutation_reference(X, y, 5, 19, 8, n_anchors)
    np.testing.assert_allclose(est.feature_importances_, w, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(est.pvalues_, p)
    assert est.pvalues_[1] == 1 / 20 and est.t_statistics_ is None  # three classes
    np.testing.assert_allclose(est.qvalues_, _benjamini_hochberg(est.pvalues_), rtol=1e-12)


def test_permutation_pvalues_are_the_same_on_dask(data, threaded):
    X, y = data
    local = dmargin.ReliefF(n_permutations=9, random_state=1).fit(X, y)
    dask = dmargin.ReliefF(n_permutations=9, random_state=1).fit(da.from_array(X, chunks=40), y)
    np.testing.assert_array_equal(dask.pvalues_, local.pvalues_)


def test_permutation_pvalues_are_calibrated_on_null_data():
    # Labels independent of the rows: the p-values of 100 draws are uniform
    # (Kolmogorov-Smirnov, up to the grid of 1 / (B + 1)) and the false
    # discovery rate at q = 0.05 -- under a complete null, the fraction of draws
    # with any discovery -- stays at or under 0.05 on average.  (STIR's p-values
    # fail both on unbalanced classes: benchmarks/bench_stir.py.)
    rng = np.random.default_rng(0)
    pvalues, discoveries = [], []
    for draw in range(100):
        X = rng.random((60, 8))
        y = rng.permutation(np.repeat([0, 1], [36, 24]))  # unbalanced: ReliefF leans
        est = dmargin.ReliefF(n_neighbors=5, n_permutations=99, random_state=draw).fit(X, y)
        pvalues.append(est.pvalues_)
        discoveries.append(bool((est.qvalues_ <= 0.05).any()))
    p = np.concatenate(pvalues)
    jitter = rng.random(p.size) / 100  # spread each grid value over its cell
    assert stats.kstest(p - jitter, "uniform").pvalue > 0.01
    assert np.mean(discoveries) <= 0.05


# ---------------------------------------------------------------------------
# The model behind the p-values (dmargin._stir)
# ---------------------------------------------------------------------------


def _random_graph(rng, n_rows, n_anchors, k):
    """Pair codes of a neighbour graph with mutual pairs and uneven k_a."""
    hit, miss = [], []
    for a in rng.choice(n_rows, n_anchors, replace=False):
        for side, count in ((hit, rng.integers(1, k + 1)), (miss, k)):
            others = rng.choice(np.delete(np.arange(n_rows), a), count, replace=False)
            side.extend((int(a) << 32) | int(j) for j in others)
    return np.array(hit, dtype=np.int64), np.array(miss, dtype=np.int64)


def _graph_reference(hit, miss, n_rows):
    edges = np.zeros((n_rows, n_rows))
    for codes, sign in ((hit, -1.0), (miss, 1.0)):
        anchors, neighbours = codes >> 32, codes & 0xFFFFFFFF
        for a, j in zip(anchors, neighbours):
            edges[a, j] += sign / np.sum(anchors == a)
    W = edges + edges.T
    C = W.sum(axis=1)
    i, j = np.nonzero(np.triu(W, 1))
    w = W[i, j]
    W2 = W @ W
    return np.array([(C ** 2).sum(), (w ** 2).sum(), (C ** 3).sum(), (w ** 3).sum(),
                     (w * C[i] * C[j]).sum(), (w ** 2 * (C[i] + C[j])).sum(),
                     np.trace(W2 @ W), (w ** 4).sum(), (((W ** 2).sum(axis=1)) ** 2).sum(),
                     ((W ** 2) * W2).sum(), np.trace(W2 @ W2)])


def test_pair_graph_sums_equal_the_dense_graph():
    from dmargin.engine import merge

    rng = np.random.default_rng(3)
    hit, miss = _random_graph(rng, 40, 30, 6)
    assert merge.mutual_pairs(hit) > 0  # some pairs found from both rows
    np.testing.assert_allclose(merge.pair_graph_sums(hit, miss),
                               _graph_reference(hit, miss, 40), rtol=1e-12, atol=1e-14)


def test_pair_graph_sums_estimate_the_trace_from_a_sample_of_rows(monkeypatch):
    from dmargin.engine import merge

    # A neighbour graph: every triangle has one or three hits, so the trace adds up.
    rng = np.random.default_rng(4)
    X, y = rng.random((3000, 5)), rng.integers(0, 2, 3000)
    D = np.abs(X[:, None] - X[None]).sum(axis=-1)
    np.fill_diagonal(D, np.inf)
    rows = np.repeat(np.arange(3000), 10)[:, None]
    hit, miss = ((rows[:, 0] << 32) | np.argsort(np.where(same, D, np.inf), axis=1)[:, :10].ravel()
                 for same in (y[:, None] == y, y[:, None] != y))
    monkeypatch.setattr(merge, "TRACE_ROWS", 3000)
    exact = merge.pair_graph_sums(hit, miss)
    monkeypatch.setattr(merge, "TRACE_ROWS", 1000)
    sampled = merge.pair_graph_sums(hit, miss)
    np.testing.assert_array_equal(sampled[[0, 1, 2, 3, 4, 5, 7, 8]],
                                  exact[[0, 1, 2, 3, 4, 5, 7, 8]])
    for term in (6, 10):  # the triangles, the closed walks of four
        assert sampled[term] != exact[term] and abs(sampled[term] / exact[term] - 1) < 0.05
    # A triangle with a side twice: a signed sum whose terms cancel (measured 19 % off),
    # weighing under 0.1 % of the fourth cumulant on uniform rows.
    assert abs(sampled[9] / exact[9] - 1) < 0.3


def test_scored_differences_equal_the_kernels_feature_diff():
    from dmargin.engine.kernels.distance import feature_diff, scored_differences

    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 3, (2, 200, 4)).astype(float)
    a[:, 1:] = rng.random((200, 3))
    a[rng.random((200, 4)) < 0.1] = np.nan
    discrete, ramp = np.array([True, False, False, True]), np.array([np.inf, np.inf, 0.3, np.inf])
    got = scored_differences(a, b, discrete, ramp)
    want = np.array([[feature_diff.py_func(a[r, f], b[r, f], discrete[f], ramp[f])
                      for f in range(4)] for r in range(200)])
    np.testing.assert_array_equal(got, want)


def test_pair_moments_of_uniform_values_are_their_closed_forms():
    # phi = |x - x'| on U(0, 1): g(x) = x^2 - x + 1/6, Var g = 1/180, Var phi = 1/18,
    # so E h^2 = 1/18 - 2/180; with u = x - 1/2, g = u^2 - 1/12 and
    # E g^3 = E u^6 - E u^4 / 4 + E u^2 / 48 - 1/1728 = 1/448 - 1/320 + 1/864.
    from dmargin._stir import pair_moments

    x = np.linspace(0, 1, 300)[:, None]
    g2, g3, _, _, h2 = pair_moments(x, np.array([False]), np.array([np.inf]))[:5, 0]
    np.testing.assert_allclose([g2, g3, h2], [1 / 180, 1 / 448 - 1 / 320 + 1 / 864, 1 / 18 - 2 / 180], rtol=0.05)


def test_the_model_gives_the_null_scores_variance_and_skewness(monkeypatch):
    # 300 null draws of 80 rows with k = 15 (a large k for N: a strongly skewed
    # score): the model's variance and skewness against the scores' own over the
    # draws (6,000 scores; their skewness is known to about +-0.03).  Measured:
    # variance 0.94 of the scores', skewness 0.78 against 0.77.  The paper's count
    # gives 0.58 of the variance, and its t-test no skewness.
    from dmargin import _stir

    gammas = []
    skewness = _stir.skewness
    monkeypatch.setattr(_stir, "skewness", lambda *a: gammas.append(skewness(*a)) or gammas[-1])
    scores, variances = [], []
    for est in _null_fits(6, 300, 80, 20, 15):
        scores.append(est.feature_importances_)
        variances.append((est.feature_importances_ / est.t_statistics_) ** 2)
    scores, variances = np.array(scores), np.array(variances)
    assert 0.9 < scores.var() / variances.mean() < 1.1
    observed, model = stats.skew(scores.ravel()), np.mean(gammas)
    assert observed > 0.5 and abs(model - observed) < 0.1


def test_pair_moments_plain_path_equals_the_general_one():
    # Continuous features without NaN take the sorted-column path for g; a ramp
    # no difference reaches forces the general one.  Ties included.
    from dmargin._stir import pair_moments

    rng = np.random.default_rng(8)
    X = np.hstack([rng.random((120, 3)), rng.integers(0, 4, (120, 2)) / 3.0])
    plain = pair_moments(X, np.zeros(5, bool), np.full(5, np.inf))
    general = pair_moments(X, np.zeros(5, bool), np.full(5, 2.0))
    np.testing.assert_allclose(plain, general, rtol=1e-12, atol=1e-15)
