"""Sampled anchors (``n_anchors``): m anchors, stratified by class, against all N rows.

By construction: the sampled fit equals the brute-force reference restricted to
the same anchors (1e-10); ``n_anchors`` covering every row is the exact fit, bit
for bit; the sample is the same whether the rows are numpy or dask blocks of any
size; in-process = threaded dask = a 2-process cluster.
"""

import dask
import dask.array as da
import numpy as np
import pytest

import dmargin
from dmargin.engine import execution, neighbours, quadratic, sample_anchors, sampling
from dmargin.engine.kernels import terms
from tests import reference as ref


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = rng.random((240, 6))
    X[:, 0] += np.repeat([0.0, 0.6, 1.2], 80)  # informative
    y = np.repeat(np.array(["a", "b", "c"]), 80)
    y[:3] = "d"  # a three-sample class
    X[7] = X[8]  # a duplicate row
    return X, y


def _codes(y):
    return np.unique(y, return_inverse=True)[1]


@pytest.mark.parametrize(
    "totals,m",
    [
        ([80, 80, 77, 3], 50),
        ([5, 1, 1], 3),
        ([5, 1, 1], 2),
        ([10, 0, 4], 7),
        ([3, 3], 6),
        ([1000, 1], 10),
    ],
)
def test_share_sums_to_m_and_follows_the_classes(totals, m):
    share = sampling._stratified_share(np.array(totals), m)  # the rule itself
    totals = np.array(totals)
    assert share.sum() == min(m, totals.sum()) and np.all(share <= totals)
    present = totals > 0
    if m >= present.sum():
        assert np.all(share[present] >= 1)
    assert np.all(np.abs(share - totals / totals.sum() * m) < 1 + present.sum())


@pytest.mark.parametrize("chunk", [17, 64, 240])
def test_the_sample_does_not_depend_on_the_blocks(data, chunk, threaded):
    X, y = data
    codes = _codes(y)
    local = sample_anchors(execution.prepare_rows(X, codes, 4), 60, np.random.default_rng(3))
    rows = execution.prepare_rows(
        da.from_array(X, chunks=(chunk, 6)), da.from_array(codes, chunks=chunk), 4
    )
    blocks = sample_anchors(rows, 60, np.random.default_rng(3))
    np.testing.assert_array_equal(blocks.index, local.index)
    np.testing.assert_array_equal(blocks.X, X[local.index])
    np.testing.assert_array_equal(blocks.codes, codes[local.index])
    assert np.all(np.diff(local.index) > 0)  # sorted, no repeats
    assert np.bincount(local.codes).tolist() == [19, 20, 20, 1]  # of 77, 80, 80, 3
    other = sample_anchors(execution.prepare_rows(X, codes, 4), 60, np.random.default_rng(4))
    assert not np.array_equal(other.index, local.index)


def test_the_scaling_pass_counts_the_classes_per_block(data, monkeypatch, threaded):
    """Dask rows: the per-block class counts come from the scaling pass, so the
    sample needs no counting pass; the same anchors, the same fit."""
    X, y = data
    Xd, yd = da.from_array(X, chunks=(50, 6)), da.from_array(y, chunks=50)
    fit = dmargin.ReliefF(n_anchors=30, random_state=0).fit(X, y)
    calls = []
    counting = sampling._class_counts
    monkeypatch.setattr(sampling, "_class_counts", lambda *a: calls.append(1) or counting(*a))
    rows = dmargin._start.start_fit(dmargin.ReliefF(n_anchors=30), Xd, yd).rows
    codes = _codes(y)
    expected = np.stack([np.bincount(codes[s : s + 50], minlength=4) for s in range(0, 240, 50)])
    np.testing.assert_array_equal(rows.block_counts, expected)
    on_dask = dmargin.ReliefF(n_anchors=30, random_state=0).fit(Xd, yd)
    assert calls == []
    np.testing.assert_array_equal(on_dask.feature_importances_, fit.feature_importances_)
    # Blocks cut again for the engine: the counts no longer apply, and are counted.
    rows = execution.prepare_rows(
        Xd, da.from_array(codes, chunks=50), 4, max_rows=20, block_counts=expected
    )
    assert rows.block_counts is None
    sample_anchors(rows, 30, np.random.default_rng(0))
    assert calls


