"""Online I-RELIEF at scale: one reference sample held across partial_fit chunks,
Parquet row groups streamed one at a time, and fit on dask input in bounded memory."""

import dask
import dask.array as da
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dask.callbacks import Callback

from dmargin import OnlineIRelief
from dmargin.io._parquet import iter_parquet, read_parquet
from dmargin.io._training import iter_row_blocks
from dmargin.irelief import _online

try:  # tests/ as a package
    from . import reference
except ImportError:  # tests/ on sys.path
    import reference


def _data(n=600, n_features=5, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    X = rng.normal(size=(n, n_features))
    X[:, 1] += 1.5 * y
    X[:, 3] -= 1.0 * (y == 1)
    return X, y


def _write_parquet(path, X, y, row_group_size):
    table = pa.table({**{f"f{j}": X[:, j] for j in range(X.shape[1])}, "label": y})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


# ---------------------------------------------------------------------------
# set_reference
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("shuffle", [True, False])
def test_fixed_reference_stream_equals_fit(shuffle):
    """partial_fit over fit's blocks, with fit's reference rows at their
    positions and the same generator, gives fit's weights bit for bit."""
    X, y = _data()
    params = dict(scale=None, block_size=100, shuffle=shuffle, sigma=1.0, a=2.0)
    fitted = OnlineIRelief(reference_size=50, n_passes=1, tol=0, random_state=0, **params).fit(X, y)

    rng = np.random.default_rng(0)  # fit draws the sample first, then the permutations
    idx = np.sort(rng.choice(len(y), size=50, replace=False))
    stream = OnlineIRelief(random_state=rng, **params).set_reference(X[idx], y[idx], index=idx)
    for start in range(0, len(y), 100):
        stream.partial_fit(X[start : start + 100], y[start : start + 100], classes=[0, 1])

    np.testing.assert_array_equal(stream.feature_importances_, fitted.feature_importances_)
    np.testing.assert_array_equal(stream.nu_, fitted.nu_)
    assert stream.n_steps_ == fitted.n_steps_ == len(y)


@pytest.mark.parametrize("scale", [None, "minmax"])
def test_fixed_reference_matches_brute_force(scale):
    """An outside reference sample (index=None): every anchor's candidates are
    exactly those rows, scaled with the first chunk's ranges; three classes,
    uneven chunks, against reference.online_irelief."""
    X, y = _data(n=300, n_classes=3, seed=1)
    Xref, yref = _data(n=40, n_classes=3, seed=2)
    est = OnlineIRelief(scale=scale, shuffle=False, sigma=0.7, a=1.0)
    est.set_reference(Xref, yref)  # before the first chunk: scaled when the ranges are known
    cuts = [0, 37, 150, 152, 300]
    for a, b in zip(cuts[:-1], cuts[1:]):
        est.partial_fit(X[a:b], y[a:b], classes=[0, 1, 2])

    if scale == "minmax":
        lo, hi = X[:37].min(axis=0), X[:37].max(axis=0)
        Xs, Xrs = (X - lo) / (hi - lo), (Xref - lo) / (hi - lo)
    else:
        Xs, Xrs = X, Xref
    both = np.vstack([Xs, Xrs])
    expected = reference.online_irelief(
        both,
        np.concatenate([y, yref]),
        order=range(300),
        sigma=0.7,
        a=1.0,
        candidates=range(300, 340),
    )
    np.testing.assert_allclose(est.feature_importances_, expected["w"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(est.nu_, expected["nu"], rtol=0, atol=1e-10)


def test_reference_position_excludes_the_anchor():
    """With index=, a stream row in the reference is not its own candidate;
    without it, the same row is (distance 0), and the weights differ."""
    X, y = _data(n=200)
    idx = np.arange(0, 200, 5)
    excluded = OnlineIRelief(scale=None, shuffle=False).set_reference(X[idx], y[idx], index=idx)
    included = OnlineIRelief(scale=None, shuffle=False).set_reference(X[idx], y[idx])
    for est in (excluded, included):
        est.partial_fit(X[:100], y[:100]).partial_fit(X[100:], y[100:])
    expected = reference.online_irelief(X, y, order=range(200), candidates=idx)
    np.testing.assert_allclose(excluded.feature_importances_, expected["w"], rtol=0, atol=1e-10)
    assert not np.allclose(included.feature_importances_, expected["w"], rtol=0, atol=1e-6)


def test_set_reference_between_chunks_and_fit_discards_it():
    X, y = _data(n=300)
    est = OnlineIRelief(scale=None, shuffle=False).partial_fit(X[:100], y[:100])
    est.set_reference(X[250:], y[250:])
    est.partial_fit(X[100:250], y[100:250])
    # the first chunk's anchors saw the chunk, the second chunk's only the 50 reference rows
    full = reference.online_irelief(X[:100], y[:100], order=range(100))
    nu, w = full["nu"], full["w"]
    for t, n in enumerate(range(100, 250), start=101):
        pi = reference._anchor_statistic(
            X, y, n, w, 2.0, list(range(250, 300)), "margin", True, reference._class_priors(y[:100])
        )
        nu = nu + (pi - nu) / (10.0 * t + 1.0)
        if np.any(nu > 0):
            w = reference._normalise_positive_part(nu)
    np.testing.assert_allclose(est.feature_importances_, w, rtol=0, atol=1e-10)

    est.fit(X, y)  # fit draws its own candidates: the held sample is gone
    assert est._fixed_ref is None  # the held reference rows have no public attribute
    again = OnlineIRelief(scale=None, shuffle=False).fit(X, y)
    np.testing.assert_array_equal(est.feature_importances_, again.feature_importances_)


def test_set_reference_errors():
    X, y = _data(n=100)
    est = OnlineIRelief().partial_fit(X, y)
    with pytest.raises(ValueError, match="labels \\[7\\] that are not among the stream's classes"):
        est.set_reference(X[:10], np.full(10, 7))
    with pytest.raises(ValueError, match="features"):
        est.set_reference(X[:10, :3], y[:10])
    with pytest.raises(ValueError, match="distinct nonnegative integer"):
        est.set_reference(X[:10], y[:10], index=np.zeros(10, dtype=int))
    with pytest.raises(ValueError, match="distinct nonnegative integer"):
        est.set_reference(X[:10], y[:10], index=np.arange(5))
    with pytest.raises(ValueError, match="infinite"):  # NaN is a missing value
        bad = X[:10].copy()
        bad[0, 0] = np.inf
        est.set_reference(bad, y[:10])
    # a pending reference is checked against the classes of the first chunk
    pending = OnlineIRelief().set_reference(X[:10], np.full(10, 7))
    with pytest.raises(ValueError, match="pass classes="):
        pending.partial_fit(X, y)


def test_resume_with_reference_is_exact(tmp_path):
    X, y = _data(n=500)
    rng = np.random.default_rng(4)
    idx = np.sort(rng.choice(500, size=60, replace=False))
    chunks = [slice(i, i + 100) for i in range(0, 500, 100)]
    params = dict(random_state=11, a=1.0)

    whole = OnlineIRelief(**params).set_reference(X[idx], y[idx], index=idx)
    for c in chunks:
        whole.partial_fit(X[c], y[c])

    first = OnlineIRelief(**params).set_reference(X[idx], y[idx], index=idx)
    for c in chunks[:2]:
        first.partial_fit(X[c], y[c])
    first.save_state(tmp_path / "state.npz")
    with np.load(tmp_path / "state.npz") as f:
        assert f["ref_X"].shape == (60, 5)
        np.testing.assert_array_equal(f["ref_index"], idx)
    resumed = OnlineIRelief.load_state(tmp_path / "state.npz")
    for c in chunks[2:]:
        resumed.partial_fit(X[c], y[c])
    np.testing.assert_array_equal(resumed.feature_importances_, whole.feature_importances_)
    np.testing.assert_array_equal(resumed.nu_, whole.nu_)

    # without a reference the state file says so and the stream resumes on chunk candidates
    plain = OnlineIRelief(**params).partial_fit(X[:100], y[:100])
    plain.save_state(tmp_path / "plain.npz")
    assert OnlineIRelief.load_state(tmp_path / "plain.npz")._fixed_ref is None


# ---------------------------------------------------------------------------
# iter_parquet
# ---------------------------------------------------------------------------


def test_iter_parquet_row_groups_and_batches(tmp_path):
    X, y = _data(n=1000)
    labels = np.asarray(["no", "yes"])[y]
    path = str(tmp_path / "d.parquet")
    _write_parquet(path, X, labels, row_group_size=300)
    groups = list(iter_parquet(path, "label"))
    assert [g[0].shape[0] for g in groups] == [300, 300, 300, 100]
    Xd, yd = read_parquet(path, "label")
    np.testing.assert_array_equal(np.vstack([g[0] for g in groups]), Xd.compute())
    assert np.concatenate([g[1] for g in groups]).tolist() == yd.compute().tolist()

    batches = list(iter_parquet(path, "label", ["f3", "f1"], batch_rows=128))
    assert [b[0].shape for b in batches[:-1]] == [(128, 2)] * 7
    assert batches[-1][0].shape == (1000 - 7 * 128, 2)
    np.testing.assert_array_equal(np.vstack([b[0] for b in batches]), X[:, [3, 1]])
    assert np.concatenate([b[1] for b in batches]).tolist() == labels.tolist()

    # Bad arguments fail at the call, before anything is read.
    with pytest.raises(ValueError, match="batch_rows must be a positive integer"):
        iter_parquet(path, "label", batch_rows=0)
    with pytest.raises(ValueError, match="missing_label='nope' is not valid"):
        iter_parquet(path, "label", missing_label="nope")
    with pytest.raises(ValueError, match="not in the Parquet dataset"):
        iter_parquet(path, "nope")


@pytest.mark.parametrize("batch_rows", [None, 64])
def test_iter_parquet_filters_and_dropped_labels_equal_read_parquet(tmp_path, batch_rows):
    """filters= and missing_label='drop' while streaming: the rows read_parquet keeps,
    in its order; a row group emptied by the filter is skipped."""
    X, y = _data(n=1000)
    labels = np.asarray(["no", "yes"])[y].astype(object)
    labels[::7] = None
    X[250:500, 0] = -10.0  # the filter empties the second row group
    X[600:610, 0] = -10.0  # and removes ten rows of the third
    path = str(tmp_path / "d.parquet")
    _write_parquet(path, X, labels, row_group_size=250)
    filters = [("f0", ">", -5.0)]
    Xd, yd = read_parquet(path, "label", filters=filters, missing_label="drop")
    chunks = list(
        iter_parquet(path, "label", filters=filters, missing_label="drop", batch_rows=batch_rows)
    )
    np.testing.assert_array_equal(np.vstack([c[0] for c in chunks]), Xd.compute())
    assert np.concatenate([c[1] for c in chunks]).tolist() == yd.compute().tolist()
    assert None not in np.concatenate([c[1] for c in chunks]).tolist()
    if batch_rows is None:
        assert len(chunks) == 3
    else:
        assert all(len(c[1]) == batch_rows for c in chunks[:-1])
    kept = np.array([v is not None for v in labels])
    kept[250:500] = kept[600:610] = False
    np.testing.assert_array_equal(Xd.compute(), X[kept])

    with pytest.raises(ValueError, match="no rows left after filtering"):
        list(iter_parquet(path, "label", filters=[("f1", ">", 1e9)]))


def test_parquet_stream_with_reference_holds_bounded_state(tmp_path):
    """partial_fit over iter_parquet's row groups with one reference sample:
    the estimator holds M reference rows and vectors of length A, nothing
    that grows with the stream; the result equals the in-memory stream."""
    X, y = _data(n=2000)
    path = str(tmp_path / "d.parquet")
    _write_parquet(path, X, y, row_group_size=250)
    idx = np.sort(np.random.default_rng(0).choice(2000, size=80, replace=False))
    Xd, yd = read_parquet(path, "label")
    est = OnlineIRelief(random_state=0).set_reference(Xd[idx], yd[idx], index=idx)
    for Xc, yc in iter_parquet(path, "label"):
        est.partial_fit(Xc, yc, classes=[0, 1])
    sizes = {k: np.shape(v) for k, v in vars(est).items() if isinstance(v, np.ndarray)}
    assert max(s[0] for s in sizes.values() if s) <= 80, sizes
    assert [len(a) for a in est._fixed_ref] == [80, 80, 80]  # held rows: private state
    memory = OnlineIRelief(random_state=0).set_reference(X[idx], y[idx], index=idx)
    for start in range(0, 2000, 250):
        memory.partial_fit(X[start : start + 250], y[start : start + 250], classes=[0, 1])
    np.testing.assert_array_equal(est.feature_importances_, memory.feature_importances_)
    assert est.n_steps_ == 2000


# ---------------------------------------------------------------------------
# fit on dask input from read_parquet
# ---------------------------------------------------------------------------


class _TaskSizes(Callback):
    """Rows of every array a dask task returns, and how often each Parquet block is read."""

    def __init__(self):
        super().__init__()
        self.max_rows = 0
        self.reads = {}

    def _posttask(self, key, result, dsk, state, worker_id):
        name = key[0] if isinstance(key, tuple) else key
        if str(name).startswith("dmargin-read-parquet"):
            self.reads[name] = self.reads.get(name, 0) + 1
        for part in result if isinstance(result, tuple) else (result,):
            if isinstance(part, np.ndarray) and part.ndim >= 1:
                self.max_rows = max(self.max_rows, part.shape[0])


@pytest.mark.parametrize("block_size", [150, 700])
def test_fit_on_parquet_never_holds_all_rows(tmp_path, monkeypatch, block_size):
    """Each row group is read once per pass (plus the scaling and sampling
    passes); no task returns and no kernel call receives more than a row
    group's / block's rows; the weights equal the in-memory fit."""
    X, y = _data(n=6000)
    path = str(tmp_path / "d.parquet")
    _write_parquet(path, X, y, row_group_size=500)
    kernel_rows = []
    original = _online.online_irelief_steps

    def spy(Xa, ia, ya, order, Xc, *args):
        kernel_rows.append((Xa.shape[0], Xc.shape[0]))
        return original(Xa, ia, ya, order, Xc, *args)

    monkeypatch.setattr(_online, "online_irelief_steps", spy)
    params = dict(reference_size=64, block_size=block_size, n_passes=2, tol=0, random_state=5)
    Xd, yd = read_parquet(path, "label")
    sizes = _TaskSizes()
    with dask.config.set(scheduler="threads"), sizes:
        est = OnlineIRelief(**params).fit(Xd, yd)
    assert sizes.max_rows <= 500
    assert len(sizes.reads) == 12 and set(sizes.reads.values()) == {
        2 + 2
    }  # stats, sample, 2 passes
    assert max(r for r, _ in kernel_rows) <= block_size
    assert {c for _, c in kernel_rows} == {64}

    kernel_rows.clear()
    in_memory = OnlineIRelief(**params).fit(X, y)
    np.testing.assert_array_equal(est.feature_importances_, in_memory.feature_importances_)


def test_row_blocks_cut_dask_chunks_like_numpy():
    """iter_row_blocks gives the same blocks from any dask chunking (empty chunks too)."""
    X, y = _data(n=400)
    bounds = [(s, min(s + 70, 400)) for s in range(0, 400, 70)]
    expected = list(iter_row_blocks(X, y, bounds))
    for rows in [400, 33, (100, 0, 50, 250)]:
        got = list(
            iter_row_blocks(
                da.from_array(X, chunks=(rows, 5)), da.from_array(y, chunks=(rows,)), bounds
            )
        )
        assert [g[0] for g in got] == [e[0] for e in expected]
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g[1], e[1])
            np.testing.assert_array_equal(g[2], e[2])


def test_small_numpy_input_is_not_cut_into_tiny_tiles():
    """Numpy rows sent to a cluster: no tile task below MIN_TILE_WORK pair-features
    (N = 200 is one block: ~20 ms per iteration instead of ~130 ms for 64 tiny
    tiles), while N = 20,000 keeps its 8 blocks."""
    from dmargin.engine import execution

    for n, blocks in [(200, 1), (1_500, 2), (20_000, 8)]:
        X = np.zeros((n, 50))
        rows = execution.prepare_rows(X, np.zeros(n, dtype=np.int64), 2, use_dask=True)
        assert len(rows.bounds) == blocks, n
        sizes = [b - a for a, b in rows.bounds]
        assert min(sizes) ** 2 * 50 >= execution.MIN_TILE_WORK or len(sizes) == 1
