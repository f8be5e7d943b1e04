"""The knockoff sampler: the constructions against plain numpy, their moments,
the same knockoffs under any chunking, and the refusals.

The reference below is the textbook formula written out with scipy's ranks
and normal law (nothing from dmargin): for the fitted ``(Sigma, S, mu, sd)``
and the noise ``G`` of the documented streams, ``Z~ = mu + sd (Zs - Zs
Sigma^-1 S + G C)`` with ``C`` the symmetric square root of ``2S - S Sigma^-1
S`` and ``Zs = (Z - mu) / sd``; the copula's ``Z`` are the normal scores of
the mid-ranks, ``(rank - 1/2) / N``.
"""

import importlib.util
import sys

import dask.array as da
import numpy as np
import pandas as pd
import pytest
from scipy.stats import ks_2samp, norm, rankdata

from dmargin.knockoffs import _sampler as _knockoffs
from dmargin.knockoffs._sampler import KnockoffSampler

TOL = 1e-10
#: The noise's documented streams: rows [4096 c, 4096 (c + 1)) from default_rng([SALT, seed, c]).
SALT, CHUNK = 0x6B6E6F63, 4096


def reference_noise(seed, n, width):
    chunks = [
        np.random.default_rng([SALT, seed, c]).standard_normal((CHUNK, width))
        for c in range(-(-n // CHUNK))
    ]
    return np.concatenate(chunks)[:n] if chunks else np.empty((0, width))


def sqrtm_psd(V):
    vals, vecs = np.linalg.eigh((V + V.T) / 2)
    return vecs @ np.diag(np.sqrt(np.maximum(vals, 0))) @ vecs.T


def reference_knockoffs(T, mu, sd, Sigma, S, G):
    """Second-order Gaussian knockoffs of ``T`` by the textbook formula."""
    Zs = (T - mu) / sd
    Sinv = np.linalg.inv(Sigma)
    C = sqrtm_psd(2 * S - S @ Sinv @ S)
    return mu + sd * (Zs - Zs @ Sinv @ S + G @ C)


def correlated(n, a, rho, rng):
    L = np.linalg.cholesky((1 - rho) * np.eye(a) + rho)
    return rng.standard_normal((n, a)) @ L.T


@pytest.fixture(scope="module")
def normal_rows():
    return correlated(1500, 5, 0.5, np.random.default_rng(11))


# ---------------------------------------------------------------------------
# Against the reference
# ---------------------------------------------------------------------------


def test_gaussian_knockoffs_match_the_reference(normal_rows):
    X = normal_rows * [1, 2, 3, 0.5, 1] + [0, 1, -2, 5, 0]
    s = KnockoffSampler(knockoffs="gaussian").fit(X)
    mu, sd = X.mean(axis=0), X.std(axis=0)
    Sigma = np.corrcoef(X.T)
    np.testing.assert_allclose(s.location_, mu, rtol=0, atol=TOL)
    np.testing.assert_allclose(s.scale_, sd, rtol=0, atol=TOL)
    np.testing.assert_allclose(s.correlation_, Sigma, rtol=0, atol=TOL)
    assert s.shrinkage_ == 0
    FF = s.augment(X, random_state=3)
    ref = reference_knockoffs(X, mu, sd, Sigma, s.smatrix_, reference_noise(3, len(X), 5))
    np.testing.assert_array_equal(FF[:, :5], X)
    np.testing.assert_allclose(FF[:, 5:], ref, rtol=0, atol=TOL)


@pytest.mark.parametrize("n", [1500, 9000])  # one noise chunk, and three
def test_copula_knockoffs_match_the_reference(n):
    rng = np.random.default_rng(12)
    Z = correlated(n, 4, 0.6, rng)
    X = np.column_stack(
        [np.exp(Z[:, 0]), norm.cdf(Z[:, 1]), Z[:, 2] ** 3, np.round(Z[:, 3], 1)]
    )  # the last: ties (about 60 values)
    s = KnockoffSampler(sample_rows=n).fit(X)
    assert s.knockoffs_ == "copula"
    U = np.column_stack([(rankdata(x) - 0.5) / n for x in X.T])
    T = norm.ppf(U)
    mu, sd, Sigma = T.mean(axis=0), T.std(axis=0), np.corrcoef(T.T)
    np.testing.assert_allclose(s.location_, mu, rtol=0, atol=TOL)
    np.testing.assert_allclose(s.scale_, sd, rtol=0, atol=TOL)
    np.testing.assert_allclose(s.correlation_, Sigma, rtol=0, atol=TOL)
    F, Fk = s.sample(X, random_state=5)
    np.testing.assert_allclose(F, U, rtol=0, atol=TOL)
    ref = norm.cdf(reference_knockoffs(T, mu, sd, Sigma, s.smatrix_, reference_noise(5, n, 4)))
    np.testing.assert_allclose(Fk, ref, rtol=0, atol=TOL)


def test_the_ecdf_between_and_beyond_the_sampled_rows():
    X = np.arange(1.0, 101.0)[:, None] ** 2  # 100 rows; the sample: every 11th
    s = KnockoffSampler(sample_rows=10, knockoffs="gaussian").fit(X)
    knots, mids, counts = _knockoffs.sketch(X[_knockoffs.evenly_spaced(100, 10)])
    assert counts[0] == 10
    np.testing.assert_allclose(mids[:10, 0], (np.arange(10) + 0.5) / 10)
    U = _knockoffs.ecdf(
        np.array([[0.0], [knots[3, 0]], [(knots[3, 0] + knots[4, 0]) / 2], [1e9]]),
        knots,
        mids,
        counts,
    )
    np.testing.assert_allclose(U[:, 0], [0.05, 0.35, 0.4, 0.95])
    assert s.knockoffs_ == "gaussian"


def test_the_noise_is_keyed_by_row_position():
    whole = _knockoffs.noise(9, 0, 10_000, 3)
    np.testing.assert_array_equal(whole, reference_noise(9, 10_000, 3))
    for start, n in [(0, 1), (4000, 200), (4095, 2), (8191, 1809), (5000, 0)]:
        np.testing.assert_array_equal(_knockoffs.noise(9, start, n, 3), whole[start : start + n])
    # Not the stream of default_rng(seed), which may have drawn the data.
    assert not np.allclose(whole[:5], np.random.default_rng(9).standard_normal((5, 3)))


# ---------------------------------------------------------------------------
# Exchangeability
# ---------------------------------------------------------------------------


def joint(Sigma, S):
    return np.block([[Sigma, Sigma - S], [Sigma - S, Sigma]])


def test_gaussian_knockoffs_have_the_joint_covariance():
    X = correlated(20_000, 5, 0.5, np.random.default_rng(13))
    s = KnockoffSampler(knockoffs="gaussian").fit(X)
    FF = s.augment(X, random_state=0)
    # Sampling error of a covariance near 1 over 20,000 rows: about 0.01.
    np.testing.assert_allclose(np.cov(FF.T), joint(s.correlation_, s.smatrix_), atol=0.05)
    assert 0.3 < np.diag(s.smatrix_).min()  # knockoffs that differ from the features


@pytest.mark.parametrize("law", ["uniform", "exponential"])
def test_copula_knockoffs_keep_the_marginals_and_the_joint_law(law):
    rng = np.random.default_rng(14)
    Z = correlated(6000, 4, 0.5, rng)
    X = norm.cdf(Z) if law == "uniform" else -np.log1p(-norm.cdf(Z))
    s = KnockoffSampler().fit(X)
    FF = s.augment(X, random_state=1)
    for j in range(4):
        assert ks_2samp(FF[:, j], FF[:, 4 + j]).pvalue > 1e-3
        assert abs(FF[:, 4 + j].min() - FF[:, j].min()) < 0.01
        assert abs(FF[:, 4 + j].max() - FF[:, j].max()) < 0.01
    scores = norm.ppf(np.clip(FF, 1e-12, 1 - 1e-12))
    C = np.corrcoef(scores.T)
    np.testing.assert_allclose(C, joint(s.correlation_, s.smatrix_), atol=0.06)
    # Swapping a feature and its knockoff leaves the second moments as they were.
    for j in range(4):
        swapped = FF.copy()
        swapped[:, [j, 4 + j]] = FF[:, [4 + j, j]]
        np.testing.assert_allclose(np.cov(swapped.T), np.cov(FF.T), atol=0.01)


@pytest.mark.parametrize("method", ["mvr", "maxent", "sdp", "equicorrelated"])
def test_the_s_matrix_makes_a_valid_joint_law(method):
    rng = np.random.default_rng(15)
    X = rng.standard_normal((400, 6)) @ rng.standard_normal((6, 6))
    s = KnockoffSampler(knockoffs="gaussian", smatrix=method).fit(X)
    assert np.linalg.eigvalsh(joint(s.correlation_, s.smatrix_)).min() >= -1e-8
    assert np.all(np.diag(s.smatrix_) > 0)
    again = KnockoffSampler(knockoffs="gaussian", smatrix=method).fit(X)
    np.testing.assert_array_equal(again.smatrix_, s.smatrix_)  # S is a function of the data


def test_a_singular_correlation_is_shrunk_towards_the_identity():
    rng = np.random.default_rng(16)
    X = rng.standard_normal((30, 40))
    X[:, 1] = X[:, 0]  # duplicated, and more features than rows
    s = KnockoffSampler(knockoffs="gaussian", smatrix="equicorrelated").fit(X)
    assert 0 < s.shrinkage_ < 1
    assert np.linalg.eigvalsh(s.correlation_).min() >= 1e-6 * (1 - 1e-6)
    np.testing.assert_allclose(np.diag(s.correlation_), 1.0)
    assert np.isfinite(s.augment(X, 0)).all()


def test_independent_knockoffs_draw_each_feature_from_its_sample():
    rng = np.random.default_rng(17)
    X = rng.binomial(2, [0.1, 0.3, 0.5, 0.4], size=(5000, 4)).astype(float)
    s = KnockoffSampler(knockoffs="independent").fit(X)
    assert s.knockoffs_ == "independent"
    F, Fk = s.sample(X, random_state=2)
    np.testing.assert_array_equal(F, X)
    for j in range(4):
        assert set(np.unique(Fk[:, j])) <= set(np.unique(X[:, j]))
        for v in (0, 1, 2):  # frequencies within sampling error (sd about 0.007)
            assert abs((Fk[:, j] == v).mean() - (X[:, j] == v).mean()) < 0.04
    assert np.abs(np.corrcoef(Fk.T) - np.eye(4)).max() < 0.06


# ---------------------------------------------------------------------------
# Constant columns
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["copula", "gaussian", "independent"])
def test_a_constant_columns_knockoff_is_itself(kind):
    rng = np.random.default_rng(18)
    X = (
        rng.standard_normal((300, 3))
        if kind != "independent"
        else rng.binomial(2, 0.3, size=(300, 3)).astype(float)
    )
    with_constant = np.insert(X, 1, 7.0, axis=1)
    s = KnockoffSampler(knockoffs=kind).fit(with_constant)
    assert s.constant_.tolist() == [False, True, False, False]
    F, Fk = s.sample(with_constant, random_state=4)
    np.testing.assert_array_equal(Fk[:, 1], F[:, 1])
    assert np.all(s.smatrix_[1] == 0) and s.correlation_[1, 1] == 1
    assert np.all(s.correlation_[1, [0, 2, 3]] == 0)
    if kind != "independent":  # the others' knockoffs: those of the fit without it
        F0, Fk0 = KnockoffSampler(knockoffs=kind).fit(X).sample(X, random_state=4)
        np.testing.assert_allclose(Fk[:, [0, 2, 3]], Fk0, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------
# The same knockoffs everywhere
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def skewed_rows():
    rng = np.random.default_rng(19)
    X = np.exp(correlated(9000, 4, 0.4, rng))
    return X


@pytest.mark.parametrize("kind", ["copula", "gaussian"])
def test_dask_input_in_any_chunks_gives_the_numpy_knockoffs(skewed_rows, threaded, kind):
    X = skewed_rows
    numpy_fit = KnockoffSampler(knockoffs=kind, sample_rows=3000).fit(X)
    expected = numpy_fit.augment(X, random_state=7)
    for chunks in [(1000, 4), (2500, 2), (4096, 4), (9000, 4)]:
        Xd = da.from_array(X, chunks=chunks)
        s = KnockoffSampler(knockoffs=kind, sample_rows=3000).fit(Xd)
        out = s.augment(Xd, random_state=7)
        assert isinstance(out, da.Array) and out.chunks[0] == Xd.chunks[0]
        np.testing.assert_allclose(np.asarray(out), expected, rtol=0, atol=1e-12)
        # The fitted sampler on other chunks: the very same knockoffs.
        np.testing.assert_array_equal(np.asarray(numpy_fit.augment(Xd, 7)), expected)


def test_a_dask_dataframe_keeps_its_column_names(threaded):
    from dmargin._dask import from_pandas

    rng = np.random.default_rng(20)
    frame = pd.DataFrame(rng.standard_normal((500, 3)), columns=["a", "b", "c"])
    s = KnockoffSampler().fit(from_pandas(frame, npartitions=3))
    assert s.feature_names_in_.tolist() == ["a", "b", "c"]
    out = s.augment(from_pandas(frame, npartitions=3), random_state=1)
    np.testing.assert_allclose(
        np.asarray(out), KnockoffSampler().fit(frame).augment(frame, 1), rtol=0, atol=1e-12
    )


def test_task_keys_come_from_the_seed_and_the_fitted_state(skewed_rows):
    Xd = da.from_array(skewed_rows, chunks=3000)
    copula = KnockoffSampler().fit(skewed_rows)
    gaussian = KnockoffSampler(knockoffs="gaussian").fit(skewed_rows)
    names = [
        copula.augment(Xd, 1).name,
        copula.augment(Xd, 2).name,
        gaussian.augment(Xd, 1).name,
        KnockoffSampler(smatrix="equicorrelated").fit(skewed_rows).augment(Xd, 1).name,
    ]
    assert len(set(names)) == 4
    assert copula.augment(Xd, 1).name == names[0]  # and the same work, the same key


def test_the_graph_carries_the_fitted_state_not_the_rows(skewed_rows):
    Xd = da.from_array(skewed_rows, chunks=3000)
    s = KnockoffSampler(knockoffs="gaussian").fit(skewed_rows)
    graph = dict(s.augment(Xd, 1).__dask_graph__())
    held = [v for v in graph.values() if isinstance(v, np.ndarray)]
    # The rows' own blocks (from_array) are the only row-sized arrays.
    assert all(v.nbytes <= skewed_rows.nbytes for v in held)
    layer = [k for k in graph if isinstance(k, tuple) and str(k[0]).startswith("knockoff")]
    assert len(layer) == 3


@pytest.mark.cluster
@pytest.mark.slow
def test_a_cluster_samples_the_knockoffs_on_its_workers(skewed_rows, client, monkeypatch):
    from distributed import get_task_stream

    from dmargin import _dask as _compat

    X = skewed_rows
    expected = KnockoffSampler(sample_rows=3000).fit(X).augment(X, random_state=7)
    Xd = da.from_array(X, chunks=2000)
    workers = set(client.scheduler_info()["workers"])
    came_back, real = [], _compat._compute_on

    def watched(client, todo, what, *args):
        values = real(client, todo, what, *args)
        came_back.extend(
            np.asarray(a).nbytes for v in values for a in (v if isinstance(v, tuple) else (v,))
        )
        return values

    monkeypatch.setattr(_compat, "_compute_on", watched)
    with get_task_stream(client) as stream:
        s = KnockoffSampler(sample_rows=3000).fit(Xd)
        # The fit brings back the sampled rows and the A x A sums, never all rows.
        assert came_back and max(came_back) <= 3000 * 4 * 8 < X.nbytes
        out = np.asarray(client.compute(s.augment(Xd, random_state=7)).result())
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)
    ran = [t for t in stream.data if "knockoff_block" in str(t["key"])]
    assert len(ran) == 5 and {t["worker"] for t in ran} <= workers
    assert any("normal_scores" in str(t["key"]) for t in stream.data)  # the fit's pass too


# ---------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------


def test_missing_values_are_refused_naming_the_column():
    frame = pd.DataFrame(
        np.random.default_rng(21).standard_normal((50, 3)), columns=["age", "dose", "bmi"]
    )
    frame.loc[[3, 9], "dose"] = np.nan
    with pytest.raises(ValueError, match=r"complete rows: column 'dose' has 2 missing"):
        KnockoffSampler().fit(frame)
    X = frame.to_numpy().copy()
    X[0, 0] = np.inf
    with pytest.raises(ValueError, match="column 0 has 1 missing or infinite"):
        KnockoffSampler(knockoffs="gaussian").fit(X)


def test_missing_values_in_dask_rows_are_refused(threaded):
    X = np.random.default_rng(22).standard_normal((60, 3))
    fitted = KnockoffSampler().fit(X)
    X[50, 2] = np.nan
    with pytest.raises(ValueError, match="column 2 has 1 missing"):
        KnockoffSampler(sample_rows=10).fit(da.from_array(X, chunks=20))
    with pytest.raises(ValueError, match="column 2 has 1 missing"):  # in the block that has it
        np.asarray(fitted.augment(da.from_array(X, chunks=20), random_state=0))


@pytest.mark.parametrize("kind", ["auto", "copula", "gaussian"])
def test_discrete_columns_are_refused_by_the_gaussian_constructions(kind):
    rng = np.random.default_rng(23)
    frame = pd.DataFrame(
        {"x": rng.standard_normal(200), "rs123": rng.binomial(2, 0.3, 200).astype(float)}
    )
    with pytest.raises(
        ValueError,
        match=r"Column 'rs123' is discrete: 3 distinct values "
        r"\(0, 1, 2\).*not valid for discrete.*"
        r"knockoffs='independent'",
    ):
        KnockoffSampler(knockoffs=kind).fit(frame)
    # A higher threshold's business: 3 values are continuous under discrete_threshold=2.
    KnockoffSampler(knockoffs=kind, discrete_threshold=2).fit(frame)


def test_independent_knockoffs_refuse_correlated_columns():
    rng = np.random.default_rng(24)
    g = rng.binomial(2, 0.4, size=(1000, 4)).astype(float)
    g[:, 3] = np.where(rng.random(1000) < 0.7, g[:, 1], g[:, 3])  # in linkage with column 1
    frame = pd.DataFrame(g, columns=["s1", "s2", "s3", "s4"])
    with pytest.raises(
        ValueError,
        match=r"columns 's2' and 's4' are correlated "
        r"\(r = 0\.[67]\d\d over N = 1000 rows",
    ):
        KnockoffSampler(knockoffs="independent").fit(frame)
    KnockoffSampler(knockoffs="independent").fit(frame[["s1", "s2", "s3"]])


def test_without_knockpy_the_error_names_the_install_line(monkeypatch, normal_rows):
    monkeypatch.setitem(sys.modules, "knockpy", None)
    monkeypatch.setitem(sys.modules, "knockpy.smatrix", None)
    with pytest.raises(ImportError, match=r'pip install "dmargin\[knockoffs\]"'):
        KnockoffSampler().fit(normal_rows)
    KnockoffSampler(knockoffs="independent").fit(  # no S matrix there
        np.random.default_rng(25).standard_normal((100, 3))
    )


@pytest.mark.parametrize(
    "params, match",
    [
        ({"knockoffs": "sdp"}, "knockoffs='sdp' is not valid"),
        ({"smatrix": "ci"}, "smatrix='ci' is not valid"),
        ({"sample_rows": 2}, "sample_rows=2 is not valid"),
        ({"sample_rows": 10.5}, "sample_rows=10.5 is not valid"),
        ({"discrete_threshold": 0}, "discrete_threshold=0 is not valid"),
    ],
)
def test_bad_parameters_are_refused(params, match, normal_rows):
    with pytest.raises(ValueError, match=match):
        KnockoffSampler(**params).fit(normal_rows)


def test_bad_data_is_refused(normal_rows):
    with pytest.raises(ValueError, match="at least 3 rows"):
        KnockoffSampler().fit(normal_rows[:2])
    with pytest.raises(ValueError, match="2-D"):
        KnockoffSampler().fit(normal_rows[:, 0])
    with pytest.raises(ValueError, match="not numeric"):
        KnockoffSampler().fit(np.array([["a", "b"], ["c", "d"], ["e", "f"]]))
    with pytest.raises(ValueError, match="not numeric"):
        KnockoffSampler().fit(pd.DataFrame({"x": [1.0, 2, 3], "s": ["a", "b", "c"]}))
    unknown = da.from_array(normal_rows, chunks=500)
    unknown = unknown[unknown[:, 0] > -10]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        KnockoffSampler().fit(unknown)
    frame = pd.DataFrame(normal_rows, columns=list("abcde"))
    with pytest.raises(ValueError, match="not the columns seen in fit"):
        KnockoffSampler().fit(frame).augment(frame[list("abced")])
    s = KnockoffSampler().fit(normal_rows)
    with pytest.raises(ValueError, match="fitted with 5 features"):
        s.augment(normal_rows[:, :4])
    with pytest.raises(ValueError, match="random_state=-1 is not valid"):
        s.augment(normal_rows, random_state=-1)


def test_random_states(normal_rows):
    s = KnockoffSampler().fit(normal_rows)
    one = s.augment(normal_rows, random_state=1)
    np.testing.assert_array_equal(one, s.augment(normal_rows, random_state=1))
    assert not np.array_equal(one, s.augment(normal_rows, random_state=2))
    assert not np.array_equal(s.augment(normal_rows), s.augment(normal_rows))
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    np.testing.assert_array_equal(s.augment(normal_rows, g1), s.augment(normal_rows, g2))


# ---------------------------------------------------------------------------
# Group knockoffs
# ---------------------------------------------------------------------------


def blocks(n, sizes, rho, rng):
    """Normal features in independent blocks of ``sizes``, correlation ``rho`` inside."""
    return np.hstack(
        [correlated(n, k, rho, rng) if k > 1 else rng.standard_normal((n, 1)) for k in sizes]
    )


def brute_force_groups(R, threshold):
    """Average linkage by hand: merge the two clusters of largest mean ``|r|`` over their
    cross pairs while it is at least ``threshold``; labels by first member."""
    clusters = [[j] for j in range(R.shape[0])]
    A = np.abs(R)
    while len(clusters) > 1:
        best, pair = -1.0, None
        for i in range(len(clusters)):
            for k in range(i + 1, len(clusters)):
                m = A[np.ix_(clusters[i], clusters[k])].mean()
                if m > best:
                    best, pair = m, (i, k)
        if best < threshold:
            break
        i, k = pair
        clusters[i] = clusters[i] + clusters.pop(k)
    labels = np.empty(R.shape[0], dtype=np.int64)
    for g, members in enumerate(sorted(clusters, key=min)):
        labels[members] = g
    return labels


@pytest.mark.parametrize("threshold", [0.2, 0.5, 0.8])
def test_auto_groups_are_average_linkage_on_one_minus_abs_r(threshold):
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    rng = np.random.default_rng(40)
    for trial in range(6):
        X = blocks(300, [3, 1, 4, 2, 1, 3], 0.3 + 0.1 * trial, rng)
        X = X @ (np.eye(14) + 0.2 * rng.standard_normal((14, 14)) * (trial % 2))
        s = KnockoffSampler(knockoffs="gaussian", groups="auto", group_threshold=threshold).fit(X)
        R = np.corrcoef(X.T)
        want = brute_force_groups(R, threshold)
        np.testing.assert_array_equal(s.groups_, want)
        assert s.n_groups_ == want.max() + 1
        # the same partition as scipy's average linkage on the same distance
        D = squareform(np.clip(1 - np.abs(R), 0, None), checks=False)
        theirs = fcluster(linkage(D, "average"), t=1 - threshold, criterion="distance")
        assert len({(a, b) for a, b in zip(want, theirs)}) == want.max() + 1 == theirs.max()


def test_auto_groups_find_correlated_blocks_on_the_copula_scale():
    rng = np.random.default_rng(41)
    X = np.exp(blocks(2000, [3, 1, 2, 1], 0.8, rng))  # skewed: copula scale
    s = KnockoffSampler(groups="auto").fit(X)
    np.testing.assert_array_equal(s.groups_, [0, 0, 0, 1, 2, 2, 3])
    np.testing.assert_array_equal(
        s.groups_, brute_force_groups(s.correlation_, 0.7)
    )  # the default threshold


@pytest.mark.parametrize("method", ["mvr", "sdp", "equicorrelated"])
def test_group_s_is_block_diagonal_and_the_joint_law_valid(method):
    rng = np.random.default_rng(42)
    X = blocks(600, [3, 2, 1, 2], 0.9, rng)
    s = KnockoffSampler(knockoffs="gaussian", smatrix=method, groups="auto").fit(X)
    np.testing.assert_array_equal(s.groups_, [0, 0, 0, 1, 1, 2, 3, 3])
    apart = s.groups_[:, None] != s.groups_[None, :]
    assert np.all(s.smatrix_[apart] == 0)
    assert np.abs(s.smatrix_[~apart & ~np.eye(8, dtype=bool)]).max() > 0.05  # blocks used
    G = joint(s.correlation_, s.smatrix_)
    assert np.linalg.eigvalsh(G).min() >= -1e-8
    # A feature nearly copied by its group's others gets a knockoff that differs from it:
    # per-feature S must stay below 2 (1 - 0.9) there.
    single = KnockoffSampler(knockoffs="gaussian", smatrix=method).fit(X)
    assert np.diag(s.smatrix_)[:3].min() > 2 * np.diag(single.smatrix_)[:3].max()


def swap(M, columns, a):
    out = M.copy()
    for j in columns:
        out[:, [j, a + j]] = M[:, [a + j, j]]
    return out


def test_a_group_swap_keeps_the_joint_second_moments():
    rng = np.random.default_rng(43)
    X = blocks(20_000, [3, 2, 1], 0.8, rng)
    s = KnockoffSampler(knockoffs="gaussian", groups="auto").fit(X)
    np.testing.assert_array_equal(s.groups_, [0, 0, 0, 1, 1, 2])
    G = joint(s.correlation_, s.smatrix_)
    P = np.eye(12)
    for group in ([0, 1, 2], [3, 4], [5]):  # the population law: exactly invariant
        Pg = swap(P, group, 6)
        np.testing.assert_allclose(Pg.T @ G @ Pg, G, rtol=0, atol=1e-12)
    one = swap(P, [0], 6)  # one feature of a group: not a symmetry of the law
    assert np.abs(one.T @ G @ one - G).max() > 0.1
    FF = s.augment(X, random_state=2)
    C = np.cov(FF.T)
    np.testing.assert_allclose(C, G, atol=0.05)
    np.testing.assert_allclose(np.cov(swap(FF, [0, 1, 2], 6).T), C, atol=0.02)
    assert np.abs(np.cov(swap(FF, [0], 6).T) - C).max() > 0.1


def test_given_groups_and_no_groups():
    rng = np.random.default_rng(44)
    X = blocks(500, [2, 2, 1], 0.9, rng)
    s = KnockoffSampler(groups=[7, 7, 3, 3, 5]).fit(X)
    np.testing.assert_array_equal(s.groups_, [0, 0, 1, 1, 2])
    assert s.n_groups_ == 3
    auto = KnockoffSampler(groups="auto").fit(X)
    np.testing.assert_array_equal(auto.smatrix_, s.smatrix_)
    np.testing.assert_array_equal(auto.augment(X, 1), s.augment(X, 1))
    # None and singleton labels: the per-feature knockoffs, unchanged
    none = KnockoffSampler().fit(X)
    single = KnockoffSampler(groups=np.arange(5)).fit(X)
    np.testing.assert_array_equal(none.groups_, np.arange(5))
    np.testing.assert_array_equal(none.smatrix_, single.smatrix_)
    np.testing.assert_array_equal(none.augment(X, 1), single.augment(X, 1))
    # a constant column stays a group of its own, outside S
    Xc = np.hstack([X, np.ones((500, 1))])
    c = KnockoffSampler(groups="auto").fit(Xc)
    np.testing.assert_array_equal(c.groups_, [0, 0, 1, 1, 2, 3])
    FF = c.augment(Xc, 1)
    np.testing.assert_array_equal(FF[:, 11], FF[:, 5])


def test_bad_groups_are_refused():
    rng = np.random.default_rng(45)
    X = rng.standard_normal((200, 4))
    with pytest.raises(ValueError, match=r"groups has shape \(3,\); one label per feature"):
        KnockoffSampler(groups=[0, 0, 1]).fit(X)
    with pytest.raises(ValueError, match="labels of one type"):
        KnockoffSampler(groups=np.array(["a", 1, "b", 2], dtype=object)).fit(X)
    with pytest.raises(ValueError, match="missing or infinite labels"):
        KnockoffSampler(groups=[0.0, 0.0, np.nan, 1.0]).fit(X)
    named = KnockoffSampler(groups=["size", "size", "shape", "colour"]).fit(X)
    np.testing.assert_array_equal(named.groups_, [0, 0, 1, 2])
    with pytest.raises(ValueError, match="groups='some' is not valid"):
        KnockoffSampler(groups="some").fit(X)
    with pytest.raises(ValueError, match="group_threshold=1.5 is not valid"):
        KnockoffSampler(groups="auto", group_threshold=1.5).fit(X)
    with pytest.raises(ValueError, match="knockoffs='independent' .* no groups"):
        KnockoffSampler(knockoffs="independent", groups=[0, 0, 1, 2]).fit(X)
    if importlib.util.find_spec("torch") is None:
        with pytest.raises(ImportError, match="smatrix='maxent' with groups needs PyTorch"):
            KnockoffSampler(smatrix="maxent", groups=[0, 0, 1, 2]).fit(X)
    ind = KnockoffSampler(knockoffs="independent", groups="auto").fit(X)
    np.testing.assert_array_equal(ind.groups_, np.arange(4))


def test_dask_groups_give_the_numpy_knockoffs(threaded):
    rng = np.random.default_rng(46)
    X = np.exp(blocks(3000, [3, 2, 1], 0.8, rng))
    local = KnockoffSampler(groups="auto", sample_rows=1000).fit(X)
    for chunks in [(700, 6), (3000, 3)]:
        lazy = KnockoffSampler(groups="auto", sample_rows=1000).fit(da.from_array(X, chunks))
        np.testing.assert_array_equal(lazy.groups_, local.groups_)
        np.testing.assert_allclose(lazy.smatrix_, local.smatrix_, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            np.asarray(lazy.augment(da.from_array(X, chunks), 5)),
            local.augment(X, 5),
            rtol=0,
            atol=1e-12,
        )