def test_the_engine_with_a_sample_equals_all_rows_over_that_sample(data):
    """The sampled statistic is the exact statistic's anchor terms over the sample."""
    X, y = data
    codes = _codes(y)
    rows = execution.prepare_rows(X, codes, 4)
    w = np.random.default_rng(0).random(6)
    args = (True, np.full((4, 4), 1 / 3) - np.eye(4) / 3, True)
    anchors = sample_anchors(rows, 40, np.random.default_rng(1))
    weight = np.zeros(len(y))
    weight[anchors.index] = 1 / 40
    want = neighbours.lse_statistic(rows, w, 0.7, terms.irelief_agg, args, anchor_weight=weight)
    got = neighbours.lse_statistic(rows, w, 0.7, terms.irelief_agg, args, anchors=anchors)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    "make,reference",
    [
        (
            lambda m: dmargin.ReliefF(n_neighbors=4, n_anchors=m, random_state=5),
            lambda X, y, a: ref.relieff(X, y, n_neighbors=4, anchors=a),
        ),
        (
            lambda m: dmargin.IRelief(max_iter=3, tol=0, n_anchors=m, random_state=5),
            lambda X, y, a: ref.irelief(X, y, max_iter=3, tol=0, anchors=a)["w"],
        ),
        (
            lambda m: dmargin.IRelief(
                max_iter=3, tol=0, multiclass="relieff", n_anchors=m, random_state=5
            ),
            lambda X, y, a: ref.irelief(X, y, max_iter=3, tol=0, multiclass="relieff", anchors=a)[
                "w"
            ],
        ),
    ],
    ids=["ReliefF", "IRelief", "IRelief-1"],
)
@pytest.mark.parametrize("m", [1, 9, 0.25])
def test_sampled_fit_equals_the_reference_over_its_anchors(data, make, reference, m):
    X, y = data
    est = make(m).fit(X, y)
    expected_m = m if isinstance(m, int) else round(m * len(y))
    assert est.anchor_indices_.shape == (expected_m,)
    want = reference(ref.minmax_scale(X), y, list(est.anchor_indices_))
    np.testing.assert_allclose(est.feature_importances_, want, rtol=0, atol=1e-10)


@pytest.mark.parametrize(
    "make",
    [lambda m: dmargin.ReliefF(n_anchors=m), lambda m: dmargin.IRelief(max_iter=4, n_anchors=m)],
)
@pytest.mark.parametrize("m", [240, 10_000, 1.0])
def test_every_row_as_anchor_is_the_exact_fit_bit_for_bit(data, make, m):
    X, y = data
    est = make(m).fit(X, y)
    assert est.anchor_indices_ is None
    np.testing.assert_array_equal(
        est.feature_importances_, make(None).fit(X, y).feature_importances_
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: dmargin.ReliefF(n_anchors=50, random_state=1),
        lambda: dmargin.IRelief(max_iter=3, tol=0, n_anchors=0.2, random_state=1),
    ],
)
def test_sampled_fits_agree_across_execution_modes(data, make, local_cluster):
    from distributed import Client, get_task_stream

    X, y = data
    local = make().fit(X, y)
    Xd, yd = da.from_array(X, chunks=(50, 6)), da.from_array(y, chunks=50)
    import dask

    with dask.config.set(scheduler="threads"):
        threaded = make().fit(Xd, yd)
    with Client(local_cluster) as client:
        with get_task_stream(client) as stream:
            clustered = make().fit(Xd, yd)
    workers = {t["worker"] for t in stream.data if str(t["key"]).startswith("('dmargin-")}
    assert workers and workers <= set(local_cluster.scheduler_info["workers"])
    for other in (threaded, clustered):
        np.testing.assert_array_equal(other.anchor_indices_, local.anchor_indices_)
        np.testing.assert_allclose(
            other.feature_importances_, local.feature_importances_, rtol=0, atol=1e-10
        )


def test_n_anchors_is_checked(data):
    X, y = data
    for bad in (0, -3, 1.5, 0.0, "all"):
        with pytest.raises(ValueError, match="n_anchors"):
            dmargin.ReliefF(n_anchors=bad).fit(X, y)


@pytest.mark.parametrize("diagonal", [False, True])
def test_quadratic_statistic_over_a_sample(data, diagonal, threaded):
    """IMMIGRATE's E-step with every row as a sampled anchor (ordered tiles) equals the
    symmetric-pair computation; a smaller sample is the same on numpy and dask rows."""
    X, y = data
    codes = _codes(y)
    rng = np.random.default_rng(2)
    if diagonal:
        U, lam = np.zeros((6, 0)), rng.random(6)
    else:
        W = rng.random((6, 6))
        lam, U = np.linalg.eigh(W @ W.T)
    weight = rng.random(len(y))
    rows = execution.prepare_rows(X, codes, 4)
    every = execution.Anchors(X, codes, np.arange(len(y)))
    want = quadratic.quad_statistic(rows, U, lam, 0.6, weight, terms.softmin_coef)
    got = quadratic.quad_statistic(rows, U, lam, 0.6, weight, terms.softmin_coef, anchors=every)
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-12 * np.abs(want[0]).max())
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    sample = sample_anchors(rows, 30, np.random.default_rng(0))
    local = quadratic.quad_statistic(
        rows, U, lam, 0.6, weight[sample.index], terms.softmin_coef, anchors=sample
    )
    blocks = execution.prepare_rows(
        da.from_array(X, chunks=(70, 6)), da.from_array(codes, chunks=70), 4
    )
    on_dask = quadratic.quad_statistic(
        blocks, U, lam, 0.6, weight[sample.index], terms.softmin_coef, anchors=sample
    )
    np.testing.assert_allclose(on_dask[0], local[0], rtol=0, atol=1e-12 * np.abs(local[0]).max())
    np.testing.assert_allclose(on_dask[1], local[1], rtol=1e-12)


def test_the_cli_passes_anchors(data, tmp_path):
    import pandas as pd

    from dmargin.cli import main

    X, y = data
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(6)]).assign(label=y)
    frame.to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "rank.csv"
    assert (
        main(
            [
                "select",
                str(tmp_path / "d.csv"),
                "--label",
                "label",
                "--method",
                "relieff",
                "--anchors",
                "40",
                "--random-state",
                "3",
                "--out",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    ranking = pd.read_csv(out)
    want = dmargin.ReliefF(n_anchors=40, random_state=3).fit(frame.drop(columns="label"), y)
    order = np.argsort(-want.feature_importances_, kind="stable")
    assert ranking["feature"].tolist() == [f"f{j}" for j in order]
    np.testing.assert_allclose(ranking["score"], want.feature_importances_[order], atol=1e-12)


def _anchor_weights(index, n):
    """A sample of anchors as sample weights of the full fit: N / m on the anchors, 0 elsewhere
    (an anchor with weight 0 contributes nothing; every row stays a candidate)."""
    d = np.zeros(n)
    d[index] = n / len(index)
    return d


@pytest.mark.parametrize("m", [12, 0.1])
def test_sampled_immigrate_equals_the_reference_with_anchor_weights(data, m):
    from tests import reference_immigrate as ref_imm

    X, y = data
    est = dmargin.Immigrate(max_iter=3, n_anchors=m, random_state=2).fit(X, y)
    d = _anchor_weights(est.anchor_indices_, len(y))
    want = ref_imm.immigrate(ref_imm.standard_scale(X), y, max_iter=3, tol=0, sample_weight=d)
    np.testing.assert_allclose(est.weight_matrix_, want["W"], rtol=0, atol=1e-10)


@pytest.mark.parametrize("m", [12, 0.1])
def test_sampled_im4e_equals_the_reference_with_anchor_weights(data, m):
    from tests import reference_immigrate as ref_imm

    X, y = data
    est = dmargin.IM4E(max_iter=3, n_anchors=m, random_state=2).fit(X, y)
    d = _anchor_weights(est.anchor_indices_, len(y))
    want = ref_imm.im4e(ref_imm.standard_scale(X), y, max_iter=3, tol=0, sample_weight=d)
    np.testing.assert_allclose(est.feature_importances_, want["w"], rtol=0, atol=1e-10)


@pytest.mark.parametrize(
    "make",
    [
        lambda: dmargin.Immigrate(max_iter=3, n_anchors=30, random_state=1),
        lambda: dmargin.IM4E(max_iter=3, n_anchors=30, random_state=1),
    ],
)
def test_sampled_immigrate_family_is_the_same_on_dask(data, make, threaded):
    X, y = data
    local = make().fit(X, y)
    blocks = make().fit(da.from_array(X, chunks=(60, 6)), da.from_array(y, chunks=60))
    np.testing.assert_array_equal(blocks.anchor_indices_, local.anchor_indices_)
    np.testing.assert_allclose(
        blocks.feature_importances_, local.feature_importances_, rtol=0, atol=1e-10
    )


class _HeldBlocks:
    """The most row blocks (arrays of ``shape``) dask's synchronous scheduler
    holds at once -- finished results and graph data -- over the computations
    run inside it."""

    def __init__(self, shape):
        from dask.callbacks import Callback

        self.shape, self.most = shape, 0
        self.callback = Callback(posttask=self._posttask)

    def _posttask(self, key, result, dsk, state, worker_id):
        held = sum(1 for v in state["cache"].values() if getattr(v, "shape", None) == self.shape)
        self.most = max(self.most, held)


@pytest.mark.parametrize("n_anchors,streams", [(40, True), (None, False)])
def test_sampled_relieff_streams_the_rows_instead_of_persisting_them(data, n_anchors, streams):
    # One pass over a sample of anchors needs each candidate block once: the
    # blocks go from their source (independent reads, as read_parquet's) through
    # the tiles and are released, so the workers never hold all of them and
    # memory does not grow with N.  Every row as an anchor reads each block
    # once per anchor block: the rows are persisted (held all at once).
    import dask

    X, y = data
    reads = [
        dask.delayed(np.array, pure=True)(X[s : s + 20], dask_key_name=f"read-{s}")
        for s in range(0, 240, 20)
    ]
    source = da.concatenate([da.from_delayed(r, shape=(20, 6), dtype=float) for r in reads])
    held = _HeldBlocks((20, 6))
    with dask.config.set(scheduler="sync"), held.callback:
        est = dmargin.ReliefF(n_anchors=n_anchors, random_state=0).fit(source, y)
    expected = dmargin.ReliefF(n_anchors=n_anchors, random_state=0).fit(X, y)
    np.testing.assert_allclose(
        est.feature_importances_, expected.feature_importances_, rtol=0, atol=1e-12
    )
    assert held.most <= 2 if streams else held.most == 12


@pytest.fixture(scope="module")
def wide():
    """2,400 rows of three classes, one of them 30 rows: enough rows for a pool."""
    rng = np.random.default_rng(5)
    y = rng.choice(np.array(["x", "y", "z"]), size=2400, p=[0.6, 0.3875, 0.0125])
    X = rng.random((2400, 5))
    X[:, 0] += (y == "y") * 0.4
    return X, y


def test_a_rows_key_depends_on_its_index_alone():
    keys = sampling.row_keys(12345, 0, 1000)
    np.testing.assert_array_equal(sampling.row_keys(12345, 300, 200), keys[300:500])
    assert len(np.unique(keys)) == 1000
    assert not np.array_equal(sampling.row_keys(12346, 0, 1000), keys)
    # Uniform: the top bits split the rows evenly (a binomial's 6 sigma).
    high = np.count_nonzero(sampling.row_keys(7, 0, 100_000) >= np.uint64(2**63))
    assert abs(high - 50_000) < 6 * np.sqrt(25_000)


def test_the_sample_is_each_classs_smallest_keys(wide):
    """The rule, brute force: class c's share[c] rows of smallest (key, index)."""
    X, y = wide
    codes = _codes(y)
    rng_seed = sampling.draw_seed(np.random.default_rng(9))
    got = sample_anchors(execution.prepare_rows(X, codes, 3), 100, seed=rng_seed)
    keys = sampling.row_keys(rng_seed, 0, len(y))
    share = sampling._stratified_share(np.bincount(codes), 100)
    want = np.sort(
        np.concatenate(
            [
                np.flatnonzero(codes == c)[np.argsort(keys[codes == c], kind="stable")[:s]]
                for c, s in enumerate(share)
            ]
        )
    )
    np.testing.assert_array_equal(got.index, want)
    np.testing.assert_array_equal(got.X, X[want])
    np.testing.assert_array_equal(got.codes, codes[want])
    # The same seed drawn from the same random_state: the same sample.
    again = sample_anchors(execution.prepare_rows(X, codes, 3), 100, np.random.default_rng(9))
    np.testing.assert_array_equal(again.index, want)


@pytest.mark.parametrize("starve", ["threshold", "threshold-and-smallest"])
def test_a_pool_that_cannot_tell_falls_back_to_the_same_sample(wide, monkeypatch, starve):
    X, y = wide
    codes = _codes(y)
    rows = execution.prepare_rows(
        da.from_array(X, chunks=(300, 5)), da.from_array(codes, chunks=300), 3
    )
    want = sample_anchors(execution.prepare_rows(X, codes, 3), 120, seed=4)
    calls = []
    smallest = sampling._block_smallest
    monkeypatch.setattr(sampling, "_block_smallest", lambda *a: calls.append(1) or smallest(*a))
    with dask.config.set(scheduler="sync"):
        assert not calls and sample_anchors(rows, 120, seed=4).index.tolist() == want.index.tolist()
        assert calls == []  # the pool held the sample
        # A pool of about 10 rows under the threshold: the large classes cannot be
        # read off it (and with one smallest key a block of three labels, nor the
        # small one, whose share is 2).
        plan = (2**64 // 240, 4096 if starve == "threshold" else 3)
        monkeypatch.setattr(sampling, "pool_plan", lambda m, n, b, a: plan)
        pools = [
            sampling.pool_chunk(X[s : s + 300], codes[s : s + 300], s, 4, *plan)
            for s in range(0, 2400, 300)
        ]
        assert sampling.resolve_pool(pools, lambda c: c, np.bincount(codes), 120, *plan) is None
        got = sample_anchors(rows, 120, seed=4)
    assert len(calls) == 8  # each block's smallest keys
    np.testing.assert_array_equal(got.index, want.index)
    np.testing.assert_array_equal(got.X, want.X)
    np.testing.assert_array_equal(got.codes, want.codes)


@pytest.mark.parametrize(
    "make",
    [
        lambda: dmargin.ReliefF(n_anchors=150, random_state=3),
        lambda: dmargin.ReliefF(n_anchors=0.05, random_state=3, scale=None, n_neighbors=3),
    ],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_streamed_fit_draws_its_anchors_in_the_scaling_pass(wide, make, dtype):
    """Streamed rows are read twice, not three times: the scaling pass draws each
    block's pool, and the anchors read off it are the in-process sample, scaled
    bit for bit as the rows."""
    import dask

    X, y = wide
    X = X.astype(dtype)
    reads = []

    def read(s):
        reads.append(s)
        return X[s : s + 300]

    blocks = [
        dask.delayed(read, pure=True)(s, dask_key_name=f"read-{s}") for s in range(0, 2400, 300)
    ]
    source = da.concatenate([da.from_delayed(b, shape=(300, 5), dtype=dtype) for b in blocks])
    with dask.config.set(scheduler="sync"):
        start = dmargin._start.start_fit(make(), source, da.from_array(y, chunks=300))
        assert start.rows.streamed and start.rows.draw.anchors is not None
        assert len(reads) == 8  # the scaling pass, the pool with it
        local = dmargin._start.start_fit(make(), X, y)
        want = dmargin._base.anchors_for(make(), local.rows)
        got = dmargin._base.anchors_for(make(), start.rows)
        assert len(reads) == 8  # no pass of its own
        np.testing.assert_array_equal(got.index, want.index)
        np.testing.assert_array_equal(got.X, want.X)
        np.testing.assert_array_equal(got.codes, want.codes)
        reads.clear()
        est = make().fit(source, da.from_array(y, chunks=300))
    assert len(reads) == 16  # the scaling pass and the tiles' pass
    np.testing.assert_array_equal(est.feature_importances_, make().fit(X, y).feature_importances_)


def test_wide_rows_offer_fewer_smallest_keys():
    """The pool's smallest keys are bounded in bytes too (64 MiB of float64 rows), and
    so is the pool (512 MiB)."""
    narrow = sampling.pool_plan(1000, 10**6, 10, 50)
    wide = sampling.pool_plan(1000, 10**6, 10, 20_000)
    assert narrow[0] == wide[0] and narrow[1] == 409
    assert wide[1] == sampling.POOL_SMALLEST_BYTES // (8 * 20_000) // 10 == 41
    assert sampling.pool_plan(1000, 3000, 10, 50) is None  # a pool would be most rows
    # A pool of 2,285 rows of 100,000 features would be 1.7 GiB: the two small passes.
    assert sampling.pool_plan(1000, 10**6, 10, 25_000) is not None
    assert sampling.pool_plan(1000, 10**6, 10, 100_000) is None
